"""Provider client (§10.1, §10.2, §9.1, §12, §14): error mapping, limits, cursor loop.

Each request goes the way ``export-center provider-check`` sends it: the client builds it
and the service's one HTTP client (``actors/pipeline/provider_http.py``, urllib3) sends it
from a trio thread to a real HTTP server on port 0 (``tests/provider_server.py``), whose
fake Provider is a ``handler(httpx.Request) -> httpx.Response`` that may stream, drip or
stall a body. urllib3's own errors that a real server cannot produce on demand (a connect
timeout, a reset) come from a stand-in pool (:class:`RaisingPool`). One integration test
runs the real demo Provider behind hypercorn. An export run sends the same requests from
its worker process: ``test_provider_http.py``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gzip
import itertools
import json
import logging
import socket
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

import httpx
import hypercorn.config
import hypercorn.trio
import pytest
import trio
import urllib3
from quart_trio import QuartTrio
from urllib3.exceptions import (
    ConnectTimeoutError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)

from actors.core.errors import (
    CursorNotAdvancingError,
    LimitExceededError,
    PermanentExportError,
    ProviderContractError,
    ProviderUnavailableError,
)
from actors.core.models import AppCode, ColumnType, ExportDefinition, ProviderBatch
from actors.core.provider.request import BatchRequest
from actors.core.tracing import parse_traceparent
from actors.pipeline.cursor_loop import iterate_batches
from actors.pipeline.provider_client import ProviderClient
from tests.provider_server import Handler, serve_provider
from web.demo_provider.app import create_demo_provider_blueprint
from web.demo_provider.data import DEMO_COLUMNS, DEMO_SCHEMA_HASH

TOKEN = "internal-token"
SERVICE = "customer-service"
BASE_URL = "http://provider.test"
DEFINITION = ExportDefinition(
    export_type="CUSTOMER_LIST",
    provider_service=SERVICE,
    provider_path="/internal/exports/v1/CUSTOMER_LIST/batches",
    required_permission="platform:customer:export",
    app_scope=AppCode.PLATFORM,
    batch_size=2,
)
COLUMNS = [
    {"key": "id", "title": "ID", "type": "INTEGER", "width": 10},
    {"key": "name", "title": "Name", "type": "STRING"},
]
TASK = {
    "task_id": 190000000000000001,
    "tenant_id": 0,
    "app_code": "PLATFORM",
    "requested_by": 1900000000000000009,
    "dispatch_version": 1,
    "parameters": {"status": "ACTIVE"},
}


class RecordingObserver:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, float, bool]] = []

    def observe_request(self, service: str, export_type: str, seconds: float, ok: bool) -> None:
        self.calls.append((service, export_type, seconds, ok))


def envelope(data: Any, code: str = "200", message: str = "success") -> dict[str, Any]:
    return {"code": code, "message": message, "data": data}


def batch_data(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "schemaVersion": 1,
        "schemaHash": "sha256:abc",
        "snapshotToken": "snap-1",
        "columns": COLUMNS,
        "rows": [{"id": 1, "name": "a"}],
        "nextCursor": "1",
        "hasMore": False,
        "totalRows": 1,
    }
    data.update(overrides)
    return data


@contextlib.asynccontextmanager
async def serving(handler: Handler, **kwargs: Any) -> AsyncIterator[ProviderClient]:
    """A real server for ``handler`` and a client pointing at it (no worker)."""
    async with serve_provider(handler) as url:
        client = ProviderClient({SERVICE: url}, TOKEN, **kwargs)
        try:
            yield client
        finally:
            await client.aclose()


def make_request(**overrides: Any) -> BatchRequest:
    fields: dict[str, Any] = {**TASK, "cursor": None, "snapshot_token": None, "limit": 2}
    fields.update(overrides)
    return BatchRequest(**fields)


def answering(data: Any, status: int = 200) -> Handler:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json=data)

    return handler


async def fetch(handler: Handler, **kwargs: Any) -> ProviderBatch:
    async with serving(handler, **kwargs) as client:
        batch: ProviderBatch = await client.fetch_batch(DEFINITION, make_request())
        return batch


class FakeResponse:
    """urllib3's response as far as ``provider_http`` reads it: a status, headers and the
    body's chunks, counted as they are pulled."""

    def __init__(
        self, status: int, chunks: Iterable[bytes], headers: dict[str, str] | None = None
    ) -> None:
        self.status = status
        self.headers = urllib3.HTTPHeaderDict(headers or {})
        self._chunks = chunks
        self.pulled = 0
        self.closed = False

    def stream(self, amt: int, decode_content: bool = True) -> Iterator[bytes]:
        for chunk in self._chunks:
            self.pulled += 1
            yield chunk

    def close(self) -> None:
        self.closed = True

    def release_conn(self) -> None:
        pass


class FakePool:
    """Stands in for the urllib3 pool (what a real server cannot do on demand): records
    each request's arguments, then raises ``answer`` or returns it."""

    def __init__(self, answer: BaseException | FakeResponse) -> None:
        self.answer = answer
        self.calls: list[dict[str, Any]] = []

    def request(self, method: str, url: str, **kwargs: Any) -> FakeResponse:
        self.calls.append({"method": method, "url": url, **kwargs})
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer

    def clear(self) -> None:
        pass


async def fetch_through(pool: FakePool, base_url: str = BASE_URL, **kwargs: Any) -> ProviderBatch:
    client = ProviderClient({SERVICE: base_url}, TOKEN, pool=pool, **kwargs)
    batch: ProviderBatch = await client.fetch_batch(DEFINITION, make_request())
    return batch


def refused() -> NewConnectionError:
    """urllib3's error for a refused connection, with the socket error under it."""
    error = NewConnectionError(None, "Failed to establish a new connection: [Errno 111] ...")
    error.__cause__ = ConnectionRefusedError(111, "Connection refused")
    return error


#: urllib3's transport errors and the message each becomes (§9.1: all transient).
TRANSPORT_ERRORS: list[tuple[BaseException, str]] = [
    (ConnectTimeoutError(None, "timed out"), f"provider {SERVICE} connect timeout (3 s)"),
    (
        ReadTimeoutError(None, None, "Read timed out."),
        f"provider {SERVICE} read timeout (15 s)",
    ),
    (refused(), f"provider {SERVICE} unreachable: ConnectError: [Errno 111] Connection refused"),
    (
        ProtocolError("Connection aborted.", ConnectionResetError(104, "Connection reset")),
        f"provider {SERVICE} unreachable: ConnectionResetError: [Errno 104] Connection reset",
    ),
    # Sending the request timed out: urllib3 sends under the connect timeout.
    (
        ProtocolError("Connection aborted.", TimeoutError("timed out")),
        f"provider {SERVICE} unreachable: TimeoutError: timed out",
    ),
    (
        ProtocolError("Response ended prematurely"),
        f"provider {SERVICE} unreachable: ProtocolError: Response ended prematurely",
    ),
]
TRANSPORT_ERROR_IDS = ["connect-timeout", "read-timeout", "refused", "reset", "send-timeout", "eof"]


# --- one request: success and request shape ------------------------------------------------


async def test_fetch_batch_posts_contract_body_with_service_token() -> None:
    """The body is §10.1 camelCase with 64-bit ids as strings; the internal token is sent."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=envelope(batch_data()))

    batch = await fetch(handler)

    (request,) = seen
    assert request.method == "POST"
    assert str(request.url) == BASE_URL + DEFINITION.provider_path
    assert request.headers["X-Internal-Service-Token"] == TOKEN
    assert json.loads(request.content) == {
        "taskId": "190000000000000001",
        "tenantId": "0",
        "appCode": "PLATFORM",
        "requestedBy": "1900000000000000009",
        "dispatchVersion": 1,
        "parameters": {"status": "ACTIVE"},
        "cursor": None,
        "snapshotToken": None,
        "limit": 2,
    }
    assert batch.schema_hash == "sha256:abc"
    assert batch.snapshot_token == "snap-1"
    assert batch.columns is not None
    assert [(c.key, c.type, c.width) for c in batch.columns] == [
        ("id", ColumnType.INTEGER, 10),
        ("name", ColumnType.STRING, None),
    ]
    assert batch.rows == [{"id": 1, "name": "a"}]
    assert (batch.next_cursor, batch.has_more, batch.total_rows) == ("1", False, 1)


async def test_base_url_is_read_at_call_time() -> None:
    """A live mapping filled after construction (the server binds later) is honoured."""
    urls: dict[str, str] = {}
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, json=envelope(batch_data()))

    client = ProviderClient(urls, TOKEN)
    with pytest.raises(ProviderUnavailableError, match="no base URL"):
        await client.fetch_batch(DEFINITION, make_request())
    async with serve_provider(handler) as url:
        urls[SERVICE] = url + "/"  # a trailing slash is not doubled
        await client.fetch_batch(DEFINITION, make_request())
    # The server writes every URL it receives as http://provider.test + the target.
    assert seen == ["http://provider.test" + DEFINITION.provider_path]


@pytest.mark.parametrize(
    ("field", "value"),
    [("tenant_id", None), ("app_code", ""), ("app_code", None), ("requested_by", None)],
)
async def test_missing_tenant_field_raises_before_sending(field: str, value: Any) -> None:
    """§19.1 "Provider 客户端：租户字段必填": no request leaves without tenant fields."""
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=envelope(batch_data()))

    with pytest.raises(ValueError, match="required"):
        async with serving(handler) as client:
            await client.fetch_batch(DEFINITION, make_request(**{field: value}))
    assert sent == []


async def test_unserialisable_parameters_raise_before_sending() -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=envelope(batch_data()))

    request = make_request(parameters={"when": object(), "n": float("inf")})
    with pytest.raises(PermanentExportError, match="JSON"):
        async with serving(handler) as client:
            await client.fetch_batch(DEFINITION, request)
    assert sent == []


async def test_observer_sees_every_request_with_outcome() -> None:
    observer = RecordingObserver()
    await fetch(answering(envelope(batch_data())), observer=observer)
    with pytest.raises(ProviderUnavailableError):
        await fetch(answering({}, status=503), observer=observer)
    assert [(s, t, ok) for s, t, _, ok in observer.calls] == [
        (SERVICE, "CUSTOMER_LIST", True),
        (SERVICE, "CUSTOMER_LIST", False),
    ]
    assert all(seconds >= 0 for _, _, seconds, _ in observer.calls)


# --- transport and HTTP status mapping (§9.1) --------------------------------------------


@pytest.mark.parametrize("status", [500, 502, 503, 504, 429])
async def test_5xx_and_429_are_provider_unavailable(status: int) -> None:
    with pytest.raises(ProviderUnavailableError, match=f"HTTP {status}"):
        await fetch(answering({}, status=status))


@pytest.mark.parametrize(("error", "message"), TRANSPORT_ERRORS, ids=TRANSPORT_ERROR_IDS)
async def test_timeouts_and_transport_errors_are_provider_unavailable(
    error: BaseException, message: str
) -> None:
    """§19.1 "Provider 客户端：超时判临时失败" (§14: connect 3 s / read 15 s)."""
    with pytest.raises(ProviderUnavailableError) as info:
        await fetch_through(FakePool(error))
    assert str(info.value) == message
    assert info.value.__cause__ is error


async def test_a_silent_provider_hits_the_read_timeout() -> None:
    """No answer at all after the request: the read timeout, transient."""

    async def silent(request: httpx.Request) -> httpx.Response:
        await trio.sleep_forever()
        raise AssertionError

    with pytest.raises(ProviderUnavailableError) as info:
        await fetch(silent, read_timeout=0.3)
    assert str(info.value) == f"provider {SERVICE} read timeout (0.3 s)"


async def test_read_timeout_while_streaming_body_is_provider_unavailable() -> None:
    """A timeout after the headers, in the middle of the body, is still transient."""

    async def body() -> AsyncIterator[bytes]:
        yield b'{"code":"200",'
        await trio.sleep_forever()

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body())

    with pytest.raises(ProviderUnavailableError) as info:
        await fetch(handler, read_timeout=0.3)
    assert str(info.value) == f"provider {SERVICE} read timeout (0.3 s)"


async def test_a_refused_connection_is_unavailable() -> None:
    client = ProviderClient({SERVICE: "http://127.0.0.1:1"}, TOKEN)
    with pytest.raises(ProviderUnavailableError) as info:
        await client.fetch_batch(DEFINITION, make_request())
    assert str(info.value) == (
        f"provider {SERVICE} unreachable: ConnectError: [Errno 111] Connection refused"
    )


async def test_a_request_the_provider_never_reads_hits_the_send_timeout() -> None:
    """A Provider that accepts the connection but reads nothing: sending stops after the
    connect timeout (urllib3 sends under it), transient."""
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        listener.bind(("127.0.0.1", 0))
        listener.listen()  # the kernel accepts; nobody reads
        port = listener.getsockname()[1]
        client = ProviderClient({SERVICE: f"http://127.0.0.1:{port}"}, TOKEN, connect_timeout=0.5)
        request = make_request(parameters={"blob": "x" * 16 * 1024 * 1024})
        with pytest.raises(ProviderUnavailableError) as info:
            await client.fetch_batch(DEFINITION, request)
    assert str(info.value) == f"provider {SERVICE} unreachable: TimeoutError: timed out"


@pytest.mark.parametrize(
    ("base_url", "quoted"),
    [("http://[::1", "Invalid IPv6 URL"), ("http://127.0.0.1:99999", "Failed to parse")],
    ids=["unclosed-ipv6", "port-out-of-range"],
)
async def test_an_unparsable_base_url_is_unavailable(base_url: str, quoted: str) -> None:
    """A configuration error: transient, as a fixed configuration applies to the retry."""
    client = ProviderClient({SERVICE: base_url}, TOKEN)
    with pytest.raises(ProviderUnavailableError) as info:
        await client.fetch_batch(DEFINITION, make_request())
    assert str(info.value).startswith(f"provider {SERVICE} has an invalid base URL: {quoted}")


async def test_each_request_carries_section_14_timeouts() -> None:
    """Connect 3 s, read 15 s on every request and 60 s for the whole of it (§14); no
    redirect followed, no retry, the body streamed."""
    pool = FakePool(refused())
    with pytest.raises(ProviderUnavailableError):
        await fetch_through(pool)
    (call,) = pool.calls
    timeout = call["timeout"]
    assert (timeout.connect_timeout, timeout.read_timeout) == (3.0, 15.0)
    assert (call["redirect"], call["retries"], call["preload_content"]) == (False, False, False)
    spec = ProviderClient({SERVICE: BASE_URL}, TOKEN).fetch_spec(DEFINITION, b"{}", None)
    assert (spec.connect_timeout, spec.read_timeout, spec.request_timeout) == (3.0, 15.0, 60.0)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 302, 204])
async def test_other_http_status_is_provider_contract_error(status: int) -> None:
    with pytest.raises(ProviderContractError, match=f"HTTP {status}"):
        await fetch(answering({}, status=status))


async def test_4xx_quotes_provider_envelope_message() -> None:
    handler = answering(envelope(None, code="401", message="invalid token"), status=401)
    with pytest.raises(ProviderContractError, match="HTTP 401: code 401: invalid token"):
        await fetch(handler)


async def test_envelope_error_code_is_provider_contract_error_with_code_and_message() -> None:
    """An invalid or expired snapshot token is a permanent business error (§10.2)."""
    handler = answering(envelope(None, code="409", message="snapshot token invalid or expired"))
    with pytest.raises(ProviderContractError, match="code 409: snapshot token invalid"):
        await fetch(handler)


# --- response size (§11, §12: ≤ 4 MB, checked while reading) ------------------------------


async def test_oversize_content_length_fails_before_reading_body() -> None:
    declared = {"Content-Length": str(4 * 1024 * 1024 + 1)}
    response = FakeResponse(200, [b"{}"], declared)
    with pytest.raises(LimitExceededError, match="4 MB") as info:
        await fetch_through(FakePool(response))
    assert "Content-Length 4194305" in str(info.value)
    assert response.pulled == 0
    assert response.closed  # never handed back to the pool with its body unread


async def test_oversize_content_length_from_a_server_that_never_sends_the_body() -> None:
    """Over real HTTP: the head alone fails the request; reading the body would stall."""

    async def never() -> AsyncIterator[bytes]:
        await trio.sleep_forever()
        yield b""

    def handler(request: httpx.Request) -> httpx.Response:
        headers = {"Content-Length": str(4 * 1024 * 1024 + 1)}
        return httpx.Response(200, headers=headers, content=never())

    with pytest.raises(LimitExceededError, match="Content-Length 4194305"):
        await fetch(handler)


async def test_oversize_streamed_body_stops_reading_at_the_limit() -> None:
    """Without Content-Length the chunks are counted and reading stops past 4 MB."""
    chunk = b" " * 65_536
    response = FakeResponse(200, itertools.repeat(chunk))
    with pytest.raises(LimitExceededError, match="4 MB"):
        await fetch_through(FakePool(response))
    assert response.pulled == 4 * 1024 * 1024 // len(chunk) + 1
    assert response.closed


async def test_an_endless_body_over_http_is_cut_at_the_limit() -> None:
    chunk = b" " * 65_536

    async def endless() -> AsyncIterator[bytes]:
        while True:
            yield chunk

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=endless())

    with pytest.raises(LimitExceededError) as info:
        await fetch(handler)
    assert str(info.value) == (
        "provider response body exceeds the limit of 4 MB (4194304 bytes; "
        "more than 4194304 bytes read)"
    )


async def test_body_at_the_limit_is_accepted() -> None:
    payload = json.dumps(envelope(batch_data())).encode()
    batch = await fetch(
        lambda request: httpx.Response(200, content=payload), max_response_bytes=len(payload)
    )
    assert batch.rows == [{"id": 1, "name": "a"}]

    async def streamed() -> AsyncIterator[bytes]:  # no Content-Length: counted
        yield payload[:10]
        yield payload[10:]

    batch = await fetch(
        lambda request: httpx.Response(200, content=streamed()), max_response_bytes=len(payload)
    )
    assert batch.rows == [{"id": 1, "name": "a"}]


async def test_a_gzip_body_is_decoded_and_a_broken_one_is_a_contract_error() -> None:
    payload = json.dumps(envelope(batch_data())).encode()
    gzipped = {"Content-Encoding": "gzip"}
    batch = await fetch(
        lambda request: httpx.Response(200, content=gzip.compress(payload), headers=gzipped)
    )
    assert batch.rows == [{"id": 1, "name": "a"}]

    async def broken() -> AsyncIterator[bytes]:  # streamed: httpx would decode bytes
        yield b"not gzip"

    with pytest.raises(ProviderContractError) as info:
        await fetch(lambda request: httpx.Response(200, content=broken(), headers=gzipped))
    assert str(info.value).startswith(f"provider {SERVICE} sent an undecodable body: ")


# --- malformed answers (§10.1) -------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [b"<html>oops</html>", b"[1, 2]", b'{"code": "200"}', b'{"message": "no code"}', b"\xff\xfe"],
    ids=["html", "array", "no-data", "no-code", "bad-bytes"],
)
async def test_non_json_or_non_envelope_is_provider_contract_error(content: bytes) -> None:
    with pytest.raises(ProviderContractError):
        await fetch(lambda request: httpx.Response(200, content=content))


@pytest.mark.parametrize(
    "overrides",
    [
        {"schemaVersion": 2},
        {"schemaVersion": "1"},
        {"schemaHash": None},
        {"schemaHash": ""},
        {"snapshotToken": 42},
        {"rows": None},
        {"rows": {"id": 1}},
        {"rows": [[1, "a"]]},
        {"hasMore": "false"},
        {"hasMore": None},
        {"nextCursor": 2},
        {"totalRows": -1},
        {"totalRows": "many"},
        {"columns": "id,name"},
        {"columns": [{"key": "id", "title": "ID", "type": "UUID"}]},
        {"columns": [{"key": "id", "title": "ID", "type": "INTEGER", "width": 0}]},
        {"columns": [{"key": "id", "title": "ID", "type": "INTEGER", "width": 256}]},
        {"columns": [{"key": "id", "title": "ID", "type": "INTEGER", "width": "9"}]},
        {"columns": [{"key": "", "title": "ID", "type": "INTEGER"}]},
        {"columns": [{"key": "id", "type": "INTEGER"}]},
        {"columns": [{"key": "id", "title": "a", "type": "STRING"}] * 2},
        {"rows": [{"id": 1}, {"id": 2}, {"id": 3}]},
    ],
    ids=[
        "schema-version-2",
        "schema-version-string",
        "schema-hash-missing",
        "schema-hash-empty",
        "token-not-string",
        "rows-missing",
        "rows-object",
        "rows-of-arrays",
        "has-more-string",
        "has-more-missing",
        "cursor-number",
        "total-negative",
        "total-word",
        "columns-string",
        "column-type-unknown",
        "column-width-0",
        "column-width-256",
        "column-width-string",
        "column-key-empty",
        "column-title-missing",
        "column-key-duplicated",
        "rows-over-limit",
    ],
)
async def test_malformed_data_is_provider_contract_error(overrides: dict[str, Any]) -> None:
    with pytest.raises(ProviderContractError):
        await fetch(answering(envelope(batch_data(**overrides))))


async def test_more_than_100_columns_is_limit_exceeded() -> None:
    columns = [{"key": f"c{i}", "title": f"C{i}", "type": "STRING"} for i in range(101)]
    with pytest.raises(LimitExceededError, match="101 columns; the limit is 100"):
        await fetch(answering(envelope(batch_data(columns=columns))))


async def test_exactly_100_columns_is_accepted() -> None:
    columns = [{"key": f"c{i}", "title": f"C{i}", "type": "STRING"} for i in range(100)]
    batch = await fetch(answering(envelope(batch_data(columns=columns))))
    assert batch.columns is not None and len(batch.columns) == 100


async def test_snapshot_token_over_512_chars_is_provider_contract_error() -> None:
    """§10.2: the File Service bounds the opaque token to 512 characters."""
    await fetch(answering(envelope(batch_data(snapshotToken="t" * 512))))
    with pytest.raises(ProviderContractError, match="513 characters"):
        await fetch(answering(envelope(batch_data(snapshotToken="t" * 513))))


async def test_total_rows_as_digit_string_is_accepted() -> None:
    batch = await fetch(answering(envelope(batch_data(totalRows="2500"))))
    assert batch.total_rows == 2500


# --- the cursor loop (iterate_batches) ------------------------------------------------------


class ScriptedProvider:
    """Answers the n-th request with the n-th data object and records every request."""

    def __init__(self, *pages: dict[str, Any]) -> None:
        self.pages = list(pages)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(200, json=envelope(self.pages[len(self.requests) - 1]))

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]


async def collect(provider: ScriptedProvider) -> list[ProviderBatch]:
    batches: list[ProviderBatch] = []
    async with (
        serving(provider) as client,
        contextlib.aclosing(iterate_batches(client, DEFINITION, **TASK)) as stream,
    ):
        async for batch in stream:
            batches.append(batch)
    return batches


def page(rows: list[int], cursor: str | None, more: bool, **extra: Any) -> dict[str, Any]:
    return batch_data(
        rows=[{"id": i, "name": str(i)} for i in rows], nextCursor=cursor, hasMore=more, **extra
    )


async def test_iterate_echoes_cursor_and_snapshot_token_with_tenant_fields() -> None:
    """Later requests echo the first token unchanged; tenant fields and token every time."""
    provider = ScriptedProvider(
        page([1, 2], "2", True),
        page([3, 4], "4", True, columns=None),
        page([5], "5", False, columns=None),
    )
    batches = await collect(provider)

    assert [row["id"] for b in batches for row in b.rows] == [1, 2, 3, 4, 5]
    assert [(b["cursor"], b["snapshotToken"], b["limit"]) for b in provider.bodies] == [
        (None, None, 2),
        ("2", "snap-1", 2),
        ("4", "snap-1", 2),
    ]
    for request, body in zip(provider.requests, provider.bodies, strict=True):
        assert request.headers["X-Internal-Service-Token"] == TOKEN
        assert (body["tenantId"], body["appCode"], body["requestedBy"]) == (
            "0",
            "PLATFORM",
            "1900000000000000009",
        )


async def test_every_batch_request_carries_the_trace_id_as_traceparent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 12: the trace id is sent to the Provider on every batch request as a W3C
    ``traceparent`` (a new span id each time), and each batch is one DEBUG line with its
    rows, bytes and milliseconds."""
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    provider = ScriptedProvider(page([1, 2], "2", True), page([3], "3", False, columns=None))
    with caplog.at_level(logging.DEBUG, logger="actors.pipeline.provider_client"):
        async with (
            serving(provider) as client,
            contextlib.aclosing(
                iterate_batches(client, DEFINITION, **TASK, trace_id=trace)
            ) as stream,
        ):
            assert [b.row_count async for b in stream] == [2, 1]
    headers = [r.headers["traceparent"] for r in provider.requests]
    assert [parse_traceparent(h) for h in headers] == [trace, trace]
    assert len({h.split("-")[2] for h in headers}) == 2  # one span per request
    lines = [r for r in caplog.records if r.name == "actors.pipeline.provider_client"]
    assert [(r.levelno, r.rows) for r in lines] == [(logging.DEBUG, 2), (logging.DEBUG, 1)]  # type: ignore[attr-defined]
    assert all(r.bytes > 0 and r.ms >= 0 for r in lines)  # type: ignore[attr-defined]


@pytest.mark.parametrize("trace_id", [None, "", "NOT-A-TRACE", "0" * 32])
async def test_no_traceparent_without_a_valid_trace_id(trace_id: str | None) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=envelope(batch_data()))

    async with serving(handler) as client:
        await client.fetch_batch(DEFINITION, make_request(), trace_id=trace_id)
    assert "traceparent" not in seen[0].headers


async def test_iterate_accepts_later_batches_that_omit_token() -> None:
    provider = ScriptedProvider(page([1, 2], "2", True), page([3], "3", False, snapshotToken=None))
    batches = await collect(provider)
    assert len(batches) == 2
    assert provider.bodies[1]["snapshotToken"] == "snap-1"


async def test_schema_hash_change_between_batches_is_permanent() -> None:
    """§19.1 "Provider 客户端：schemaHash 变化判永久失败" (§10.1)."""
    provider = ScriptedProvider(
        page([1, 2], "2", True), page([3], "3", False, schemaHash="sha256:other")
    )
    with pytest.raises(ProviderContractError, match="schemaHash changed between batches"):
        await collect(provider)


@pytest.mark.parametrize("cursor", [None, ""], ids=["null", "empty"])
async def test_has_more_without_next_cursor_is_transient(cursor: str | None) -> None:
    """§19.1 "Provider 客户端：游标未推进判临时失败": hasMore with no nextCursor."""
    provider = ScriptedProvider(page([1, 2], cursor, True))
    with pytest.raises(CursorNotAdvancingError):
        await collect(provider)


async def test_cursor_not_advancing_is_transient() -> None:
    """§19.1 "Provider 客户端：游标未推进判临时失败": nextCursor equals the cursor sent."""
    provider = ScriptedProvider(page([1, 2], "2", True), page([3, 4], "2", True, columns=None))
    with pytest.raises(CursorNotAdvancingError):
        await collect(provider)
    assert len(provider.requests) == 2


async def test_snapshot_token_changed_between_batches_is_contract_error() -> None:
    provider = ScriptedProvider(page([1, 2], "2", True), page([3], "3", False, snapshotToken="x"))
    with pytest.raises(ProviderContractError, match="snapshotToken changed"):
        await collect(provider)


async def test_rows_over_batch_size_is_contract_error() -> None:
    """§12: a batch holds at most batch-size rows."""
    provider = ScriptedProvider(page([1, 2, 3], "3", False))
    with pytest.raises(ProviderContractError, match="batch-size limit is 2 rows"):
        await collect(provider)


async def test_first_batch_without_columns_is_contract_error() -> None:
    provider = ScriptedProvider(page([1], "1", False, columns=None))
    with pytest.raises(ProviderContractError, match="no columns"):
        await collect(provider)


async def test_iterate_requires_tenant_fields() -> None:
    """§19.1 "Provider 客户端：租户字段必填" for the loop too: nothing is sent."""
    provider = ScriptedProvider(page([1], "1", False))
    task = {**TASK, "requested_by": None}
    with pytest.raises(ValueError, match="requestedBy"):
        async with (
            serving(provider) as client,
            contextlib.aclosing(iterate_batches(client, DEFINITION, **task)) as stream,
        ):
            async for _ in stream:
                pass
    assert provider.requests == []


# --- against the real demo Provider over HTTP --------------------------------------------


async def test_demo_provider_over_http_yields_every_row_in_order() -> None:
    """The real Provider behind hypercorn: 2500 rows in batches of 1000, tampering rejected."""
    app = QuartTrio(__name__)
    app.register_blueprint(
        create_demo_provider_blueprint(service_token=TOKEN, snapshot_secret=b"secret")
    )
    config = hypercorn.config.Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    stop = trio.Event()
    base_urls: dict[str, str] = {}  # filled once the server has bound its port
    client = ProviderClient(base_urls, TOKEN)
    definition = ExportDefinition(
        export_type="CUSTOMER_LIST",
        provider_service=SERVICE,
        provider_path="/internal/exports/v1/CUSTOMER_LIST/batches",
        required_permission="platform:customer:export",
        app_scope=AppCode.PLATFORM,
        batch_size=1000,
    )
    task = {**TASK, "parameters": {"rowCount": 2500}}
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(
            functools.partial(hypercorn.trio.serve, app, config, shutdown_trigger=stop.wait)
        )
        base_urls[SERVICE] = urls[0]
        try:
            await _export_and_tamper(client, definition, task)
        finally:
            await client.aclose()
            stop.set()


async def _export_and_tamper(
    client: ProviderClient, definition: ExportDefinition, task: dict[str, Any]
) -> None:
    batches: list[ProviderBatch] = []
    async with contextlib.aclosing(iterate_batches(client, definition, **task)) as stream:
        async for batch in stream:
            batches.append(batch)

    assert [len(b.rows) for b in batches] == [1000, 1000, 500]
    ids = [row["customerId"] for b in batches for row in b.rows]
    assert ids == list(range(1, 2501))
    assert batches[0].columns == DEMO_COLUMNS
    assert all(b.columns is None for b in batches[1:])
    assert all(b.schema_hash == DEMO_SCHEMA_HASH for b in batches)
    assert batches[0].total_rows == 2500

    token = batches[0].snapshot_token
    assert token is not None
    tampered = token[:-1] + ("0" if token[-1] != "0" else "1")
    request = BatchRequest(
        **task, cursor="1000", snapshot_token=tampered, limit=definition.batch_size
    )
    with pytest.raises(ProviderContractError, match="code 409"):
        await client.fetch_batch(definition, request)


async def test_large_4xx_body_is_not_quoted() -> None:
    """Only a small error body is read for its message; a large one is cut off unread."""
    handler = answering(envelope(None, code="400", message="x" * 20_000), status=400)
    with pytest.raises(
        ProviderContractError, match=r"^provider customer-service answered HTTP 400$"
    ):
        await fetch(handler)


# --- hostile Providers: bounded runs, one-line messages, no stray Python errors ------------


async def test_cursor_cycle_fails_at_the_first_repeat() -> None:
    """Issue 8 item 3(a), reported input: a → b → a with hasMore and empty rows was only
    stopped by the 30-minute deadline. Now the third answer ends the run."""
    provider = ScriptedProvider(
        page([], "a", True),
        page([], "b", True, columns=None),
        page([], "a", True, columns=None),
        *[page([], "b", True, columns=None)] * 10,
    )
    with pytest.raises(CursorNotAdvancingError) as info:
        await collect(provider)
    assert len(provider.requests) == 3
    assert "nextCursor 'a' repeated after 3 batches (it already asked for batch 2)" in str(
        info.value
    )


async def test_first_total_rows_above_max_rows_fails_before_a_second_request() -> None:
    """Issue 8 item 3(e): the announced figure alone fails the run, permanently."""
    provider = ScriptedProvider(page([1, 2], "2", True, totalRows=11), page([3], "3", False))
    definition = dataclasses.replace(DEFINITION, max_rows=10)
    with pytest.raises(LimitExceededError, match="totalRows 11 in its first batch.*max-rows 10"):
        async with (
            serving(provider) as client,
            contextlib.aclosing(iterate_batches(client, definition, **TASK)) as stream,
        ):
            async for _ in stream:
                pass
    assert len(provider.requests) == 1


async def test_a_body_dripping_bytes_hits_the_total_request_limit() -> None:
    """Issue 8 item 3(b): a byte every 50 ms never trips the read timeout; the total limit
    per request does, at the limit, and the error is the transient Provider one. Real
    time: the request runs in a thread, which trio's mock clock would not wait for."""
    sent = 0

    async def drip() -> AsyncIterator[bytes]:
        nonlocal sent
        while True:
            sent += 1
            yield b" "
            await trio.sleep(0.05)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=drip())

    observer = RecordingObserver()
    started = time.monotonic()
    with pytest.raises(ProviderUnavailableError) as info:
        await fetch(handler, read_timeout=0.3, request_timeout=1, observer=observer)
    elapsed = time.monotonic() - started
    assert str(info.value) == (
        f"provider {SERVICE} did not finish answering a batch request within the total "
        "limit of 1 s (FILE_EXPORT_PROVIDER_REQUEST_TIMEOUT_SECONDS)"
    )
    assert 1 <= elapsed < 3
    assert sent >= 5  # still dripping when the limit passed: no read timeout ended it
    ((*_, seconds, ok),) = observer.calls
    assert not ok and seconds >= 1


async def test_provider_message_with_crlf_cannot_forge_a_line() -> None:
    """Issue 8 item 3(d), reported input: the Provider's message ends up escaped."""
    forged = "boom\n2026-12-01 00:00:00,000 CRITICAL actors.runtime: FORGED"
    for status in (200, 400):
        handler = answering(envelope(None, code="500", message=forged), status=status)
        with pytest.raises(ProviderContractError) as info:
            await fetch(handler)
        assert "\n" not in str(info.value)
        assert "boom\\n2026-12-01 00:00:00,000 CRITICAL" in str(info.value)


async def test_transport_error_quoting_a_url_never_shows_its_credentials() -> None:
    """Issue 8 item 4: credentials inside a Provider base URL stay out of messages; they
    travel as Basic credentials, never in the URL the HTTP client is given."""
    base_url = "http://user:s3cret@provider.test"
    pool = FakePool(ProtocolError(f"cannot reach {base_url}{DEFINITION.provider_path}"))
    with pytest.raises(ProviderUnavailableError) as info:
        await fetch_through(pool, base_url)
    assert "s3cret" not in str(info.value)
    assert "http://***@provider.test" in str(info.value)
    (call,) = pool.calls
    assert call["url"] == BASE_URL + DEFINITION.provider_path
    assert call["headers"]["Authorization"] == httpx.BasicAuth("user", "s3cret")._auth_header


def raw_answer(literal: str, **overrides: Any) -> bytes:
    """An answer whose ``"@@"`` placeholder is replaced by a raw JSON ``literal``."""
    return json.dumps(envelope(batch_data(**overrides))).replace('"@@"', literal).encode()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (raw_answer('"' + "1" * 5000 + '"', totalRows="@@"), "totalRows has 5000 digits"),
        (raw_answer("1" * 5000, totalRows="@@"), "totalRows has 5000 digits"),
        (raw_answer(str(10**30), totalRows="@@"), "larger than the task can hold"),
        (raw_answer(str(2**63), totalRows="@@"), "larger than the task can hold"),
        (raw_answer('"\\ud800"', nextCursor="@@", hasMore=True), "nextCursor is not valid"),
        (raw_answer('"\\udfff"', snapshotToken="@@"), "snapshotToken is not valid"),
        (raw_answer("[" * 100_000 + "]" * 100_000, rows="@@"), "non-JSON"),
    ],
    ids=[
        "total-5000-digit-string",
        "total-5000-digit-number",
        "total-over-bigint",
        "total-2-pow-63",
        "cursor-lone-surrogate",
        "token-lone-surrogate",
        "nesting-100000-deep",
    ],
)
async def test_unrepresentable_answers_are_permanent_contract_errors(
    body: bytes, message: str
) -> None:
    """Issue 13 item 6: a totalRows beyond BIGINT, an integer over Python's 4,300-digit
    limit, a cursor that cannot be sent back: a permanent error naming the field, never a
    ValueError or a database error later on (both were retried as transient)."""
    with pytest.raises(ProviderContractError, match=message):
        await fetch(lambda request: httpx.Response(200, content=body))


async def test_total_rows_at_the_bigint_limit_is_accepted() -> None:
    batch = await fetch(answering(envelope(batch_data(totalRows=str(2**63 - 1)))))
    assert batch.total_rows == 2**63 - 1


async def test_integer_literal_over_python_digit_limit_stays_as_its_digits() -> None:
    """A 5,000-digit number in a row is not a decode failure: the cell keeps the digits."""
    body = raw_answer("9" * 5000, rows=[{"id": "@@", "name": "big"}])
    batch = await fetch(lambda request: httpx.Response(200, content=body))
    assert batch.rows == [{"id": "9" * 5000, "name": "big"}]
