"""Store contract: leases, commit and retry, by DB time (runs on the mock clock).

Docstrings name the §19.1 bullet a test covers.
"""

from __future__ import annotations

import pytest
import trio

from actors.core.admission import CreateLimits
from actors.core.handback import HandBackCause, HandBackFate
from actors.core.models import OutboxStatus, TaskStatus
from actors.core.outcomes import ManualRetryOutcome, RetryOutcome
from db.database import DuplicateKeyError, RetryableDatabaseError
from db.store import ExportStore
from tests.helpers import claim, complete, create, exec_sql, new_task

# --- leases, commit, retry ---------------------------------------------------------------


async def test_renewal_within_the_same_millisecond_is_not_a_lost_lease(store: ExportStore) -> None:
    """A renewal that changes no value still matched the row (FOUND_ROWS semantics)."""
    running = await claim(store, await create(store))
    assert await store.renew_lease(running, "owner-a", 10)
    assert await store.renew_lease(running, "owner-a", 10)  # same mock instant


async def test_renewal_fails_after_the_deadline(
    store: ExportStore, autojump_clock: trio.testing.MockClock
) -> None:
    """§19.1 deadline：超过 deadline 后 watchdog 不再续租。"""
    running = await claim(store, await create(store), lease=10, max_duration=30)
    for _ in range(5):
        await trio.sleep(5)
        assert await store.renew_lease(running, "owner-a", 10)
    await trio.sleep(6)
    assert not await store.renew_lease(running, "owner-a", 10)
    assert await store.own_run_past_deadline(running, "owner-a")


async def test_commit_after_deadline_is_refused(
    store: ExportStore, autojump_clock: trio.testing.MockClock
) -> None:
    """§19.1 deadline：最终提交 SQL 执行时已超时的竞态必须提交失败。"""
    running = await claim(store, await create(store), lease=100, max_duration=30)
    await trio.sleep(31)
    assert not await store.complete_task(
        running,
        "owner-a",
        file_name="f.xlsx",
        object_key="exports/1/" + "a" * 32 + ".xlsx",
        content_type="x",
        size_bytes=1,
        rows=1,
        retention_seconds=60,
    )
    assert await store.own_run_past_deadline(running, "owner-a")


async def test_commit_with_changed_version_is_refused(
    store: ExportStore, autojump_clock: trio.testing.MockClock
) -> None:
    """§19.1 结果提交：版本已变时提交失败。"""
    running = await claim(store, await create(store), lease=10)
    await trio.sleep(11)
    [expired] = await store.expired_leases(20)
    assert await store.recover_expired_lease(expired, "lost", "lost") == RetryOutcome.SCHEDULED
    assert not await store.complete_task(
        running,
        "owner-a",
        file_name="f",
        object_key="exports/1/" + "b" * 32 + ".xlsx",
        content_type="x",
        size_bytes=1,
        rows=1,
        retention_seconds=60,
    )
    assert not await store.own_run_past_deadline(running, "owner-a")


async def test_transient_failure_bumps_version_and_writes_outbox_with_same_next_retry_at(
    store: ExportStore,
) -> None:
    """§19.1 Consumer：临时失败递增版本并写新 Outbox。"""
    task = await create(store)
    running = await claim(store, task)
    assert await store.report_progress(running, "owner-a", 500, 1000)
    assert await store.schedule_retry(running, "owner-a", "provider 503", 60) == (
        RetryOutcome.SCHEDULED
    )
    after = await store.get_task(task.id)
    assert after.status == TaskStatus.PENDING and after.dispatch_version == 2
    assert after.failure_message == "provider 503"  # kept for display (§9.2)
    assert after.processed_rows == 0 and after.total_rows is None and after.lease_owner is None
    rows = await store.list_outbox(task.id)
    new_row = [r for r in rows if r.dispatch_version == 2][0]
    assert new_row.next_retry_at == after.next_retry_at
    assert new_row.attempt_count == 0  # §19.1 Outbox 与任务 attempt_count 相互独立
    assert (after.next_retry_at - after.updated_at).total_seconds() == 60


async def test_transient_failure_at_max_attempts_fails_the_task(store: ExportStore) -> None:
    """§19.1 Consumer：达到 max_attempts 转 FAILED。"""
    task = await create(store, max_attempts=1)
    running = await claim(store, task)
    assert await store.schedule_retry(running, "owner-a", "503", 0) == RetryOutcome.FAILED
    after = await store.get_task(task.id)
    assert after.status == TaskStatus.FAILED and after.dispatch_version == 1
    assert len(await store.list_outbox(task.id)) == 1


async def test_permanent_failure_fails_at_once(store: ExportStore) -> None:
    """§19.1 Consumer：永久失败直接 FAILED。"""
    task = await create(store)
    running = await claim(store, task)
    assert await store.fail_task(running, "owner-a", "schemaHash changed between batches")
    after = await store.get_task(task.id)
    assert after.status == TaskStatus.FAILED and after.completed_at is not None
    assert after.failure_message == "schemaHash changed between batches"


async def test_retry_by_a_fenced_out_owner_is_lost(store: ExportStore) -> None:
    running = await claim(store, await create(store), "owner-a")
    assert await store.schedule_retry(running, "intruder", "503", 0) == RetryOutcome.LOST
    assert not await store.fail_task(running, "intruder", "x")


async def test_manual_retry_only_from_failed_and_resets_the_attempt(store: ExportStore) -> None:
    """§19.1 人工重试：只允许 FAILED、递增版本、清空上次现场。"""
    task = await create(store)
    running = await claim(store, task)
    assert (await store.manual_retry(running))[1] is None  # RUNNING: refused
    await store.fail_task(running, "owner-a", "boom")
    failed = await store.get_task(task.id)
    _, retried = await store.manual_retry(failed)
    assert retried is not None and retried.status == TaskStatus.PENDING
    assert retried.dispatch_version == 2 and retried.attempt_count == 0
    assert retried.failure_message is None and retried.started_at is None
    assert {r.dispatch_version for r in await store.list_outbox(task.id)} == {1, 2}
    assert (await store.manual_retry(failed))[1] is None  # the same FAILED version: once


async def test_failed_task_insert_writes_no_outbox_row(store: ExportStore) -> None:
    """§19.1 任务插入失败时 Outbox 不落库: a task id that already exists makes the task
    INSERT fail; the transaction leaves no outbox row behind."""
    first = await create(store)
    reused = first.id
    store.ids.next_id = lambda: reused  # type: ignore[method-assign]
    with pytest.raises(DuplicateKeyError):
        await store.create_task(new_task(user_id=99))
    assert [r.task_id for r in await store.list_outbox(reused)] == [reused]
    async with store.db.transaction() as tx:
        n = await tx.fetchone("SELECT COUNT(*) AS n FROM file_export_outbox")
    assert int(n["n"]) == 1


async def test_manual_retry_respects_the_active_limits(store: ExportStore) -> None:
    """A retry is a new active task: the §14 limits apply as for a create."""
    task = await create(store, params={"i": 0})
    await store.fail_task(await claim(store, task), "owner-a", "boom")
    for i in range(1, 4):
        await create(store, params={"i": i})  # the requester now has 3 active tasks
    outcome, retried = await store.manual_retry(await store.get_task(task.id))
    assert outcome == ManualRetryOutcome.USER_LIMIT and retried is None
    assert (await store.get_task(task.id)).status == TaskStatus.FAILED


async def test_manual_retry_respects_the_kept_place_of_a_type(store: ExportStore) -> None:
    """A retry is admitted like a create: a user with an active task of the type may not
    take the type's last free place."""
    failed = await create(store, user_id=2, params={"i": 0})
    await store.fail_task(await claim(store, failed), "owner-a", "boom")
    await create(store, user_id=2, params={"i": 1})
    for i in range(3):
        await create(store, user_id=1, params={"i": i})
    outcome, retried = await store.manual_retry(await store.get_task(failed.id))
    assert outcome == ManualRetryOutcome.TYPE_RESERVED and retried is None
    assert (await store.get_task(failed.id)).status == TaskStatus.FAILED
    lenient = CreateLimits(type_reserved_places=0)
    outcome, retried = await store.manual_retry(await store.get_task(failed.id), lenient)
    assert outcome == ManualRetryOutcome.RETRIED and retried is not None


async def test_requeue_sent_rows_of_pending_tasks_at_embedded_start(store: ExportStore) -> None:
    """The in-process bus is empty after a restart: SENT rows of PENDING tasks go back to
    PENDING (same version); rows of claimed tasks stay SENT."""
    queued = await create(store, user_id=1)
    running = await create(store, user_id=2)
    for row in await store.claim_due_outbox("pub", 60, 10):
        await store.mark_outbox_sent(row.id, "pub")
    await claim(store, running)
    assert await store.requeue_sent_of_pending_tasks() == 1
    [row] = await store.list_outbox(queued.id)
    assert row.status == OutboxStatus.PENDING and row.dispatch_version == 1
    [other] = await store.list_outbox(running.id)
    assert other.status == OutboxStatus.SENT


async def test_release_lease_hands_the_task_back_without_spending_an_attempt(
    store: ExportStore,
) -> None:
    task = await create(store)
    running = await claim(store, task)
    assert await store.release_lease(running, "owner-a")
    after = await store.get_task(task.id)
    assert (after.status, after.dispatch_version, after.attempt_count) == (TaskStatus.PENDING, 2, 0)
    assert {r.dispatch_version for r in await store.list_outbox(task.id)} == {1, 2}
    assert not await store.release_lease(running, "owner-a")  # fenced: only once


async def test_hand_backs_past_the_bound_count_as_attempts_until_the_task_fails(
    store: ExportStore,
) -> None:
    """Issue 22 item 3: every hand-back is recorded (handback_count, a handed_back event);
    past max_handbacks in a row each one counts, and the last attempt ends FAILED with a
    message naming the causes of the row."""
    task = await create(store, max_attempts=2)
    causes = [HandBackCause.SHUTDOWN, HandBackCause.DATABASE, HandBackCause.WATCHDOG]
    fates = []
    for cause in causes:
        running = await claim(store, await store.get_task(task.id))
        handed = await store.release_lease(running, "owner-a", cause=cause, max_handbacks=1)
        assert handed is not None
        fates.append(handed.fate)
        after = await store.get_task(task.id)
        assert after.handback_count == handed.in_a_row == len(fates)
        if handed.fate == HandBackFate.COUNTED:
            assert (after.status, after.attempt_count, after.dispatch_version) == (
                TaskStatus.PENDING,
                1,
                3,
            )
            assert after.failure_message == (
                "handed back 2 times in a row (shutdown, database fault) without finishing;"
                " counted as attempt 1 of 2"
            )
    assert fates == [HandBackFate.REFUNDED, HandBackFate.COUNTED, HandBackFate.FAILED]
    after = await store.get_task(task.id)
    assert (after.status, after.dispatch_version, after.attempt_count) == (
        TaskStatus.FAILED,
        3,
        2,
    )
    assert after.completed_at is not None and after.lease_owner is None
    assert after.failure_message == (
        "handed back 3 times in a row (shutdown, database fault, watchdog outage) without"
        " finishing; counted as attempt 2 of 2"
    )
    versions = sorted(r.dispatch_version for r in await store.list_outbox(task.id))
    assert versions == [1, 2, 3]  # none for the FAILED one
    events = await store.list_task_events(task.id)
    handed_back = [e.detail for e in events if e.kind == "handed_back"]
    assert [(d["cause"], d["inARow"], d.get("counted"), d.get("final")) for d in handed_back] == [
        ("shutdown", 1, None, None),
        ("database fault", 2, True, None),
        ("watchdog outage", 3, True, True),
    ]
    assert handed_back[-1]["message"] == after.failure_message


async def test_an_attempt_that_ends_otherwise_ends_the_row_of_hand_backs(
    store: ExportStore,
) -> None:
    """A retry (and so a lease recovery, a failure, a success), and a manual retry, set
    handback_count back to 0: only hand-backs in a row are bounded."""
    task = await create(store)
    assert await store.release_lease(await claim(store, task), "owner-a")
    assert (await store.get_task(task.id)).handback_count == 1
    running = await claim(store, await store.get_task(task.id))
    assert await store.schedule_retry(running, "owner-a", "503", 0) == RetryOutcome.SCHEDULED
    assert (await store.get_task(task.id)).handback_count == 0
    assert await store.release_lease(await claim(store, await store.get_task(task.id)), "owner-a")
    running = await claim(store, await store.get_task(task.id))
    assert await complete(store, running)
    assert (await store.get_task(task.id)).handback_count == 0


async def test_a_failed_task_retried_by_hand_starts_a_new_row(store: ExportStore) -> None:
    task = await create(store, max_attempts=1)
    handed = await store.release_lease(await claim(store, task), "owner-a", max_handbacks=0)
    assert handed is not None and handed.fate == HandBackFate.FAILED
    _, retried = await store.manual_retry(await store.get_task(task.id))
    assert retried is not None and (retried.attempt_count, retried.handback_count) == (0, 0)


async def test_outbox_rows_keep_their_first_due_time_through_send_back_off(
    store: ExportStore,
) -> None:
    """Issue 22 item 2: due_at is written with the row, as its next_retry_at; a failed
    send moves next_retry_at only, an expired publisher claim keeps it (never sent), a
    re-queue of a SENT row sets it to the re-queue time; a retry's command is first due
    when the retry is."""
    task = await create(store)
    [row] = await store.list_outbox(task.id)
    first_due = row.due_at
    assert first_due is not None and first_due == row.next_retry_at
    [claimed] = await store.claim_due_outbox("pub", 60, 10)
    assert await store.mark_outbox_send_failed(claimed.id, "pub", 300, "broker down")
    [row] = await store.list_outbox(task.id)
    assert row.due_at == first_due and row.next_retry_at > first_due
    await exec_sql(
        store,
        "UPDATE file_export_outbox SET next_retry_at = {now}, status = 'CLAIMED',"
        " lease_owner = 'pub', lease_until = {now} WHERE id = :id",
        {"id": row.id},
    )
    assert await store.release_expired_outbox_claims() == 1
    [row] = await store.list_outbox(task.id)
    assert row.due_at == first_due

    queued = await create(store, user_id=2)
    for r in await store.claim_due_outbox("pub", 60, 10):
        await store.mark_outbox_sent(r.id, "pub")
    await exec_sql(
        store,
        "UPDATE file_export_outbox SET due_at = {now-:s} WHERE task_id = :id",
        {"s": 3600, "id": queued.id},
    )
    assert await store.requeue_sent_of_pending_tasks() >= 1
    [requeued] = await store.list_outbox(queued.id)
    assert requeued.status == OutboxStatus.PENDING and requeued.due_at == requeued.next_retry_at

    running = await claim(store, queued)
    assert await store.schedule_retry(running, "owner-a", "503", 900) == RetryOutcome.SCHEDULED
    retry = [r for r in await store.list_outbox(queued.id) if r.dispatch_version == 2][0]
    assert retry.due_at == retry.next_retry_at == (await store.get_task(queued.id)).next_retry_at


async def test_a_transition_rolled_back_by_the_database_is_retried(
    store: ExportStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deadlocks and lock waits are normal under concurrency: the transition runs again
    rather than failing its caller (a crashed actor, a lost claim)."""
    task = await create(store)
    real = store.db.transaction
    failures = 2

    def flaky_transaction():  # type: ignore[no-untyped-def]
        nonlocal failures
        if failures:
            failures -= 1
            raise RetryableDatabaseError("Deadlock found when trying to get lock")
        return real()

    monkeypatch.setattr(store.db, "transaction", flaky_transaction)
    claimed = await store.claim_task(task.id, 1, "owner-a", 10, 60)
    assert claimed.task is not None and failures == 0
