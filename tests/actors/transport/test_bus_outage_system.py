"""A broker outage with restarts, as an operator would live it: MariaDB, the real RocketMQ
NameServer + broker, the service as real processes (docs/design-rules.md §4.2;
docs/operations.md, ExportTransportDown).

1. Before the outage an export runs through the broker.
2. The NameServer and the broker stop; the service is **restarted during the outage**. It
   starts, serves the earlier file, reports ``export_transport_up`` 0, and tasks created
   now run to SUCCEEDED before the broker returns (claimed from the database), one file
   each, their commands never sent.
3. Restarted again with the consumer off (a staged roll-out step: nothing drains the
   backlog): the scraped ``export_outbox_oldest_age_seconds`` passes 120 s.
4. The broker returns: the transport is up again and the backlog gauge reads 0 within a
   publish cycle and a sample.
5. An instance with the consumer on finishes the waiting tasks. No task ran twice, and no
   command was sent for a task that had finished.

Stops and restarts the shared broker (restarted in ``finally`` whatever happens).
"""

from __future__ import annotations

import re
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import trio
import trio_asyncio

from actors.core.models import OutboxStatus
from db.ids import IdGenerator
from db.mysql import MysqlDatabase
from db.sqlite import wall_clock_ms
from db.store import ExportStore
from tests.actors.transport.service_rocketmq_helpers import broker_sh
from tests.helpers import API, MYSQL_TEST_URL
from tests.processes import ServeProcess, poll_task, process_client
from tests.servers import Broker

#: Rows of each export: small, the outage is what is tested.
ROWS = 2000


def gauge(metrics_text: str, name: str) -> float:
    """One unlabelled sample of ``/metrics``."""
    match = re.search(rf"^{name} (\S+)$", metrics_text, re.MULTILINE)
    assert match, f"{name} not in /metrics"
    return float(match.group(1))


async def scrape(url: str, name: str) -> float:
    async with httpx.AsyncClient(base_url=url, timeout=10) as c:
        return gauge((await c.get("/metrics")).text, name)


async def wait_gauge(url: str, name: str, ok: object, timeout: float, what: str) -> float:
    """Scrape until ``ok(value)``; the value. Fails naming ``what``."""
    last = None
    with trio.move_on_after(timeout):
        while True:
            last = await scrape(url, name)
            if ok(last):  # type: ignore[operator]
                return last
            await trio.sleep(0.2)
    pytest.fail(f"not within {timeout:g}s: {what} (last {name} = {last})")


async def create(url: str, rows: int = ROWS) -> str:
    async with process_client(url) as c:
        body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": rows}}
        created = (await c.post(API, json=body)).json()
    assert created["code"] == "200", created
    return str(created["data"]["id"])


async def stop(proc: ServeProcess) -> None:
    proc.proc.send_signal(signal.SIGTERM)
    assert await proc.wait(timeout=90) == 0, proc.log.read_text()[-4000:]


def files_of(data: Path, task_id: str) -> list[Path]:
    folder = data / "files" / "exports" / task_id
    return sorted(folder.iterdir()) if folder.exists() else []


@pytest.fixture
async def outage_store() -> AsyncIterator[tuple[str, ExportStore]]:
    """A database of its own on the test MariaDB (its URL, and a store to read it)."""
    url = f"{MYSQL_TEST_URL}_outage{uuid.uuid4().hex[:6]}"
    async with trio_asyncio.open_loop() as loop:
        db = MysqlDatabase(url, loop)
        await db.migrate()
        try:
            yield url, ExportStore(db, IdGenerator(wall_clock_ms), topic="unused")
        finally:
            with trio.CancelScope(shield=True):
                await db.drop_database()
                await db.aclose()


@pytest.mark.rocketmq
async def test_a_broker_outage_with_restarts_loses_nothing_and_runs_nothing_twice(
    rocketmq_broker: Broker,
    outage_store: tuple[str, ExportStore],
    tmp_path: Path,
    figures: dict[str, str],
) -> None:
    database_url, store = outage_store
    data = tmp_path / "data"
    env = {
        "FILE_EXPORT_DATABASE_URL": database_url,
        "FILE_EXPORT_TRANSPORT": "rocketmq",
        "MQ_TOPIC_PREFIX": rocketmq_broker.topic_prefix,
        "ROCKETMQ_NAME_SERVER": rocketmq_broker.name_server,
        "FILE_EXPORT_RECONCILER_ENABLED": "true",
        "FILE_EXPORT_PUBLISHER_ENABLED": "true",
        "FILE_EXPORT_CONSUMER_ENABLED": "true",
        "FILE_EXPORT_CONSUMER_CONCURRENCY": "2",
        "FILE_EXPORT_CONSUMER_POLL_MS": "500",
        "FILE_EXPORT_TRANSPORT_CHECK_SECONDS": "0.5",
        "FILE_EXPORT_PUBLISHER_POLL_MS": "200",
        "FILE_EXPORT_RECONCILER_POLL_MS": "500",
        "FILE_EXPORT_METRICS_SAMPLE_SECONDS": "0.5",
        "FILE_EXPORT_SHUTDOWN_GRACE_SECONDS": "5",
        "PYTHONFAULTHANDLER": "1",
    }
    procs: list[ServeProcess] = []

    def start(name: str, **more: str) -> ServeProcess:
        proc = ServeProcess(data, tmp_path / f"{name}.log", **{**env, **more})
        procs.append(proc)
        return proc

    broker_down = False
    try:
        # 1. the bus works: an export through the broker
        first = start("first")
        url = await first.ready(timeout=60)
        await wait_gauge(url, "export_transport_up", lambda v: v == 1, 60, "transport up")
        earlier = await create(url)
        done = await poll_task(url, earlier, {"SUCCEEDED", "FAILED"}, timeout=120)
        assert done["status"] == "SUCCEEDED", done
        earlier_size = int(done["sizeBytes"])

        # 2. the broker goes down, and the service is restarted during the outage
        broker_down = True
        await broker_sh("stop", rocketmq_broker)
        await stop(first)
        during = start("during")
        url = await during.ready(timeout=60)
        async with process_client(url) as c:
            assert (await c.get("/healthz")).status_code == 200
            download = await c.get(f"{API}/{earlier}/download")
            assert download.status_code == 200 and len(download.content) == earlier_size
        await wait_gauge(url, "export_transport_up", lambda v: v == 0, 30, "transport down")
        async with httpx.AsyncClient(base_url=url, timeout=10) as c:
            details = (await c.get("/healthz/details")).json()
        assert details["status"] == "degraded" and details["ready"] == "ok", details
        assert details["components"]["transport"]["status"] == "down", details
        outage_tasks = [await create(url) for _ in range(3)]
        started = trio.current_time()
        for task_id in outage_tasks:
            task = await poll_task(url, task_id, {"SUCCEEDED", "FAILED"}, timeout=120)
            assert task["status"] == "SUCCEEDED", task
            assert len(files_of(data, task_id)) == 1
        figures["outage: 3 tasks created after a restart during the outage"] = (
            f"SUCCEEDED {trio.current_time() - started:.1f} s after their creation,"
            " claimed from the database"
        )
        await stop(during)

        # 3. consumer off (staged roll-out): the backlog gauge sees the outage
        backlog = start("backlog", FILE_EXPORT_CONSUMER_ENABLED="false")
        url = await backlog.ready(timeout=60)
        waiting = [await create(url) for _ in range(2)]
        aged = await wait_gauge(
            url,
            "export_outbox_oldest_age_seconds",
            lambda v: v > 120,
            200,
            "the backlog gauge passing 120 s during the outage",
        )
        assert await scrape(url, "export_transport_up") == 0
        figures["outage: backlog gauge with the consumer off"] = f"scraped {aged:.1f} s"

        # 4. the broker returns: transport up, backlog drained
        await broker_sh("start", rocketmq_broker)
        broker_down = False
        await wait_gauge(url, "export_transport_up", lambda v: v == 1, 60, "transport up")
        back = trio.current_time()
        await wait_gauge(
            url, "export_outbox_oldest_age_seconds", lambda v: v == 0, 10, "backlog drained"
        )
        figures["outage: backlog gauge back to 0 after the transport came up"] = (
            f"{trio.current_time() - back:.1f} s"
        )
        await stop(backlog)

        # 5. a consuming instance finishes the waiting tasks
        after = start("after")
        url = await after.ready(timeout=60)
        for task_id in waiting:
            task = await poll_task(url, task_id, {"SUCCEEDED", "FAILED"}, timeout=120)
            assert task["status"] == "SUCCEEDED", task
            assert len(files_of(data, task_id)) == 1
        await stop(after)

        # no task ran twice; no command was sent for a task that had finished
        for task_id in [earlier, *outage_tasks, *waiting]:
            task = await store.get_task(int(task_id))
            assert task is not None
            assert (task.attempt_count, task.dispatch_version) == (1, 1), task_id
        for task_id in outage_tasks:
            (row,) = await store.list_outbox(int(task_id))
            assert row.status == OutboxStatus.SENT and row.attempt_count == 0, row
            assert row.last_error is not None and "claimed from the database" in row.last_error
        for proc in procs:
            text = proc.log.read_text()
            for bad in ("Traceback", "Fatal Python error", "Segmentation"):
                assert bad not in text, f"{bad} in {proc.log.name}:\n{text[-4000:]}"
    finally:
        for proc in procs:
            proc.close()
        if broker_down:
            with trio.CancelScope(shield=True), trio.move_on_after(900):
                await broker_sh("start", rocketmq_broker)
