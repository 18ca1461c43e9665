"""A running export that is cancelled (``actors/core/cancel.py``): the slot's run aborts
like one whose lease was lost, deletes its partial file and writes nothing else; woken
through this process's ``LocalClaims`` it does not wait for the next heartbeat; against
the final commit exactly one of SUCCEEDED and CANCELLED wins and the loser leaves no file.

Mock clock and DB clock move together (``tests/conftest.py``); on MariaDB the clock holds
while a query is in flight.
"""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing

from actors.core.models import TaskStatus
from actors.core.outcomes import CancelOutcome, ExportResult
from actors.pipeline.attempt import RunContext
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.storage.local import LocalDirectoryStorage
from actors.supervised.local_claims import LocalClaims
from db.store import ExportStore
from tests.helpers import claimed, make_executor, start_file

MESSAGE = "cancelled by user 7"


async def test_a_cancel_in_this_process_wakes_the_run_at_once(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
    caplog: pytest.LogCaptureFixture,
) -> None:
    task = await claimed(store, settings)
    local = LocalClaims()
    keys: list[str] = []
    started = trio.Event()

    async def pipeline(ctx: RunContext) -> ExportResult:
        keys.append(await start_file(ctx))
        started.set()
        await trio.sleep(10_000)  # between batches: only the abort ends this
        raise AssertionError("not reached")

    executor = make_executor(store, storage, settings, metrics, pipeline, local=local)
    freed_at: list[float] = []
    with caplog.at_level(logging.INFO, logger="actors.supervised"):
        async with trio.open_nursery() as nursery:

            async def run() -> None:
                await executor.execute(task)
                freed_at.append(trio.current_time())

            nursery.start_soon(run)
            await started.wait()
            await trio.sleep(0.5)  # well inside the first heartbeat period
            result = await store.cancel_task(task.id, MESSAGE)
            assert result is not None and result.outcome == CancelOutcome.CANCELLED
            cancelled_at = trio.current_time()
            local.cancelled(task.id)  # what the API does after its commit
    took = freed_at[0] - cancelled_at
    # A user's cancel is an outcome, not a fault: logged at INFO, never a WARNING.
    aborted = [r for r in caplog.records if "nothing written" in r.getMessage()]
    assert [r.levelno for r in aborted] == [logging.INFO], aborted
    assert took < settings.task_heartbeat_seconds  # woken, not found at the next heartbeat
    print(f"\ncancel -> slot free (mock clock, {store.db.dialect.name}): {took:.3f}s")
    assert await storage.size(keys[0]) is None  # partial file deleted
    after = await store.get_task(task.id)
    assert after is not None and after.status == TaskStatus.CANCELLED
    assert after.failure_message == MESSAGE and after.dispatch_version == 1
    assert len(await store.list_outbox(task.id)) == 1  # no retry, no hand-back
    assert executor.current is None and not local.holds(task.id)


async def test_a_cancel_on_another_instance_ends_the_run_at_its_next_heartbeat(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """No poke (the API that cancelled runs elsewhere): the watchdog's renewal matches 0
    rows at the latest one heartbeat later; the run's progress write at its next batch
    boundary would catch it sooner (``actors.pipeline.runner``)."""
    task = await claimed(store, settings)
    keys: list[str] = []

    async def pipeline(ctx: RunContext) -> ExportResult:
        keys.append(await start_file(ctx))
        assert (await store.cancel_task(task.id, MESSAGE)) is not None
        await trio.sleep(10_000)
        raise AssertionError("not reached")

    started = trio.current_time()
    await make_executor(store, storage, settings, metrics, pipeline, local=LocalClaims()).execute(
        task
    )
    assert trio.current_time() - started <= settings.task_heartbeat_seconds + 0.1
    assert await storage.size(keys[0]) is None
    after = await store.get_task(task.id)
    assert after is not None and after.status == TaskStatus.CANCELLED
    assert len(await store.list_outbox(task.id)) == 1


async def test_cancel_racing_the_final_commit_leaves_no_file_for_the_loser(
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """The run returns its file while the cancel commits (real clock, real race on
    MariaDB): exactly one of SUCCEEDED (file kept) and CANCELLED (file deleted)."""
    seen: list[str] = []
    for i in range(8):
        task = await claimed(store, settings)
        local = LocalClaims()
        keys: list[str] = []
        returning = trio.Event()

        async def pipeline(
            ctx: RunContext, keys: list[str] = keys, returning: trio.Event = returning
        ) -> ExportResult:
            key = await start_file(ctx)
            keys.append(key)
            returning.set()
            return ExportResult(key, "customers.xlsx", "application/x", 18, 1)

        answers: list[object] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                make_executor(store, storage, settings, metrics, pipeline, local=local).execute,
                task,
            )
            await returning.wait()
            for _ in range(i % 3):
                await trio.sleep(0)  # shift the cancel against the commit a little
            result = await store.cancel_task(task.id, MESSAGE)
            assert result is not None
            answers.append(result.outcome)
            if result.outcome == CancelOutcome.CANCELLED:
                local.cancelled(task.id)
        final = await store.get_task(task.id)
        assert final is not None
        if final.status == TaskStatus.SUCCEEDED:
            assert answers == [CancelOutcome.NOT_CANCELLABLE]
            assert await storage.size(keys[0]) == len(b"partial xlsx bytes")
        else:
            assert final.status == TaskStatus.CANCELLED
            assert answers == [CancelOutcome.CANCELLED]
            assert await storage.size(keys[0]) is None
        seen.append(final.status.value)
    print(f"\nslot commit vs cancel on {store.db.dialect.name}: {seen}")
