"""The cursor loop over a whole export (§10.1, §10.2): cursors, snapshot tokens and the rules
across batches, against scripted Providers, the real demo Provider over HTTP, and hostile
Providers (bounded runs, one-line messages). One request's mapping: ``test_provider_client.py``."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import hypercorn.config
import hypercorn.trio
import pytest
import trio
from quart_trio import QuartTrio
from urllib3.exceptions import (
    ProtocolError,
)

from actors.core.errors import (
    CursorNotAdvancingError,
    LimitExceededError,
    ProviderContractError,
    ProviderUnavailableError,
)
from actors.core.models import AppCode, ExportDefinition, ProviderBatch
from actors.core.provider.request import BatchRequest
from actors.core.tracing import parse_traceparent
from actors.pipeline.cursor_loop import iterate_batches
from actors.pipeline.provider_client import ProviderClient
from tests.actors.pipeline.provider_client_helpers import (
    BASE_URL,
    DEFINITION,
    SERVICE,
    TASK,
    TOKEN,
    FakePool,
    RecordingObserver,
    answering,
    batch_data,
    envelope,
    fetch,
    fetch_through,
    make_request,
    serving,
)
from web.demo_provider.app import create_demo_provider_blueprint
from web.demo_provider.data import DEMO_COLUMNS, DEMO_SCHEMA_HASH

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
