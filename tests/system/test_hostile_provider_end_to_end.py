"""A misbehaving Provider over real HTTP against the real service (issue 8 items 3 and 4,
issue 13 item 6): every run ends quickly, with a precise one-line ``failureMessage``, no
file left behind, no retries spent on answers that can never work, and logs that neither
flood nor lie.

Each export type of the test registry is one hostile behaviour of one Provider served by
hypercorn on port 0; the service runs in-process (SQLite, embedded bus) except for the log
test, which starts the real ``export-center serve`` process so its real log formatting is
what is checked.
"""

from __future__ import annotations

import io
import json
import logging
import re
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import openpyxl
import pytest
import trio
from hypercorn.config import Config
from hypercorn.trio import serve as hypercorn_serve
from quart import Response, request
from quart_trio import QuartTrio

from actors.runtime import Runtime
from tests.helpers import API, client_for, make_settings, running_service, wait_for_status
from tests.processes import ServeProcess, poll_task, process_client

TOKEN = "hostile-provider-token"
FORGED = "boom\n2026-12-01 00:00:00,000 CRITICAL actors.runtime: FORGED"
COLUMNS = [
    {"key": "id", "title": "ID", "type": "INTEGER"},
    {"key": "name", "title": "Name", "type": "STRING"},
]
#: export type -> (batch-size, max-rows, max-attempts)
TYPES: dict[str, tuple[int, int, int]] = {
    "CYCLE": (50, 1000, 2),
    "DRIP": (50, 1000, 2),
    "WIDE": (50, 1000, 3),
    "FORGE": (50, 1000, 3),
    "OVER": (50, 100, 3),
    "BIG_TOTAL": (50, 1000, 3),
    "HUGE_INT": (50, 1000, 3),
    "LONG_INT": (50, 1000, 3),
    "SHORT": (50, 1000, 3),
}
PERMISSION = "platform:customer:export"


def registry_yaml() -> str:
    lines = ["definitions:"]
    for name, (batch_size, max_rows, attempts) in TYPES.items():
        lines += [
            f"  {name}:",
            "    provider-service: hostile-service",
            f"    provider-path: /internal/exports/v1/{name}/batches",
            f"    required-permission: {PERMISSION}",
            "    app-scope: PLATFORM",
            f"    max-rows: {max_rows}",
            f"    max-attempts: {attempts}",
            f"    batch-size: {batch_size}",
        ]
    return "\n".join(lines) + "\n"


def data(rows: list[dict[str, Any]], cursor: str | None, more: bool, **extra: Any) -> dict:
    return {
        "schemaVersion": 1,
        "schemaHash": "sha256:hostile",
        "snapshotToken": "snap",
        "columns": COLUMNS,
        "rows": rows,
        "nextCursor": cursor,
        "hasMore": more,
        **extra,
    }


def ok(payload: dict[str, Any], *, raw: dict[str, str] | None = None) -> Response:
    """An HTTP 200 envelope; ``raw`` swaps ``"@@key"`` placeholders for raw JSON literals."""
    text = json.dumps({"code": "200", "message": "success", "data": payload})
    for placeholder, literal in (raw or {}).items():
        text = text.replace(f'"{placeholder}"', literal)
    return Response(text, content_type="application/json")


def numbered(start: int, count: int) -> list[dict[str, Any]]:
    return [{"id": i, "name": f"row {i}"} for i in range(start, start + count)]


async def cycle(cursor: str | None) -> Response:
    # a -> b -> a … with hasMore and no rows: the reported input of item 3(a).
    return ok(data([], {None: "a", "a": "b", "b": "a"}[cursor], True))


async def drip(cursor: str | None) -> Response:
    async def body() -> AsyncIterator[bytes]:
        while True:  # one byte at a time, well inside the 15 s read timeout
            yield b" "
            await trio.sleep(0.25)

    return Response(body(), content_type="application/json")


WIDE_KEYS = {f"undeclared_{k:04d}": k for k in range(2000)}


async def wide(cursor: str | None) -> Response:
    # 125 rows x 2,000 undeclared keys = 250,000 ignored values: item 3(c)'s reported input.
    start = int(cursor or 0)
    count = min(50, 125 - start)
    rows = [{**WIDE_KEYS, "id": i, "name": "w"} for i in range(start, start + count)]
    more = start + count < 125
    return ok(data(rows, str(start + count), more))


async def forge(cursor: str | None) -> Response:
    return Response(
        json.dumps({"code": "E500", "message": FORGED, "data": None}),
        content_type="application/json",
    )


async def over(cursor: str | None) -> Response:
    # max-rows is 100; the first batch already announces 1,000 rows (item 3(e)). Without
    # the check the run wrote 100 rows and failed at the third batch.
    start = int(cursor or 0)
    return ok(data(numbered(start + 1, 50), str(start + 50), True, totalRows=1000))


async def big_total(cursor: str | None) -> Response:
    if cursor is None:
        return ok(data(numbered(1, 50), "50", True, totalRows=60))
    return ok(data(numbered(51, 10), "60", False, totalRows="@@t"), raw={"@@t": str(10**30)})


async def huge_int(cursor: str | None) -> Response:
    if cursor is None:
        return ok(data(numbered(1, 50), "50", True))
    rows = numbered(51, 5)
    rows[2]["id"] = "9" * 40_000  # batch 2, row 3: more digits than a cell holds
    return ok(data(rows, "55", False))


LONG = "7" * 5000


async def long_int(cursor: str | None) -> Response:
    rows = [{"id": "@@n", "name": "number"}, {"id": LONG, "name": "string"}]
    return ok(data(rows, "2", False, totalRows=2), raw={"@@n": LONG})


async def short(cursor: str | None) -> Response:
    if cursor is None:
        return ok(data(numbered(1, 50), "50", True, totalRows=120))
    return ok(data(numbered(51, 20), "70", False))


SCENARIOS: dict[str, Callable[[str | None], Awaitable[Response]]] = {
    "CYCLE": cycle,
    "DRIP": drip,
    "WIDE": wide,
    "FORGE": forge,
    "OVER": over,
    "BIG_TOTAL": big_total,
    "HUGE_INT": huge_int,
    "LONG_INT": long_int,
    "SHORT": short,
}


@dataclass
class HostileProvider:
    url: str = ""
    calls: Counter[str] = field(default_factory=Counter)


@pytest.fixture
async def hostile() -> AsyncIterator[HostileProvider]:
    state = HostileProvider()
    app = QuartTrio("hostile-provider")

    @app.post("/internal/exports/v1/<export_type>/batches")
    async def batches(export_type: str) -> Response:
        assert request.headers.get("X-Internal-Service-Token") == TOKEN
        body = await request.get_json()
        state.calls[export_type] += 1
        return await SCENARIOS[export_type](body["cursor"])

    cfg = Config()
    cfg.bind = ["127.0.0.1:0"]
    cfg.accesslog = None
    cfg.graceful_timeout = 0.5
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        [state.url] = await nursery.start(
            partial(hypercorn_serve, app, cfg, shutdown_trigger=stop.wait)
        )
        yield state
        stop.set()


@pytest.fixture
async def service(tmp_path: Path, hostile: HostileProvider) -> AsyncIterator[Runtime]:
    registry = tmp_path / "registry.yaml"
    registry.write_text(registry_yaml())
    settings = make_settings(
        tmp_path,
        registry=registry,
        demo_provider=False,
        internal_service_token=TOKEN,
        provider_urls={"hostile-service": hostile.url},
        provider_request_timeout_seconds=1,
        retry_backoff_seconds=(0.2,),
        publisher_poll_ms=100,
        reconciler_poll_ms=200,
        shutdown_grace_seconds=2,
    )
    async with running_service(settings) as rt:
        yield rt


async def run_export(service: Runtime, export_type: str) -> dict[str, Any]:
    async with client_for(service) as client:
        created = (
            await client.post(
                API, json={"exportType": export_type, "taskName": "t", "parameters": {}}
            )
        ).json()
        assert created["code"] == "200", created
        return await wait_for_status(client, created["data"]["id"], "SUCCEEDED", "FAILED")


@pytest.mark.parametrize(
    ("export_type", "attempts", "calls", "message"),
    [
        (
            "CYCLE",
            2,
            6,
            "provider cursor cycle: nextCursor 'a' repeated after 3 batches (it already "
            "asked for batch 2); with hasMore the export would never end",
        ),
        (
            "DRIP",
            2,
            2,
            "provider hostile-service did not finish answering a batch request within the "
            "total limit of 1 s (FILE_EXPORT_PROVIDER_REQUEST_TIMEOUT_SECONDS)",
        ),
        (
            "FORGE",
            1,
            1,
            "provider hostile-service answered code E500: boom\\n2026-12-01 00:00:00,000 "
            "CRITICAL actors.runtime: FORGED",
        ),
        (
            "OVER",
            1,
            1,
            "provider announced totalRows 1000 in its first batch; export type OVER allows "
            "at most max-rows 100",
        ),
        (
            "BIG_TOTAL",
            1,
            2,
            "provider hostile-service: totalRows of about 10^30 is larger than the task can "
            "hold (9223372036854775807)",
        ),
        (
            "HUGE_INT",
            1,
            2,
            "batch 2 row 3 column 'id': integer of 40000 digits is too long for a cell of "
            "32767 characters",
        ),
    ],
    ids=[
        "cursor-cycle",
        "slow-drip",
        "crlf-message",
        "total-over-max-rows",
        "total-over-bigint",
        "integer-over-cell",
    ],
)
async def test_hostile_provider_fails_the_task_at_once_with_a_precise_message(
    service: Runtime,
    hostile: HostileProvider,
    export_type: str,
    attempts: int,
    calls: int,
    message: str,
) -> None:
    """Transient breaches (cursor cycle, slow drip) are retried up to max-attempts, each
    attempt stopped at the first proof; permanent ones (contract, limits, values no cell
    can hold) fail on the first attempt. Either way: FAILED, one line, no file."""
    task = await run_export(service, export_type)

    assert task["status"] == "FAILED"
    assert task["failureMessage"] == message
    assert "\n" not in task["failureMessage"] and "\r" not in task["failureMessage"]
    assert task["attemptCount"] == attempts
    assert hostile.calls[export_type] == calls
    assert await service.storage.list_objects() == []


async def test_undeclared_keys_make_one_summary_line_not_a_flood(
    service: Runtime, hostile: HostileProvider, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 8 item 3(c), reported input (250,000 ignored values): the export succeeds and
    the whole run logs one short warning about the data."""
    with caplog.at_level(logging.DEBUG):
        task = await run_export(service, "WIDE")

    assert task["status"] == "SUCCEEDED", task["failureMessage"]
    assert task["processedRows"] == "125"
    about_data = [r for r in caplog.records if r.getMessage() == "provider data warnings"]
    assert len(about_data) == 1
    (line,) = about_data
    assert line.levelno == logging.WARNING
    assert "250000 values of at least 1000 undeclared fields ignored in 125 rows" in (
        "; ".join(line.warnings)  # type: ignore[attr-defined]
    )
    assert max(len(r.getMessage()) for r in caplog.records) < 2000


async def test_fewer_rows_than_announced_keep_the_announced_total_and_warn(
    service: Runtime, hostile: HostileProvider, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 13 item 6: the final commit no longer overwrites totalRows with the rows
    written; the shortfall is in the run's warning summary."""
    with caplog.at_level(logging.WARNING):
        task = await run_export(service, "SHORT")

    assert task["status"] == "SUCCEEDED", task["failureMessage"]
    assert (task["processedRows"], task["totalRows"]) == ("70", "120")
    warnings = [
        "; ".join(r.warnings)  # type: ignore[attr-defined]
        for r in caplog.records
        if r.getMessage() == "provider data warnings"
    ]
    assert len(warnings) == 1
    assert (
        "provider announced totalRows 120 but its last batch ended after 70 rows" in (warnings[0])
    )


async def test_integers_over_python_digit_limit_are_exported_exactly(
    service: Runtime, hostile: HostileProvider
) -> None:
    """Issue 13 item 6, reported input: a 5,000-digit integer (as a JSON number and as a
    string) raised ValueError and was retried as transient; now its digits are the cell."""
    task = await run_export(service, "LONG_INT")
    assert task["status"] == "SUCCEEDED", task["failureMessage"]
    async with client_for(service) as client:
        download = await client.get(f"{API}/{task['id']}/download")
    sheet = openpyxl.load_workbook(io.BytesIO(download.content))["Export"]
    assert [sheet["A2"].value, sheet["A3"].value] == [LONG, LONG]
    assert hostile.calls["LONG_INT"] == 1


#: A line the service wrote: time, level, logger.
LOG_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) ")


@pytest.mark.parametrize("log_format", ["text", "json"])
async def test_served_process_logs_cannot_be_forged_and_hide_provider_credentials(
    tmp_path: Path, hostile: HostileProvider, log_format: str
) -> None:
    """Issue 8 items 3(d) and 4 in the real process at the default level: a Provider
    message with CR/LF stays inside one line, and a base URL with ``user:password@`` is
    neither printed by httpx's request line nor anywhere else — in both log formats
    (issue 12: ``FILE_EXPORT_LOG_FORMAT``)."""
    registry = tmp_path / "registry.yaml"
    registry.write_text(registry_yaml())
    url = hostile.url.replace("http://", "http://exporter:s3cret-pw@")
    proc = ServeProcess(
        tmp_path / "data",
        tmp_path / "serve.log",
        FILE_EXPORT_DEMO_PROVIDER="false",
        FILE_EXPORT_REGISTRY=str(registry),
        FILE_EXPORT_PROVIDER_URLS=json.dumps({"hostile-service": url}),
        INTERNAL_SERVICE_TOKEN=TOKEN,
        FILE_EXPORT_PUBLISHER_POLL_MS="100",
        FILE_EXPORT_LOG_FORMAT=log_format,
    )
    try:
        await _forge_and_check(proc, hostile, log_format)
    finally:
        proc.close()


async def _forge_and_check(proc: ServeProcess, hostile: HostileProvider, log_format: str) -> None:
    base = await proc.ready()
    ids = []
    async with process_client(base) as c:
        for export_type in ("FORGE", "SHORT"):
            body = {"exportType": export_type, "taskName": "t\r\nFORGED", "parameters": {}}
            ids.append((await c.post(API, json=body)).json()["data"]["id"])
    forged, short_task = [await poll_task(base, i, {"SUCCEEDED", "FAILED"}) for i in ids]
    assert forged["status"] == "FAILED" and short_task["status"] == "SUCCEEDED"
    assert hostile.calls["SHORT"] == 2  # the requests really went out, with credentials

    log = proc.log.read_text()
    assert "FORGED" in log  # the failure is logged …
    if log_format == "json":  # … every line is one of our objects …
        records = [json.loads(line) for line in log.splitlines()]
        assert all(r["level"] in ("debug", "info", "warning", "error", "critical") for r in records)
        # … whose messages and error fields are checked below
        log = "\n".join(f"{r['message']} {r.get('error', '')}" for r in records)
    for line in log.splitlines():
        if log_format == "text":
            assert LOG_LINE.match(line), line  # … and every line is one of ours
        assert not line.startswith("2026-12-01 00:00:00,000 CRITICAL"), line
    escaped = "answered code E500: boom\\n2026-12-01 00:00:00,000 CRITICAL"
    # a text line shows the field JSON-quoted (error="…"), its backslash escaped once more
    assert (escaped if log_format == "json" else json.dumps(escaped)[1:-1]) in log
    raw = proc.log.read_text()
    assert "s3cret-pw" not in raw
    assert "HTTP Request" not in raw
