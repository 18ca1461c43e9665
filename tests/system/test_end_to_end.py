"""End to end through the real service: HTTP API → outbox → publisher → embedded bus →
consumer slot → demo Provider over real HTTP → XLSX → storage → download → openpyxl.
"""

from __future__ import annotations

import io
import math
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import openpyxl
import trio
from openpyxl.utils.escape import unescape

from actors.runtime import Runtime
from tests.helpers import API, client_for, make_settings, running_service, wait_for_status
from tests.provider_server import (
    GATED_SERVICE,
    BatchBody,
    cursor_rows,
    gated_demo_registry,
    gated_demo_table,
    serve_provider,
)
from web.demo_provider.data import DEMO_COLUMNS, customer_row

ROWS = 2500
#: rows per Provider call in the progress test
BATCH = 1000


def expected_cell(column_type: str, value: Any) -> Any:
    if value is None:
        return None
    if column_type == "STRING":
        text = value if value[:1] not in ("=", "+", "-", "@", "\t", "\r") else "'" + value
        return text[:32767]
    if column_type == "DATE":
        return datetime.fromisoformat(value)
    if column_type == "DATETIME":
        return datetime.fromisoformat(value).replace(tzinfo=None)
    return value


async def test_export_runs_end_to_end_and_downloads_a_typed_xlsx(service: Runtime) -> None:
    async with client_for(service) as client:
        created = (
            await client.post(
                API,
                json={
                    "exportType": "CUSTOMER_LIST",
                    "format": "XLSX",
                    "taskName": "客户列表",
                    "parameters": {"rowCount": ROWS, "edgeCases": True},
                },
            )
        ).json()
        assert created["code"] == "200", created
        task_id = created["data"]["id"]
        assert isinstance(task_id, str) and created["data"]["status"] == "PENDING"

        task = await wait_for_status(client, task_id, "SUCCEEDED", "FAILED")
        assert task["status"] == "SUCCEEDED", task["failureMessage"]
        assert task["processedRows"] == str(ROWS) and task["totalRows"] == str(ROWS)
        assert task["attemptCount"] == 1 and task["dispatchVersion"] == 1
        assert task["fileName"].startswith("客户列表_") and task["fileName"].endswith(".xlsx")
        # the demo's 40,000-character remark was cut: the task says so, not only the log
        assert [w for w in task["warnings"] if "1 cells truncated to 32767" in w], task
        assert task["dataWarnings"][0]["kind"] == "truncated-cells"
        assert task["parameters"] == {"edgeCases": True, "rowCount": ROWS}
        assert task["lastError"] is None

        resp = await client.get(f"{API}/{task_id}/download")
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith(
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
        )
        assert "filename*=UTF-8''" in resp.headers["content-disposition"]
        assert len(resp.content) == int(task["sizeBytes"])

    wb = openpyxl.load_workbook(io.BytesIO(resp.content))
    ws = wb.worksheets[0]
    rows = list(ws.iter_rows(values_only=True))
    assert list(rows[0]) == [c.title for c in DEMO_COLUMNS]
    assert len(rows) - 1 == ROWS
    assert ws.freeze_panes == "A2"
    for customer_id in (1, 2, 3, 4, 5, 6, 7, 8, 999, ROWS):
        source = customer_row(customer_id, edge_cases=True)  # as the export asked
        got = rows[customer_id]
        for col, cell in zip(DEMO_COLUMNS, got, strict=True):
            want = expected_cell(col.type.value, source.get(col.key))
            if isinstance(cell, str):
                cell = unescape(cell)  # undo Excel's _xHHHH_ escapes, should a value need one
            if col.type.value == "DECIMAL":
                assert math.isclose(cell, float(want)), (customer_id, col.key)
            else:
                assert cell == want, (customer_id, col.key, cell, want)
    # typed cells, not strings: sortable and computable in Excel (§11)
    first = rows[10]
    types = {c.key: type(v) for c, v in zip(DEMO_COLUMNS, first, strict=True) if v is not None}
    assert types["customerId"] is int and types["active"] is bool
    assert types["creditLimit"] in (int, float) and types["registeredOn"] is datetime
    # hostile strings were stored as text with a leading apostrophe
    hostile = [unescape(str(r[2])) for r in rows[1:7]]
    assert all(h.startswith("'") for h in hostile), hostile
    assert len(rows[7][7]) == 32767


async def test_other_users_cannot_see_or_download_a_task(service: Runtime) -> None:
    async with (
        client_for(service) as owner,
        client_for(service, user=2002) as other,
        client_for(service, user=3003, tenant=9) as foreign,
        client_for(
            service, user=2002, perms=("platform:customer:export", "platform:download:all")
        ) as admin,
    ):
        created = (
            await owner.post(
                API, json={"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 10}}
            )
        ).json()
        task_id = created["data"]["id"]
        for c in (other, foreign):
            assert (await c.get(f"{API}/{task_id}")).json()["code"] == "404"
            assert (await c.get(f"{API}/{task_id}/download")).json()["code"] == "404"
            assert (await c.get(API)).json()["data"]["total"] == "0"
        assert (await admin.get(f"{API}/{task_id}")).json()["code"] == "200"
        listed = (await admin.get(API, params={"status": "PENDING,DONE"})).json()
        assert listed["code"] == "400" and "DONE" in listed["message"]  # each status checked


async def test_create_refusals_come_back_as_envelopes(service: Runtime) -> None:
    async with client_for(service, perms=()) as no_perm, client_for(service) as c:
        r = (await no_perm.post(API, json={"exportType": "CUSTOMER_LIST"})).json()
        assert r["code"] == "403" and "platform:customer:export" in r["message"]
        r = (await c.post(API, json={"exportType": "NOPE"})).json()
        assert r["code"] == "400"
        r = (
            await c.post(API, json={"exportType": "CUSTOMER_LIST", "parameters": {"k": "x" * 300}})
        ).json()
        assert r["code"] == "400" and "256" in r["message"]
        r = await c.post(API, content=b"not json")
        assert r.status_code == 200 and r.json()["code"] == "400"
        for hostile, says in (
            (b'{"exportType":"CUSTOMER_LIST","parameters":{"x":Infinity}}', "not valid JSON"),
            (b'{"exportType":"CUSTOMER_LIST","parameters":{"x":1e400}}', "finite"),
        ):
            r = (await c.post(API, content=hostile)).json()
            assert r["code"] == "400" and says in r["message"], r
        r = await c.post(API, content=b'{"exportType": "\xff\xfe"}')
        assert r.status_code == 200 and r.json()["code"] == "400"
        for path in (f"{API}/99999999999999999999999", f"{API}?page=99999999999999999999"):
            r = await c.get(path)
            assert r.status_code == 200 and r.json()["code"] in ("400", "404"), r.text
    async with httpx.AsyncClient(base_url=service.base_url) as anon:
        r = await anon.get(API)
        assert r.status_code == 401 and r.json()["code"] == "401"


async def test_duplicate_and_active_limits_over_http(service: Runtime) -> None:
    async with client_for(service, user=4004) as c:
        body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 5, "keyword": "a"}}
        first = (await c.post(API, json=body)).json()
        again = (await c.post(API, json=body)).json()
        assert again["code"] == "200" and again["data"]["id"] == first["data"]["id"]


async def test_health_and_metrics(service: Runtime) -> None:
    async with httpx.AsyncClient(base_url=service.base_url) as c:
        assert (await c.get("/healthz")).json() == {"status": "ok"}
        text = (await c.get("/metrics")).text
        for name in (
            "export_task_created_total",
            "export_outbox_oldest_age_seconds",
            "export_reconciler_action_total",
            "export_dlq_messages_total",
        ):
            assert name in text


async def test_progress_keeps_its_total_while_running(tmp_path: Path) -> None:
    """While RUNNING, processedRows grows batch by batch and totalRows holds the
    Provider's estimate.

    On any machine speed: the Provider answers the batch after rows ``c`` only once the
    test has read a progress of at least ``c - 2 batches`` (the progress a run writes lags
    its fetches by one batch, write-behind). So a first reading of ``BATCH..2*BATCH`` must
    come before a second of at least ``3*BATCH``: two readings, not a lucky timing."""
    registry = tmp_path / "registry.yaml"
    registry.write_text(gated_demo_registry(batch_size=BATCH))
    read_up_to = 0
    progressed = trio.Event()

    async def gate(body: BatchBody) -> None:
        while read_up_to < cursor_rows(body) - 2 * BATCH:
            await progressed.wait()

    seen: list[tuple[str, str | None]] = []
    async with serve_provider(gated_demo_table(gate)) as provider_url:
        settings = make_settings(
            tmp_path,
            registry=registry,
            provider_urls={GATED_SERVICE: provider_url},
            internal_service_token="gated-provider-token",
            progress_write_seconds=0,  # a write at every batch boundary
            publisher_poll_ms=200,
        )
        async with running_service(settings) as rt, client_for(rt, user=5005) as c:
            body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 12 * BATCH}}
            created = (await c.post(API, json=body)).json()
            with trio.fail_after(60):
                while True:
                    task = (await c.get(f"{API}/{created['data']['id']}")).json()["data"]
                    if task["status"] == "RUNNING" and task["processedRows"] != "0":
                        seen.append((task["processedRows"], task["totalRows"]))
                        read_up_to = max(read_up_to, int(task["processedRows"]))
                        progressed.set()
                        progressed = trio.Event()
                    if task["status"] in ("SUCCEEDED", "FAILED"):
                        break
                    await trio.sleep(0.02)
    assert task["status"] == "SUCCEEDED", task["failureMessage"]
    assert len({p for p, _ in seen}) >= 2, seen
    assert {total for _, total in seen} == {str(12 * BATCH)}
    assert [int(p) for p, _ in seen] == sorted(int(p) for p, _ in seen)
