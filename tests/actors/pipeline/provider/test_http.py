"""An export run's Provider requests, made by its worker process (issue 9).

Each test runs the real path: :class:`ProviderClient` builds the request, a real export
worker process sends it (``actors/pipeline/provider/http.py``, urllib3) to a real HTTP
server (``tests/provider_server.py``) and decodes the answer; the parent gets the summary,
the metrics and the DEBUG line. ``export-center provider-check`` sends its requests through
the same module from a thread (``test_check_client.py``); that both entry points translate
the wire's faults alike is ``test_http_errors.py``'s, the request rewrites provider-check
makes are ``test_fetch.py``'s, and the run's kept connection is ``test_connection.py``'s.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import logging
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

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
