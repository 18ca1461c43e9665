"""A real HTTP server for a fake Provider written as ``handler(httpx.Request) -> Response``.

Export runs make their Provider requests from their worker process, so a fake Provider
must be a real server on a real port. This one runs in the test's trio loop (the handler
may be sync or async and may touch the test's state), speaks HTTP/1.1 with h11 (the
protocol library under httpx), and writes what the handler returns: an
:class:`httpx.Response` whose content is bytes, or an (async) iterator of byte chunks,
sent as they come (chunked), so a test can drip a body or stall it. A 204 or 304 answer is
sent without a body, as HTTP requires.

:func:`gated_demo_table` is a handler for tests whose property needs an export still
running at some moment (a restart, a SIGTERM, a progress reading): the demo Provider's
table, each batch answered only when the test lets it, so the test holds on a condition
rather than on the machine being slow enough.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import h11
import httpx
import msgspec
import trio

from actors.core.provider.contract import response_envelope
from web.demo_provider.app import batch_answer
from web.demo_provider.data import demo_registry_yaml

#: ``provider-service`` of the registry :func:`gated_demo_registry` writes
GATED_SERVICE = "gated-service"

Handler = Callable[[httpx.Request], "httpx.Response | Awaitable[httpx.Response]"]


@contextlib.asynccontextmanager
async def serve_provider(handler: Handler) -> AsyncIterator[str]:
    """Serve ``handler`` on 127.0.0.1 (a free port) until the block ends.

    Yields:
        The base URL, ``http://127.0.0.1:<port>``.
    """
    try:
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(
                functools.partial(trio.serve_tcp, host="127.0.0.1"),
                lambda stream: _serve(stream, handler),
                0,
            )
            port = listeners[0].socket.getsockname()[1]
            yield f"http://127.0.0.1:{port}"
            nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # The block's own error, as the test raised or expects it, not wrapped by the
        # server's nursery.
        if len(group.exceptions) == 1:
            raise group.exceptions[0]  # noqa: B904
        raise


async def _serve(stream: trio.SocketStream, handler: Handler) -> None:
    conn = h11.Connection(h11.SERVER)
    try:
        while True:
            request = await _read_request(stream, conn)
            if request is None:
                return
            answer: Any = handler(request)
            if inspect.isawaitable(answer):
                answer = await answer
            await _write_response(stream, conn, answer)
            if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()
    except (trio.BrokenResourceError, trio.ClosedResourceError, h11.RemoteProtocolError):
        return  # the client went away (a timeout, a limit hit): nothing to answer
    finally:
        await stream.aclose()


async def _read_request(stream: trio.SocketStream, conn: h11.Connection) -> httpx.Request | None:
    head: h11.Request | None = None
    body = bytearray()
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await stream.receive_some(65536))
        elif isinstance(event, h11.Request):
            head = event
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            assert head is not None
            headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in head.headers]
            url = "http://provider.test" + head.target.decode("latin-1")
            return httpx.Request(head.method.decode(), url, headers=headers, content=bytes(body))
        elif isinstance(event, h11.ConnectionClosed):
            return None


async def _write_response(
    stream: trio.SocketStream, conn: h11.Connection, response: httpx.Response
) -> None:
    stream_body = response.stream
    headers = [
        (k, v)
        for k, v in response.headers.multi_items()
        if k.lower() not in ("transfer-encoding", "connection")
    ]
    chunked = "content-length" not in response.headers
    if chunked:
        headers.append(("Transfer-Encoding", "chunked"))
    if response.status_code in (204, 304):
        # No body, whatever the handler gave, as a real server: the client reads none.
        framing = ("content-length", "transfer-encoding")
        bare = [(k, v) for k, v in headers if k.lower() not in framing]
        await stream.send_all(
            conn.send(h11.Response(status_code=response.status_code, headers=bare))
        )
        await stream.send_all(conn.send(h11.EndOfMessage()))
        return
    head = h11.Response(status_code=response.status_code, headers=headers)
    await stream.send_all(conn.send(head))
    if isinstance(stream_body, httpx.AsyncByteStream):
        chunks = aiter(stream_body)
        try:
            async for chunk in chunks:
                await stream.send_all(conn.send(h11.Data(data=chunk)))
        finally:
            # The client may leave mid-body (a limit, a timeout): close httpx's iterator and
            # the handler's own under it now, not when the garbage collector finds them.
            await _aclose(chunks)
            await _aclose(getattr(stream_body, "_stream", None))
    else:
        for chunk in stream_body:
            await stream.send_all(conn.send(h11.Data(data=chunk)))
            await trio.lowlevel.checkpoint()
    await stream.send_all(conn.send(h11.EndOfMessage()))


async def _aclose(iterator: object) -> None:
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        await aclose()


#: A batch request's decoded body (the Provider contract's batch request object).
BatchBody = dict[str, Any]


def gated_demo_table(gate: Callable[[BatchBody], Awaitable[None]]) -> Handler:
    """A handler serving the demo Provider's ``CUSTOMER_LIST`` table
    (:func:`web.demo_provider.app.batch_answer`: the same rows, snapshot tokens and totals),
    that awaits ``gate(body)`` before it answers each batch.

    ``body["cursor"]`` is ``None`` for a run's first batch, else the last customer id of
    the rows before it (with no filter: the rows already served);
    ``body["parameters"]["rowCount"]`` tells the exports of a test apart. The token header
    is not checked.
    """
    secret = b"gated-demo-provider-" + b"s" * 16

    async def handle(request: httpx.Request) -> httpx.Response:
        body = msgspec.json.decode(request.content)
        await gate(body)
        answer = response_envelope("200", "success", batch_answer(body, secret, 1000))
        return httpx.Response(
            200, content=msgspec.json.encode(answer), headers={"Content-Type": "application/json"}
        )

    return handle


def gated_demo_registry(batch_size: int) -> str:
    """A registry (YAML text) whose ``CUSTOMER_LIST`` is served by :data:`GATED_SERVICE`:
    point ``FILE_EXPORT_PROVIDER_URLS`` at :func:`serve_provider` of
    :func:`gated_demo_table`."""
    return demo_registry_yaml(batch_size=batch_size, service=GATED_SERVICE)


def cursor_rows(body: BatchBody) -> int:
    """Rows served to the run before this batch request (its cursor; 0 for the first)."""
    cursor = body.get("cursor")
    return 0 if cursor is None else int(cursor)


def row_count(body: BatchBody) -> int:
    """The ``rowCount`` parameter of the export the request belongs to."""
    return int(body["parameters"]["rowCount"])
