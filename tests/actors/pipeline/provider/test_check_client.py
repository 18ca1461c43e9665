"""One Provider request (§10.1, §10.2, §9.1, §14): its shape, timeouts and trace id, and
how a failure to get an answer reads (transport errors, HTTP statuses, an envelope's error
code). What the answer's body may be (its size, §11, §12, and its form, §10.1) is
``test_check_client_answers.py``'s.

Each request goes the way ``export-center provider-check`` sends it: the check's client
(``actors/pipeline/provider/check_client.py``) builds it as an export run's client does
(``actors/pipeline/provider/request_builder.py``), and the service's one HTTP client
(``actors/pipeline/provider/http.py``, urllib3) sends it from a trio thread to a real HTTP
server on port 0 (``tests/provider_server.py``), whose fake Provider is a
``handler(httpx.Request) -> httpx.Response`` that may stream, drip or stall a body.
urllib3's own errors that a real server cannot produce on demand (a connect timeout, a
reset) come from a stand-in pool (:class:`FakePool`). An export run sends the same
requests from its worker process: ``test_http.py``.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio

from actors.core.batch import ColumnType
from actors.core.errors import PermanentExportError, ProviderContractError, ProviderUnavailableError
from actors.core.tracing import parse_traceparent
from actors.pipeline.provider.check_client import ProviderCheckClient
from actors.pipeline.provider.request_builder import ProviderRequests
from tests.actors.pipeline.provider.helpers import (
    BASE_URL,
    DEFINITION,
    SERVICE,
    TOKEN,
    TRANSPORT_ERROR_IDS,
    TRANSPORT_ERRORS,
    FakePool,
    answering,
    batch_data,
    envelope,
    fetch,
    fetch_through,
    make_request,
    refused,
    serving,
)
from tests.provider_server import serve_provider

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

    client = ProviderCheckClient(urls, TOKEN)
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
    client = ProviderCheckClient({SERVICE: "http://127.0.0.1:1"}, TOKEN)
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
        client = ProviderCheckClient(
            {SERVICE: f"http://127.0.0.1:{port}"}, TOKEN, connect_timeout=0.5
        )
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
    client = ProviderCheckClient({SERVICE: base_url}, TOKEN)
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
    spec = ProviderCheckClient({SERVICE: BASE_URL}, TOKEN).fetch_spec(DEFINITION, b"{}", None)
    assert (spec.connect_timeout, spec.read_timeout, spec.request_timeout) == (3.0, 15.0, 60.0)


def test_every_request_carries_the_trace_id_with_a_span_of_its_own() -> None:
    """Issue 12: the export's trace id goes to the Provider on every batch request as a W3C
    ``traceparent``, with a new span id each time (both clients build requests here)."""
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    requests = ProviderRequests({SERVICE: BASE_URL}, TOKEN)
    headers = [
        dict(requests.fetch_spec(DEFINITION, b"{}", trace).headers)["traceparent"] for _ in range(2)
    ]
    assert [parse_traceparent(h) for h in headers] == [trace, trace]
    assert len({h.split("-")[2] for h in headers}) == 2


@pytest.mark.parametrize("trace_id", [None, "", "NOT-A-TRACE", "0" * 32])
async def test_no_traceparent_without_a_valid_trace_id(trace_id: str | None) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=envelope(batch_data()))

    async with serving(handler) as client:
        await client.fetch_batch(DEFINITION, make_request(), trace_id=trace_id)
    assert "traceparent" not in seen[0].headers


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
