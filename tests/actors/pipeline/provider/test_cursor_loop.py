"""The cursor loop over a whole export (§10.1, §10.2): cursors, snapshot tokens and the rules
across batches. The loop is driven by a scripted fetcher (no HTTP: the loop makes no request
itself), and once by the real demo Provider over HTTP. One request's shape and mapping:
``test_check_client.py``; through an export worker: ``test_http.py``."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
from typing import Any

import hypercorn.config
import hypercorn.trio
import pytest
import trio
from quart_trio import QuartTrio

from actors.core.batch import ProviderBatch
from actors.core.definitions import ExportDefinition
from actors.core.errors import CursorNotAdvancingError, LimitExceededError, ProviderContractError
from actors.core.principal import AppCode
from actors.core.provider.contract import MAX_COLUMNS
from actors.core.provider.request import BatchRequest
from actors.pipeline.provider.check_client import ProviderCheckClient
from actors.pipeline.provider.cursor_loop import iterate_batches
from actors.pipeline.provider.decode import parse_batch_response
from tests.actors.pipeline.provider.helpers import (
    DEFINITION,
    SERVICE,
    TASK,
    TOKEN,
    batch_data,
    envelope,
)
from web.demo_provider.app import create_demo_provider_blueprint
from web.demo_provider.data import DEMO_COLUMNS, DEMO_SCHEMA_HASH

# --- the rules, against a scripted fetcher ---------------------------------------------------


class ScriptedFetcher:
    """Returns the n-th page for the n-th request and records each request's body, encoded
    as every client encodes it (so a missing tenant field raises before anything is
    "sent"). Pages are decoded with no row limit: the loop's own rows check is tested."""

    def __init__(self, *pages: dict[str, Any]) -> None:
        self.pages = list(pages)
        self.bodies: list[dict[str, Any]] = []

    async def __call__(self, request: BatchRequest) -> ProviderBatch:
        self.bodies.append(request.to_json())
        raw = json.dumps(envelope(self.pages[len(self.bodies) - 1])).encode()
        return parse_batch_response(raw, service=SERVICE, limit=10**6, max_columns=MAX_COLUMNS)


async def collect(
    fetcher: ScriptedFetcher, definition: ExportDefinition = DEFINITION, **task: Any
) -> list[ProviderBatch]:
    async with contextlib.aclosing(
        iterate_batches(fetcher, definition, **{**TASK, **task})
    ) as stream:
        return [batch async for batch in stream]


def page(rows: list[int], cursor: str | None, more: bool, **extra: Any) -> dict[str, Any]:
    return batch_data(
        rows=[{"id": i, "name": str(i)} for i in rows], nextCursor=cursor, hasMore=more, **extra
    )


async def test_iterate_echoes_cursor_and_snapshot_token_with_tenant_fields() -> None:
    """Later requests echo the first token unchanged; tenant fields every time."""
    fetcher = ScriptedFetcher(
        page([1, 2], "2", True),
        page([3, 4], "4", True, columns=None),
        page([5], "5", False, columns=None),
    )
    batches = await collect(fetcher)

    assert [row["id"] for b in batches for row in b.rows] == [1, 2, 3, 4, 5]
    assert [(b["cursor"], b["snapshotToken"], b["limit"]) for b in fetcher.bodies] == [
        (None, None, 2),
        ("2", "snap-1", 2),
        ("4", "snap-1", 2),
    ]
    for body in fetcher.bodies:
        assert (body["tenantId"], body["appCode"], body["requestedBy"]) == (
            "0",
            "PLATFORM",
            "1900000000000000009",
        )


async def test_iterate_accepts_later_batches_that_omit_token() -> None:
    fetcher = ScriptedFetcher(page([1, 2], "2", True), page([3], "3", False, snapshotToken=None))
    batches = await collect(fetcher)
    assert len(batches) == 2
    assert fetcher.bodies[1]["snapshotToken"] == "snap-1"


async def test_schema_hash_change_between_batches_is_permanent() -> None:
    """§19.1 "Provider 客户端：schemaHash 变化判永久失败" (§10.1)."""
    fetcher = ScriptedFetcher(
        page([1, 2], "2", True), page([3], "3", False, schemaHash="sha256:other")
    )
    with pytest.raises(ProviderContractError, match="schemaHash changed between batches"):
        await collect(fetcher)


@pytest.mark.parametrize("cursor", [None, ""], ids=["null", "empty"])
async def test_has_more_without_next_cursor_is_transient(cursor: str | None) -> None:
    """§19.1 "Provider 客户端：游标未推进判临时失败": hasMore with no nextCursor."""
    with pytest.raises(CursorNotAdvancingError):
        await collect(ScriptedFetcher(page([1, 2], cursor, True)))


async def test_cursor_not_advancing_is_transient() -> None:
    """§19.1 "Provider 客户端：游标未推进判临时失败": nextCursor equals the cursor sent."""
    fetcher = ScriptedFetcher(page([1, 2], "2", True), page([3, 4], "2", True, columns=None))
    with pytest.raises(CursorNotAdvancingError):
        await collect(fetcher)
    assert len(fetcher.bodies) == 2


async def test_snapshot_token_changed_between_batches_is_contract_error() -> None:
    fetcher = ScriptedFetcher(page([1, 2], "2", True), page([3], "3", False, snapshotToken="x"))
    with pytest.raises(ProviderContractError, match="snapshotToken changed"):
        await collect(fetcher)


async def test_rows_over_batch_size_is_contract_error() -> None:
    """§12: a batch holds at most batch-size rows (the loop's check, whatever the fetcher
    decoded)."""
    with pytest.raises(ProviderContractError, match="batch-size limit is 2 rows"):
        await collect(ScriptedFetcher(page([1, 2, 3], "3", False)))


async def test_first_batch_without_columns_is_contract_error() -> None:
    with pytest.raises(ProviderContractError, match="no columns"):
        await collect(ScriptedFetcher(page([1], "1", False, columns=None)))


async def test_iterate_requires_tenant_fields() -> None:
    """§19.1 "Provider 客户端：租户字段必填" for the loop too: nothing is sent."""
    fetcher = ScriptedFetcher(page([1], "1", False))
    with pytest.raises(ValueError, match="requestedBy"):
        await collect(fetcher, requested_by=None)
    assert fetcher.bodies == []


async def test_cursor_cycle_fails_at_the_first_repeat() -> None:
    """Issue 8 item 3(a), reported input: a → b → a with hasMore and empty rows was only
    stopped by the 30-minute deadline. Now the third answer ends the run."""
    fetcher = ScriptedFetcher(
        page([], "a", True),
        page([], "b", True, columns=None),
        page([], "a", True, columns=None),
        *[page([], "b", True, columns=None)] * 10,
    )
    with pytest.raises(CursorNotAdvancingError) as info:
        await collect(fetcher)
    assert len(fetcher.bodies) == 3
    assert "nextCursor 'a' repeated after 3 batches (it already asked for batch 2)" in str(
        info.value
    )


async def test_first_total_rows_above_max_rows_fails_before_a_second_request() -> None:
    """Issue 8 item 3(e): the announced figure alone fails the run, permanently."""
    fetcher = ScriptedFetcher(page([1, 2], "2", True, totalRows=11), page([3], "3", False))
    definition = dataclasses.replace(DEFINITION, max_rows=10)
    with pytest.raises(LimitExceededError, match="totalRows 11 in its first batch.*max-rows 10"):
        await collect(fetcher, definition)
    assert len(fetcher.bodies) == 1


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
    client = ProviderCheckClient(base_urls, TOKEN)
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
    client: ProviderCheckClient, definition: ExportDefinition, task: dict[str, Any]
) -> None:
    batches: list[ProviderBatch] = []
    fetch_one = functools.partial(client.fetch_batch, definition)
    async with contextlib.aclosing(iterate_batches(fetch_one, definition, **task)) as stream:
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
