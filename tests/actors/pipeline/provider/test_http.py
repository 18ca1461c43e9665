"""An export run's Provider requests, made by its worker process (issue 9).

Each test runs the real path: :class:`ProviderClient` builds the request, a real export
worker process sends it (``actors/pipeline/provider/http.py``, urllib3) to a real HTTP
server (``tests/provider_server.py``) and decodes the answer; the parent gets the summary,
the metrics and the DEBUG line. ``export-center provider-check`` sends its requests through
the same module from a thread (``test_provider_check_client.py``); the last tests here pin that
both entry points translate urllib3's errors alike, and the request rewrites provider-check
makes (:meth:`FetchSpec.with_body`, :meth:`FetchSpec.with_header`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import http.server
import json
import logging
import os
import re
import signal
import socket
import struct
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
import trio
import urllib3

from actors.core.batch import BatchSummary
from actors.core.errors import (
    ExportWorkerDiedError,
    LimitExceededError,
    ProviderContractError,
    ProviderUnavailableError,
)
from actors.core.provider.request import BatchRequest
from actors.core.tracing import parse_traceparent
from actors.pipeline.provider.client import ProviderClient
from actors.pipeline.provider.fetch import FetchSpec
from actors.pipeline.provider.http import (
    ProviderConnection,
    fetch_body,
    fetch_body_in_thread,
)
from actors.pipeline.worker.handle import ExportWorker
from actors.pipeline.worker.pool import open_export_worker
from tests.actors.pipeline.provider.helpers import (
    DEFINITION,
    SERVICE,
    TASK,
    TOKEN,
    RecordingObserver,
    batch_data,
    envelope,
)
from tests.provider_server import Handler, serve_provider
from tests.servers import read_http_request, serving_in_thread, serving_raw_tcp

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def make_request(**overrides: Any) -> BatchRequest:
    fields: dict[str, Any] = {**TASK, "cursor": None, "snapshot_token": None, "limit": 2}
    fields.update(overrides)
    return BatchRequest(**fields)


@contextlib.asynccontextmanager
async def provider_and_worker(
    handler: Handler, tmp_path: Path, *, base_url: str | None = None, **kwargs: Any
) -> AsyncIterator[tuple[ProviderClient, ExportWorker]]:
    """A real server for ``handler``, a client pointing at it and a run's worker."""
    async with serve_provider(handler) as url:
        client = ProviderClient({SERVICE: base_url or url}, TOKEN, **kwargs)
        with open(tmp_path / "out.xlsx", "wb") as out:
            async with open_export_worker(out, max_rows=1000, max_bytes=10**8) as worker:
                yield client, worker


async def fetch(handler: Handler, tmp_path: Path, **kwargs: Any) -> BatchSummary:
    async with provider_and_worker(handler, tmp_path, **kwargs) as (client, worker):
        batch: BatchSummary = await client.fetch_batch(DEFINITION, make_request(), fetch=worker)
        return batch


def answering(data: Any, status: int = 200, **kwargs: Any) -> Handler:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json=data, **kwargs)

    return handler


async def test_the_worker_posts_the_contract_body_with_token_traceparent_and_logs_the_batch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=envelope(batch_data()))

    observer = RecordingObserver()
    with caplog.at_level(logging.DEBUG, logger="actors.pipeline.provider.client"):
        async with provider_and_worker(handler, tmp_path, observer=observer) as (client, worker):
            batch = await client.fetch_batch(
                DEFINITION, make_request(), fetch=worker, trace_id=TRACE_ID
            )

    (request,) = seen
    assert request.method == "POST"
    assert request.url.path == DEFINITION.provider_path
    assert request.headers["X-Internal-Service-Token"] == TOKEN
    assert request.headers["Content-Type"] == "application/json"
    assert parse_traceparent(request.headers["traceparent"]) == TRACE_ID
    assert json.loads(request.content)["taskId"] == "190000000000000001"
    assert isinstance(batch, BatchSummary)
    assert (batch.schema_hash, batch.snapshot_token, batch.row_count) == ("sha256:abc", "snap-1", 1)
    ((service, export_type, seconds, ok),) = observer.calls
    assert (service, export_type, ok) == (SERVICE, DEFINITION.export_type, True)
    assert 0 < seconds < 10
    (line,) = [r for r in caplog.records if r.name == "actors.pipeline.provider.client"]
    assert line.getMessage() == "provider batch"
    assert (line.service, line.rows) == (SERVICE, 1)  # type: ignore[attr-defined]
    sent = httpx.Response(200, json=envelope(batch_data())).content
    assert line.bytes == len(sent)  # type: ignore[attr-defined]


@pytest.mark.parametrize("status", [500, 502, 503, 429])
async def test_5xx_and_429_are_provider_unavailable(tmp_path: Path, status: int) -> None:
    observer = RecordingObserver()
    with pytest.raises(ProviderUnavailableError, match=f"answered HTTP {status}$"):
        await fetch(answering(envelope(None), status), tmp_path, observer=observer)
    assert [ok for *_, ok in observer.calls] == [False]


async def test_a_redirect_is_not_followed(tmp_path: Path) -> None:
    followed: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path != DEFINITION.provider_path:
            followed.append(request.url.path)
        return httpx.Response(302, headers={"Location": "/elsewhere"})

    with pytest.raises(ProviderContractError, match=f"provider {SERVICE} answered HTTP 302$"):
        await fetch(handler, tmp_path)
    assert followed == []


async def test_4xx_quotes_the_provider_envelope_message(tmp_path: Path) -> None:
    handler = answering(envelope(None, code="400", message="bad\r\nfilter"), 400)
    with pytest.raises(ProviderContractError) as raised:
        await fetch(handler, tmp_path)
    assert str(raised.value) == f"provider {SERVICE} answered HTTP 400: code 400: bad\\r\\nfilter"


async def test_envelope_error_and_non_json_are_contract_errors(tmp_path: Path) -> None:
    with pytest.raises(ProviderContractError, match="code E409"):
        await fetch(answering(envelope(None, code="E409", message="stale")), tmp_path)
    not_json = httpx.Response(200, content=b"<html>", headers={"Content-Type": "text/html"})
    with pytest.raises(ProviderContractError):
        await fetch(lambda request: not_json, tmp_path)


async def test_a_gzip_body_is_decoded(tmp_path: Path) -> None:
    body = gzip.compress(json.dumps(envelope(batch_data())).encode())

    def gzipped(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"Content-Encoding": "gzip"})

    assert (await fetch(gzipped, tmp_path)).row_count == 1


async def test_oversize_bodies_are_limit_exceeded_declared_or_streamed(tmp_path: Path) -> None:
    data = json.dumps(envelope(batch_data())).encode()
    limit = len(data) - 1

    with pytest.raises(LimitExceededError, match=f"; Content-Length {len(data)}"):
        await fetch(
            lambda request: httpx.Response(200, content=data), tmp_path, max_response_bytes=limit
        )

    async def chunks() -> AsyncIterator[bytes]:
        yield data[:10]
        yield data[10:]

    with pytest.raises(LimitExceededError, match=f"more than {limit} bytes read"):
        await fetch(
            lambda request: httpx.Response(200, content=chunks()),
            tmp_path,
            max_response_bytes=limit,
        )
    at_limit = await fetch(
        lambda request: httpx.Response(200, content=data), tmp_path, max_response_bytes=len(data)
    )
    assert at_limit.row_count == 1


async def test_a_dripping_body_hits_the_total_request_limit(tmp_path: Path) -> None:
    async def drip() -> AsyncIterator[bytes]:
        while True:
            yield b" "
            await trio.sleep(0.05)

    observer = RecordingObserver()
    with pytest.raises(ProviderUnavailableError) as raised:
        await fetch(
            lambda request: httpx.Response(200, content=drip()),
            tmp_path,
            request_timeout=0.5,
            observer=observer,
        )
    assert str(raised.value) == (
        f"provider {SERVICE} did not finish answering a batch request within the total "
        "limit of 0.5 s (FILE_EXPORT_PROVIDER_REQUEST_TIMEOUT_SECONDS)"
    )
    ((*_, seconds, ok),) = observer.calls
    assert not ok and seconds >= 0.5


async def test_a_silent_provider_hits_the_read_timeout(tmp_path: Path) -> None:
    async def silent(request: httpx.Request) -> httpx.Response:
        await trio.sleep_forever()
        raise AssertionError

    with pytest.raises(ProviderUnavailableError, match=f"^provider {SERVICE} read timeout"):
        await fetch(silent, tmp_path, read_timeout=0.3)


async def test_a_refused_connection_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(
        ProviderUnavailableError, match=f"^provider {SERVICE} unreachable: ConnectError: "
    ):
        await fetch(answering(None), tmp_path, base_url="http://127.0.0.1:1")


async def test_url_credentials_are_sent_as_basic_auth_and_never_quoted(tmp_path: Path) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=envelope(batch_data()))

    async with serve_provider(handler) as url:
        with_credentials = url.replace("http://", "http://user:s3cret@")
        assert (await fetch(handler, tmp_path, base_url=with_credentials)).row_count == 1
    assert seen[0].headers["Authorization"] == httpx.BasicAuth("user", "s3cret")._auth_header
    with pytest.raises(ProviderUnavailableError) as raised:
        await fetch(handler, tmp_path, base_url="http://user:s3cret@127.0.0.1:1")
    assert "s3cret" not in str(raised.value)


async def test_a_worker_killed_mid_request_names_the_batch_it_was_fetching(
    tmp_path: Path,
) -> None:
    arrived = trio.Event()

    async def stall(request: httpx.Request) -> httpx.Response:
        arrived.set()
        await trio.sleep_forever()
        raise AssertionError

    observer = RecordingObserver()
    async with provider_and_worker(stall, tmp_path, observer=observer) as (client, worker):
        async with trio.open_nursery() as nursery:

            async def kill() -> None:
                await arrived.wait()
                os.kill(worker.pid, signal.SIGKILL)

            nursery.start_soon(kill)
            with pytest.raises(ExportWorkerDiedError) as raised:
                await client.fetch_batch(DEFINITION, make_request(), fetch=worker)
    assert str(raised.value) == "export worker process died (SIGKILL) while fetching batch 1"
    assert observer.calls == []  # our process failed, not the Provider


# --- one translation for both entry points; provider-check's rewrites --------------------

SPEC = FetchSpec(
    service=SERVICE,
    url="http://provider.test" + DEFINITION.provider_path,
    body=b'{"limit":2}',
    headers=(("X-Internal-Service-Token", TOKEN), ("Content-Type", "application/json")),
    connect_timeout=3.0,
    read_timeout=15.0,
    request_timeout=60.0,
    max_response_bytes=4 * 1024 * 1024,
)


def _raw_peer(behaviour: str) -> Callable[[socket.socket], None]:
    """What a broken Provider does with one connection, on the wire (``_serve_raw``)."""

    def serve(conn: socket.socket) -> None:
        read_http_request(conn)  # the whole request, so the send never fails
        if behaviour == "reset":  # RST instead of an answer
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif behaviour == "garbage":  # not HTTP
            conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
        elif behaviour == "short-body":  # closes 90 bytes early
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 10)
        elif behaviour == "superscript-length":  # "²" in latin-1, then the body to EOF
            body = json.dumps(envelope(batch_data())).encode()
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\n" + body)
        elif behaviour == "silent":
            time.sleep(1.0)
        # "eof": nothing; every behaviour then closes
        conn.close()

    return serve


@contextlib.contextmanager
def _serve_raw(behaviour: str) -> Iterator[str]:
    """A TCP server on a free port whose every connection gets ``behaviour``; yields the
    request URL."""
    serve = _raw_peer(behaviour)
    with serving_raw_tcp(lambda conn, number: serve(conn)) as port:
        yield f"http://127.0.0.1:{port}{DEFINITION.provider_path}"


RAW_FAULTS = [
    ("reset", f"provider {SERVICE} unreachable: ConnectionResetError: "),
    ("eof", f"provider {SERVICE} unreachable: RemoteDisconnected: "),
    ("garbage", f"provider {SERVICE} unreachable: BadStatusLine: "),
    ("short-body", f"provider {SERVICE} unreachable: IncompleteRead: "),
    ("silent", f"provider {SERVICE} read timeout (0.3 s)"),
]


@pytest.mark.parametrize(("behaviour", "message"), RAW_FAULTS, ids=[b for b, _ in RAW_FAULTS])
def test_the_worker_and_the_thread_entry_points_translate_wire_faults_alike(
    behaviour: str, message: str
) -> None:
    """A real peer that resets, closes, speaks something else, cuts the body or stays
    silent: the worker's connection (its own send and read, :class:`ProviderConnection`)
    and provider-check's pooled request give one class and one message, and the worker's
    connection is closed and made again for the next request."""
    with _serve_raw(behaviour) as url:
        spec = dataclasses.replace(SPEC, url=url, read_timeout=0.3)
        texts = []
        connection = ProviderConnection()
        for send in (
            lambda: fetch_body(spec, connection),
            lambda: fetch_body_in_thread(spec, urllib3.PoolManager()),
        ):
            with pytest.raises(ProviderUnavailableError) as raised:
                send()
            texts.append(str(raised.value))
        assert texts[0] == texts[1]
        assert texts[0].startswith(message)
        with pytest.raises(ProviderUnavailableError, match=re.escape(message)):
            fetch_body(spec, connection)  # a new connection, the same fault


def test_a_content_length_that_is_no_number_is_no_declaration_for_both_entry_points() -> None:
    """``Content-Length: ²`` (a latin-1 byte that ``str.isdigit`` accepts and ``int``
    refuses): the body is read to the end of the connection, as http.client does, not
    reported as an invalid base URL."""
    with _serve_raw("superscript-length") as url:
        spec = dataclasses.replace(SPEC, url=url)
        for body in (
            fetch_body(spec),
            fetch_body_in_thread(spec, urllib3.PoolManager()),
        ):
            assert json.loads(body) == envelope(batch_data())


def test_a_refused_connection_reads_the_same_from_both_entry_points() -> None:
    spec = dataclasses.replace(SPEC, url="http://127.0.0.1:1/x")
    texts = []
    for send in (
        lambda: fetch_body(spec),
        lambda: fetch_body_in_thread(spec, urllib3.PoolManager()),
    ):
        with pytest.raises(ProviderUnavailableError) as raised:
            send()
        texts.append(str(raised.value))
    assert (
        texts
        == [f"provider {SERVICE} unreachable: ConnectError: [Errno 111] Connection refused"] * 2
    )


def test_with_header_replaces_a_header_in_any_case_and_keeps_the_rest() -> None:
    lower = SPEC.with_header("x-internal-service-token", "wrong")
    assert lower.headers == (
        ("Content-Type", "application/json"),
        ("x-internal-service-token", "wrong"),
    )
    added = SPEC.with_header("traceparent", "00-abc")
    assert added.headers == (*SPEC.headers, ("traceparent", "00-abc"))
    assert (lower.url, lower.body, lower.request_timeout) == (SPEC.url, SPEC.body, 60.0)


def test_with_body_replaces_only_the_body() -> None:
    changed = SPEC.with_body(b"not json")
    assert changed.body == b"not json"
    assert changed == FetchSpec(**{**_fields(SPEC), "body": b"not json"})
    assert SPEC.body == b'{"limit":2}'  # frozen: the original is unchanged


def _fields(spec: FetchSpec) -> dict[str, Any]:
    return {name: getattr(spec, name) for name in FetchSpec.__slots__}


class _KeepAliveHandler(http.server.BaseHTTPRequestHandler):
    """Answers every POST with a small 200; ``close`` in the path asks to close after it.
    Records the client port of each request (one port: one connection)."""

    protocol_version = "HTTP/1.1"
    ports: ClassVar[list[int]] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers["Content-Length"]))
        self.ports.append(self.client_address[1])
        body = json.dumps(envelope(batch_data())).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        if "close" in self.path:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def _keep_alive_server() -> Iterator[str]:
    _KeepAliveHandler.ports = []
    with serving_in_thread(
        http.server.ThreadingHTTPServer(("127.0.0.1", 0), _KeepAliveHandler)
    ) as url:
        yield url


def test_a_run_keeps_one_connection_and_makes_a_new_one_after_the_provider_closed_it() -> None:
    with _keep_alive_server() as base:
        connection = ProviderConnection()
        keep = dataclasses.replace(SPEC, url=base + "/batch")
        close = dataclasses.replace(SPEC, url=base + "/batch?close")
        for spec in (keep, keep, close, keep, keep):
            assert json.loads(fetch_body(spec, connection))["code"] == "200"
        connection.close()
    first, second, third, fourth, fifth = _KeepAliveHandler.ports
    assert first == second == third  # kept alive until the Provider said close
    assert fourth == fifth != third


def test_the_answer_waits_while_the_worker_writes_and_the_total_limit_counts_that_time() -> None:
    """The worker writes the previous batch between send and receive: no timer runs then
    (a SIGALRM there would break the write), but the time counts toward the request's total
    limit, checked when the read starts."""
    with _keep_alive_server() as base:
        connection = ProviderConnection()
        spec = dataclasses.replace(SPEC, url=base + "/batch", request_timeout=0.3)
        connection.send(spec)
        time.sleep(0.1)  # a short write: the answer is read from the socket's buffer
        assert json.loads(connection.receive())["code"] == "200"
        connection.send(spec)
        time.sleep(0.4)  # a write longer than the whole limit: no signal interrupts it
        with pytest.raises(ProviderUnavailableError, match="within the total limit of 0.3 s"):
            connection.receive()
        # The unread answer was dropped with its connection; the next request makes another.
        assert json.loads(fetch_body(spec, connection))["code"] == "200"
        connection.close()
    assert len(set(_KeepAliveHandler.ports)) == 2
