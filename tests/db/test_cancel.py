"""Cancel in the store, on SQLite and MariaDB: PENDING and RUNNING become CANCELLED in one
transaction; the unsent command is closed and a late one is the terminal no-claim; a
running attempt's fenced writes match nothing; the reconciler leaves a CANCELLED task
alone; a manual retry starts it again; against the final commit exactly one wins."""

from __future__ import annotations

import trio

from actors.core.dispatch import NoClaim
from actors.core.models import OutboxStatus, TaskStatus
from actors.core.outcomes import CancelOutcome, ManualRetryOutcome
from db.store import ExportStore
from tests.helpers import claim, complete, create, exec_sql

MESSAGE = "cancelled by user 7"


async def test_cancel_of_a_pending_task_closes_its_unsent_command(store: ExportStore) -> None:
    task = await create(store)
    result = await store.cancel_task(task.id, MESSAGE)
    assert result is not None and result.outcome == CancelOutcome.CANCELLED
    assert result.task.status == TaskStatus.CANCELLED
    assert result.task.failure_message == MESSAGE and result.task.completed_at is not None
    [row] = await store.list_outbox(task.id)
    assert row.status == OutboxStatus.SENT and row.last_error == "not sent: the task was cancelled"
    assert await store.claim_due_outbox("publisher", 30, 10) == []  # never sent
    # A command already on its way arrives anyway: acked as the terminal no-claim.
    late = await store.claim_task(task.id, task.dispatch_version, "owner-a", 10, 60)
    assert late.task is None and late.no_claim == NoClaim.TERMINAL


async def test_cancel_is_idempotent_and_refused_once_the_task_ended(store: ExportStore) -> None:
    task = await create(store)
    await store.cancel_task(task.id, MESSAGE)
    again = await store.cancel_task(task.id, "cancelled by user 8")
    assert again is not None and again.outcome == CancelOutcome.ALREADY_CANCELLED
    assert again.task.failure_message == MESSAGE  # the first cancel's record stays

    done = await create(store, user_id=8)
    running = await claim(store, done)
    assert await complete(store, running, object_key="exports/1/f.xlsx")
    refused = await store.cancel_task(done.id, MESSAGE)
    assert refused is not None and refused.outcome == CancelOutcome.NOT_CANCELLABLE
    assert refused.task.status == TaskStatus.SUCCEEDED
    assert await store.cancel_task(123456789, MESSAGE) is None


async def test_cancel_of_a_running_task_fences_out_every_write_of_the_attempt(
    store: ExportStore,
) -> None:
    task = await create(store)
    running = await claim(store, task)
    assert await store.record_object_key(running, "owner-a", "exports/1/a.xlsx")
    result = await store.cancel_task(task.id, MESSAGE)
    assert result is not None and result.outcome == CancelOutcome.CANCELLED
    assert result.task.lease_owner is None and result.task.lease_until is None
    assert result.task.object_key == "exports/1/a.xlsx"  # a manual retry deletes a leftover
    assert not await store.report_progress(running, "owner-a", 10, 100)
    assert not await store.renew_lease(running, "owner-a", 10)
    assert not await complete(store, running, object_key="exports/1/a.xlsx")
    assert not await store.fail_task(running, "owner-a", "boom")
    assert not await store.release_lease(running, "owner-a")
    after = await store.get_task(task.id)
    assert after is not None and after.status == TaskStatus.CANCELLED
    assert after.failure_message == MESSAGE and len(await store.list_outbox(task.id)) == 1


async def test_the_reconciler_never_touches_a_cancelled_task(store: ExportStore) -> None:
    pending = await create(store)
    running = await claim(store, await create(store, user_id=8))
    for t in (pending, running):
        await store.cancel_task(t.id, MESSAGE)
    # Old enough for every duty: an expired lease, an old due time, no sent_at news.
    await exec_sql(
        store,
        "UPDATE file_export_task SET lease_until = {now-:s}, next_retry_at = {now-:s},"
        " expires_at = {now-:s}",
        {"s": 86400},
    )
    await exec_sql(store, "DELETE FROM file_export_outbox")  # not even a missing command
    assert await store.expired_leases(10) == []
    assert await store.redispatch_missing_outbox(0, 10) == 0
    assert await store.redispatch_stale_sent(0, 0, 10) == 0
    assert await store.expired_files(10) == []
    for t in (pending, running):
        now = await store.get_task(t.id)
        assert now is not None and now.status == TaskStatus.CANCELLED
        assert await store.list_outbox(t.id) == []


async def test_a_cancelled_task_is_retried_by_hand_like_a_failed_one(store: ExportStore) -> None:
    task = await create(store)
    await store.cancel_task(task.id, MESSAGE)
    cancelled = await store.get_task(task.id)
    assert cancelled is not None
    outcome, retried = await store.manual_retry(cancelled)
    assert outcome == ManualRetryOutcome.RETRIED and retried is not None
    assert retried.status == TaskStatus.PENDING and retried.dispatch_version == 2
    assert retried.failure_message is None and retried.completed_at is None
    newest = (await store.list_outbox(task.id))[-1]
    assert (newest.dispatch_version, newest.status) == (2, OutboxStatus.PENDING)


async def test_cancel_racing_the_final_commit_exactly_one_wins(store: ExportStore) -> None:
    """Both transitions start together, many times: the row lock lets exactly one land."""
    winners: list[str] = []
    for i in range(12):
        task = await claim(store, await create(store, user_id=100 + i))
        results: dict[str, object] = {}

        async def commit(t=task, r=results) -> None:  # type: ignore[no-untyped-def]
            r["commit"] = await complete(store, t)

        async def cancel(t=task, r=results) -> None:  # type: ignore[no-untyped-def]
            r["cancel"] = await store.cancel_task(t.id, MESSAGE)

        async with trio.open_nursery() as nursery:
            # Alternate which one is started first.
            for fn in (commit, cancel) if i % 2 else (cancel, commit):
                nursery.start_soon(fn)
        final = await store.get_task(task.id)
        assert final is not None
        cancel_result = results["cancel"]
        assert cancel_result is not None
        cancelled = cancel_result.outcome == CancelOutcome.CANCELLED  # type: ignore[attr-defined]
        assert cancelled != results["commit"], results  # exactly one landed
        assert final.status == (TaskStatus.CANCELLED if cancelled else TaskStatus.SUCCEEDED)
        if not cancelled:
            assert cancel_result.outcome == CancelOutcome.NOT_CANCELLABLE  # type: ignore[attr-defined]
        winners.append(final.status.value)
    print(f"\ncancel vs final commit, 12 races on {store.db.dialect.name}: {winners}")
