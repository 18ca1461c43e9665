"""Hand-backs are bounded (issue 22 item 3; actors/core/handback.py): a task whose runs keep
being ended by a shutdown, a database fault or a watchdog outage is handed back each
time, recorded on the task and in its history, and past FILE_EXPORT_MAX_HANDBACKS in a
row each hand-back counts as an attempt, so max_attempts ends it FAILED with a message
saying why.

On pytest-trio's autojump mock clock with the DB clock following it, through the real
executor (``actors/supervised/execution.py``) over the real store (SQLite and MariaDB). Each run is
ended the way the service ends it: the runtime's shutdown aborts the slot's current run
(``AbortReason.SHUTDOWN``), the store gives up on a write the run needed, the database is
down while the watchdog renews (lease 10 s, heartbeat 2 s: the watchdog aborts at ~8 s).
"""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing

from actors.core.db_retry import DbRetryPolicy
from actors.core.models import TaskStatus
from actors.core.outcomes import AbortReason, ExportResult
from actors.pipeline.attempt import RunContext
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.storage.local import LocalDirectoryStorage
from actors.supervised.execution import TaskExecutor
from db.database import DatabaseUnavailableError
from db.store import ExportStore
from tests.faults import FaultyDatabase
from tests.helpers import TOPIC, claim, create, make_executor, start_file

MESSAGE = (
    "handed back 4 times in a row (shutdown, database fault, watchdog outage) without"
    " finishing; counted as attempt 3 of 3"
)


async def test_a_task_handed_back_again_and_again_ends_failed_saying_why(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = settings.model_copy(update={"max_handbacks": 1})
    faulty = FaultyDatabase(store.db)
    fs = ExportStore(
        faulty,  # type: ignore[arg-type]
        store.ids,
        topic=TOPIC,
        retry_policy=DbRetryPolicy(budget_seconds=30),
    )
    task = await create(fs, max_attempts=3)
    executor = make_executor(fs, storage, settings, metrics, lambda ctx: run(ctx))
    ending = ""

    async def run(ctx: RunContext) -> ExportResult:
        await start_file(ctx)
        if ending == "database":
            raise DatabaseUnavailableError("cannot connect to MySQL: (2003, ...)")
        await trio.sleep(1000)  # a long export: only an abort ends it
        raise AssertionError("unreachable")

    async def shutdown_after(executor: TaskExecutor, seconds: float) -> None:
        # What the runtime does to a run still going at the end of the grace period.
        await trio.sleep(seconds)
        assert executor.current is not None
        executor.current.abort(AbortReason.SHUTDOWN)

    async def outage(start: float, end: float) -> None:
        await trio.sleep_until(start)
        faulty.down = True
        await trio.sleep_until(end)
        faulty.down = False

    seen = []
    with caplog.at_level(logging.WARNING, logger="actors.supervised"):
        for ending in ("shutdown", "database", "watchdog", "shutdown"):
            current = await fs.get_task(task.id)
            assert current.status == TaskStatus.PENDING
            running = await claim(
                fs,
                current,
                settings.instance_id,
                lease=settings.task_lease_seconds,
                max_duration=settings.max_duration_minutes * 60,
            )
            t0 = trio.current_time()
            async with trio.open_nursery() as n:
                if ending == "shutdown":
                    n.start_soon(shutdown_after, executor, 5)
                elif ending == "watchdog":
                    n.start_soon(outage, t0 + 1, t0 + 9)
                await executor.execute(running)
            after = await fs.get_task(task.id)
            seen.append((after.status, after.attempt_count, after.handback_count))
            assert await storage.list_objects() == []  # every partial file deleted

    # 1 free hand-back, then each one counts: attempts 1, 2, and 3 of 3 ends it.
    assert seen == [
        (TaskStatus.PENDING, 0, 1),
        (TaskStatus.PENDING, 1, 2),
        (TaskStatus.PENDING, 2, 3),
        (TaskStatus.FAILED, 3, 4),
    ]
    failed = await fs.get_task(task.id)
    assert failed.failure_message == MESSAGE
    assert failed.completed_at is not None and failed.lease_owner is None
    events = [e for e in await fs.list_task_events(task.id) if e.kind == "handed_back"]
    assert [e.detail["cause"] for e in events] == [
        "shutdown",
        "database fault",
        "watchdog outage",
        "shutdown",
    ]
    assert events[-1].detail["message"] == MESSAGE and events[-1].detail["final"] is True
    completed = metrics.registry.get_sample_value(
        "export_task_completed_total", {"type": task.export_type, "status": "FAILED"}
    )
    assert completed == 1
    assert any(
        r.getMessage() == "task failed"
        and (r.taskId, r.dispatchVersion) == (str(task.id), 4)  # type: ignore[attr-defined]
        and (r.reason, r.error) == ("interrupted by shutdown", MESSAGE)  # type: ignore[attr-defined]
        for r in caplog.records
    )
