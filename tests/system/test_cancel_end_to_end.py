"""Cancel a running 200,000-row export through the real service (HTTP API, embedded bus,
consumer slot, demo Provider over HTTP, export worker process, storage) and measure the
time from the cancel request to the slot being free. The figures are printed, not
asserted (run with ``-s`` to see them):

    .venv/bin/pytest -s tests/system/test_cancel_end_to_end.py

* woken: the API of the process that runs the export wakes its watchdog
  (``LocalClaims.cancelled``);
* not woken: as when the API that cancelled runs on another instance; the run stops at its
  next batch boundary, where its fenced progress write matches no row.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import trio

from actors.runtime import Runtime
from tests.helpers import API, client_for, make_settings, running_service, wait_for_status

ROWS = 200_000


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[Runtime]:
    settings = make_settings(
        tmp_path,
        publisher_poll_ms=200,
        reconciler_poll_ms=500,
        consumer_concurrency=1,
        shutdown_grace_seconds=5,
        task_heartbeat_seconds=10,  # the cancel must not wait for it
        task_lease_seconds=60,
    )
    async with running_service(settings) as rt:
        yield rt


async def running_export(client: httpx.AsyncClient, user: int) -> str:
    created = (
        await client.post(
            API,
            json={
                "exportType": "CUSTOMER_LIST",
                "taskName": f"big {user}",
                "parameters": {"rowCount": ROWS},
            },
        )
    ).json()
    assert created["code"] == "200", created
    task_id: str = created["data"]["id"]
    with trio.fail_after(60):
        while True:  # running, with some batches written
            task = (await client.get(f"{API}/{task_id}")).json()["data"]
            assert task["status"] in ("PENDING", "RUNNING"), task
            if task["status"] == "RUNNING" and int(task["processedRows"]) >= 2000:
                return task_id
            await trio.sleep(0.01)


async def cancel_and_time_free_slot(rt: Runtime, client: httpx.AsyncClient, task_id: str) -> float:
    """POST the cancel, then wait for the slot to be free; seconds from the request."""
    started = trio.current_time()
    body = (await client.post(f"{API}/{task_id}/cancel")).json()
    assert body["code"] == "200" and body["data"]["status"] == "CANCELLED", body
    with trio.fail_after(30):
        while any(slot.current is not None for slot in rt.slots):
            await trio.sleep(0.001)
    return trio.current_time() - started


async def assert_nothing_left(rt: Runtime, client: httpx.AsyncClient, task_id: str) -> None:
    task = await wait_for_status(client, task_id, "CANCELLED", "SUCCEEDED", "FAILED")
    assert task["status"] == "CANCELLED" and task["dispatchVersion"] == 1, task
    assert int(task["processedRows"]) < ROWS
    leftovers = [o.key for o in await rt.storage.list_objects() if f"/{task_id}/" in o.key]
    assert leftovers == []  # the partial file was deleted


async def test_cancel_of_a_running_200k_export_frees_the_slot_without_waiting(
    service: Runtime,
) -> None:
    rt = service
    figures = {}
    async with client_for(rt, user=6006) as client:
        task_id = await running_export(client, 6006)
        figures["woken"] = await cancel_and_time_free_slot(rt, client, task_id)
        await assert_nothing_left(rt, client, task_id)

        # As if another instance's API had cancelled it: no wake-up reaches this run.
        for slot in rt.slots:
            slot.local.cancelled = lambda task_id: None  # type: ignore[method-assign]
        task_id = await running_export(client, 6007)
        figures["batch boundary"] = await cancel_and_time_free_slot(rt, client, task_id)
        await assert_nothing_left(rt, client, task_id)
        text = (await client.get("/metrics")).text
    assert 'export_task_completed_total{status="CANCELLED",type="CUSTOMER_LIST"} 2.0' in text
    print(
        f"\ncancel request -> slot free on a running {ROWS:,}-row export "
        f"(heartbeat {rt.settings.task_heartbeat_seconds:g}s): "
        + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in figures.items())
    )
