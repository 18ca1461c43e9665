"""What the Provider client tests share: a request, a task, fake Providers behind a real
HTTP server (``tests/provider_server.py``) and stand-in urllib3 pools for errors a real
server cannot produce on demand."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

import httpx
import urllib3
from urllib3.exceptions import (
    ConnectTimeoutError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)

from actors.core.batch import ProviderBatch
from actors.core.definitions import ExportDefinition
from actors.core.principal import AppCode
from actors.core.provider.request import BatchRequest
from actors.pipeline.provider.check_client import ProviderCheckClient
from actors.pipeline.provider.fetch import FetchSpec
from tests.provider_server import Handler, serve_provider

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
#: a batch request as a run sends it: §14 timeouts, the §12 size limit
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
async def serving(handler: Handler, **kwargs: Any) -> AsyncIterator[ProviderCheckClient]:
    """A real server for ``handler`` and a client pointing at it (no worker)."""
    async with serve_provider(handler) as url:
        client = ProviderCheckClient({SERVICE: url}, TOKEN, **kwargs)
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
    client = ProviderCheckClient({SERVICE: base_url}, TOKEN, pool=pool, **kwargs)
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
