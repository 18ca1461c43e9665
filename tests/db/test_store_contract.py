"""Store contract: every transition, by DB time (runs on the mock clock).

Docstrings name the §19.1 bullet a test covers.
"""

from __future__ import annotations

import dataclasses

import pytest
import trio

from actors.core import fairness
from actors.core.dispatch import NoClaim
from actors.core.models import OutboxStatus, TaskStatus
from actors.core.outcomes import CreateOutcome, RetryOutcome
from db.database import DuplicateKeyError
from db.store import ExportStore
from tests.helpers import claim, create, new_task

# --- create ------------------------------------------------------------------------------


async def test_create_writes_task_and_outbox_row_in_one_transaction(store: ExportStore) -> None:
    """§19.1 任务与 Outbox 同事务创建。"""
    task = await create(store)
    assert task.status == TaskStatus.PENDING and task.dispatch_version == 1
    rows = await store.list_outbox(task.id)
    assert len(rows) == 1
    assert (rows[0].dispatch_version, rows[0].status, rows[0].attempt_count) == (
        1,
        OutboxStatus.PENDING,
        0,
    )
    assert rows[0].message_key == str(task.id)


async def test_failed_outbox_insert_rolls_back_the_task(
    store: ExportStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§19.1 任务插入失败时 Outbox 不落库 (and the converse: no task without its row)."""

    async def boom(*args: object, **kwargs: object) -> None:
        raise DuplicateKeyError("simulated")

    monkeypatch.setattr(store, "_insert_outbox", boom)
    with pytest.raises(DuplicateKeyError):
        await store.create_task(new_task())
    tasks, total = await store.list_tasks(new_task().principal, all_users=True, limit=10, offset=0)
    assert total == 0 and tasks == []


async def test_duplicate_submission_within_60s_returns_the_same_task(store: ExportStore) -> None:
    first = await create(store, params={"keyword": "a", "status": "ACTIVE"})
    # same parameters in another key order normalise to the same JSON
    again = await store.create_task(new_task(params={"status": "ACTIVE", "keyword": "a"}))
    assert again.outcome == CreateOutcome.DUPLICATE
    assert again.task is not None and again.task.id == first.id
    assert len(await store.list_outbox(first.id)) == 1


async def test_same_parameters_after_the_window_create_a_new_task(
    store: ExportStore, autojump_clock: trio.testing.MockClock
) -> None:
    first = await create(store, params={"k": 1})
    await trio.sleep(61)
    second = await store.create_task(new_task(params={"k": 1}))
    assert second.outcome == CreateOutcome.CREATED
    assert second.task is not None and second.task.id != first.id


async def test_fourth_active_task_of_a_user_is_refused(store: ExportStore) -> None:
    for i in range(3):
        await create(store, params={"i": i})
    result = await store.create_task(new_task(params={"i": 3}))
    assert result.outcome == CreateOutcome.USER_LIMIT and result.task is None


async def test_sixth_active_task_of_a_type_is_refused(store: ExportStore) -> None:
    for user in range(5):
        await create(store, user_id=100 + user)
    result = await store.create_task(new_task(user_id=200))
    assert result.outcome == CreateOutcome.TYPE_LIMIT


async def test_two_heavy_users_leave_a_place_of_the_type_for_a_third(store: ExportStore) -> None:
    """Issue 13: two heavy users used to fill the type's five places (3 + 2) and lock
    everyone else out. The last free place is kept for a user with no active task of
    that type: the second heavy user's second create is refused, a third user's admitted."""
    for i in range(3):
        await create(store, user_id=1, params={"i": i})
    await create(store, user_id=2, params={"i": 0})
    second = await store.create_task(new_task(user_id=2, params={"i": 1}))
    assert second.outcome == CreateOutcome.TYPE_RESERVED and second.task is None
    third = await store.create_task(new_task(user_id=3))
    assert third.outcome == CreateOutcome.CREATED
    sixth = await store.create_task(new_task(user_id=4))
    assert sixth.outcome == CreateOutcome.TYPE_LIMIT


async def test_a_lone_user_keeps_the_full_user_limit_in_one_type(store: ExportStore) -> None:
    """The kept place costs a lone user nothing: three active tasks of one type (the user
    limit) are admitted while the type has room for a newcomer."""
    outcomes = [
        (await store.create_task(new_task(user_id=1, params={"i": i}))).outcome for i in range(3)
    ]
    assert outcomes == [CreateOutcome.CREATED] * 3


async def test_finished_tasks_do_not_count_against_the_limits(store: ExportStore) -> None:
    tasks = [await create(store, params={"i": i}) for i in range(3)]
    running = await claim(store, tasks[0])
    assert await store.fail_task(running, "owner-a", "boom")
    assert (await store.create_task(new_task(params={"i": 9}))).outcome == CreateOutcome.CREATED


async def test_concurrent_creates_respect_limits_under_the_guard(store: ExportStore) -> None:
    """§19.1 并发创建：由 file_export_task_guard 串行复核，最终只创建允许数量的任务与 Outbox。"""
    outcomes: list[CreateOutcome] = []

    async def one(i: int) -> None:
        outcomes.append((await store.create_task(new_task(params={"i": i}))).outcome)

    async with trio.open_nursery() as n:
        for i in range(8):
            n.start_soon(one, i)
    assert outcomes.count(CreateOutcome.CREATED) == 3
    assert outcomes.count(CreateOutcome.USER_LIMIT) == 5


# --- publisher ---------------------------------------------------------------------------


async def test_publisher_claims_due_rows_and_not_future_ones(
    store: ExportStore, autojump_clock: trio.testing.MockClock
) -> None:
    """§19.1 Publisher：到点领取、未到点不领取。"""
    task = await create(store)
    [row] = await store.claim_due_outbox("pub-a", 60, 50)
    assert row.attempt_count == 1 and row.status == OutboxStatus.CLAIMED
    assert await store.mark_outbox_send_failed(row.id, "pub-a", 5, "broker down")
    assert await store.claim_due_outbox("pub-a", 60, 50) == []  # inside the 5 s backoff
    await trio.sleep(5)
    [again] = await store.claim_due_outbox("pub-a", 60, 50)
    assert again.task_id == task.id and again.attempt_count == 2
    assert again.last_error == "broker down"


async def test_only_one_concurrent_publisher_claim_wins(store: ExportStore) -> None:
    """§19.1 Publisher：并发领取只有一个成功。"""
    await create(store)
    results = []

    async def claimer(owner: str) -> None:
        results.append(await store.claim_due_outbox(owner, 60, 50))

    async with trio.open_nursery() as n:
        n.start_soon(claimer, "pub-a")
        n.start_soon(claimer, "pub-b")
    assert sorted(len(r) for r in results) == [0, 1]


async def test_sent_marks_the_row_and_clears_the_lease(store: ExportStore) -> None:
    """§19.1 Publisher：发送成功标记 SENT。"""
    task = await create(store)
    [row] = await store.claim_due_outbox("pub-a", 60, 50)
    assert await store.mark_outbox_sent(row.id, "pub-a")
    [sent] = await store.list_outbox(task.id)
    assert sent.status == OutboxStatus.SENT and sent.sent_at is not None
    assert sent.lease_owner is None and sent.lease_until is None


async def test_expired_publisher_claim_can_be_claimed_again(
    store: ExportStore, autojump_clock: trio.testing.MockClock
) -> None:
    """§19.1 Publisher：租约超时可被重新领取 (via the reconciler's release, §8.5-3)."""
    await create(store)
    [row] = await store.claim_due_outbox("pub-a", 60, 50)
    assert await store.release_expired_outbox_claims() == 0  # lease still valid
    await trio.sleep(60)
    assert await store.release_expired_outbox_claims() == 1
    [again] = await store.claim_due_outbox("pub-b", 60, 50)
    assert again.id == row.id and again.attempt_count == 2
    assert not await store.mark_outbox_sent(row.id, "pub-a")  # the old claimer lost it


async def test_a_claim_closes_its_unsent_command_and_leaves_one_being_sent(
    store: ExportStore,
) -> None:
    """A task claimed from the database before its command was sent (the bus is down):
    the command is closed in the claim's transaction and never sent for a task that runs
    or has finished. One a publisher is sending right now is left to arrive and be acked."""
    unsent = await create(store, user_id=1)
    await claim(store, unsent, "slot-owner")
    [closed] = await store.list_outbox(unsent.id)
    assert closed.status == OutboxStatus.SENT and closed.sent_at is not None
    assert closed.last_error is not None and "claimed from the database" in closed.last_error
    being_sent = await create(store, user_id=2)
    [row] = await store.claim_due_outbox("pub-a", 60, 50)
    assert row.task_id == being_sent.id
    await claim(store, being_sent, "slot-owner")
    assert await store.mark_outbox_sent(row.id, "pub-a")  # its publisher still owns it
    assert await store.claim_due_outbox("pub-a", 60, 50) == []  # nothing left to send


# --- claim: the seven branches of §8.2 ---------------------------------------------------


async def test_claim_sets_lease_deadline_and_resets_progress_by_db_time(
    store: ExportStore, autojump_clock: trio.testing.MockClock
) -> None:
    """§19.1 deadline：抢占时按数据库时钟写入。"""
    task = await create(store)
    await trio.sleep(3)
    now = await store.db_now()
    running = await claim(store, task, lease=300, max_duration=1800)
    assert running.status == TaskStatus.RUNNING and running.attempt_count == 1
    assert running.started_at == now and running.last_heartbeat_at == now
    assert (running.lease_until - now).total_seconds() == 300
    assert (running.execution_deadline_at - now).total_seconds() == 1800
    assert running.processed_rows == 0 and running.total_rows is None


async def test_no_claim_task_missing(store: ExportStore) -> None:
    """§19.1 Consumer 抢占 §8.2 分支：任务不存在。"""
    result = await store.claim_task(12345, 1, "c", 10, 60)
    assert result.task is None and result.no_claim == NoClaim.TASK_MISSING


async def test_no_claim_stale_version(store: ExportStore) -> None:
    """§19.1 §8.2 分支：dispatch_version 大于消息中的值。"""
    task = await create(store)
    running = await claim(store, task)
    assert await store.schedule_retry(running, "owner-a", "503", 0) == RetryOutcome.SCHEDULED
    result = await store.claim_task(task.id, 1, "c", 10, 60)
    assert result.no_claim == NoClaim.STALE_VERSION


async def test_no_claim_terminal(store: ExportStore) -> None:
    """§19.1 §8.2 分支：SUCCEEDED / FAILED / EXPIRED。"""
    task = await create(store)
    running = await claim(store, task)
    assert await store.fail_task(running, "owner-a", "bad parameters")
    assert (await store.claim_task(task.id, 1, "c", 10, 60)).no_claim == NoClaim.TERMINAL


async def test_no_claim_running_elsewhere(store: ExportStore) -> None:
    """§19.1 §8.2 分支：RUNNING 且 lease_until > now。"""
    task = await create(store)
    await claim(store, task, "owner-a")
    assert (await store.claim_task(task.id, 1, "owner-b", 10, 60)).no_claim == (
        NoClaim.RUNNING_ELSEWHERE
    )


async def test_no_claim_running_with_expired_lease_is_left_to_the_reconciler(
    store: ExportStore, autojump_clock: trio.testing.MockClock
) -> None:
    """§19.1 §8.2 分支：RUNNING 且 lease_until <= now → ack, no takeover."""
    task = await create(store)
    await claim(store, task, "owner-a", lease=10)
    await trio.sleep(11)
    result = await store.claim_task(task.id, 1, "owner-b", 10, 60)
    assert result.no_claim == NoClaim.RUNNING_LEASE_EXPIRED
    assert (await store.get_task(task.id)).lease_owner == "owner-a"


async def test_a_dead_predecessors_lease_ends_fenced_by_owner_and_version(
    store: ExportStore, autojump_clock: trio.testing.MockClock
) -> None:
    """Start-up: live leases are listed soonest first; ending one sets its lease_until to
    now (then the reconciler's expired-lease query returns it), and only while the task
    is still RUNNING at that version under that owner."""
    first = await claim(store, await create(store, user_id=1), "host:1/9", lease=30)
    second = await claim(store, await create(store, user_id=2), "host:2/9", lease=60)
    assert [t.id for t in await store.live_leases(10)] == [first.id, second.id]

    # Fenced: another owner, or another version, ends nothing.
    assert not await store.expire_lease(dataclasses.replace(second, lease_owner="host:3/9"))
    assert not await store.expire_lease(
        dataclasses.replace(second, dispatch_version=second.dispatch_version + 1)
    )
    assert await store.expire_lease(first)
    assert [t.id for t in await store.live_leases(10)] == [second.id]
    assert [t.id for t in await store.expired_leases(10)] == [first.id]
    assert (await store.get_task(second.id)).lease_until == second.lease_until


async def test_no_claim_in_backoff_window(store: ExportStore) -> None:
    """§19.1 §8.2 分支：PENDING 且 next_retry_at > now。"""
    task = await create(store)
    running = await claim(store, task)
    await store.schedule_retry(running, "owner-a", "503", 60)
    result = await store.claim_task(task.id, 2, "owner-b", 10, 60)
    assert result.no_claim == NoClaim.IN_BACKOFF


async def test_no_claim_lost_race(store: ExportStore) -> None:
    """§19.1 §8.2 分支：PENDING 且到点但更新仍为 0 (a concurrent claimer won)."""
    task = await create(store)
    results = []

    async def claimer(owner: str) -> None:
        results.append(await store.claim_task(task.id, 1, owner, 10, 60))

    async with trio.open_nursery() as n:
        n.start_soon(claimer, "a")
        n.start_soon(claimer, "b")
    assert sum(r.task is not None for r in results) == 1
    # The loser re-read the task RUNNING with a live lease: the same ack-only outcome.
    assert [r.no_claim for r in results if r.task is None] == [NoClaim.RUNNING_ELSEWHERE]


async def test_fair_share_load_counts_this_owners_slots_and_lists_due_tasks_oldest_first(
    store: ExportStore, autojump_clock: trio.testing.MockClock
) -> None:
    """What the claim gate decides on: RUNNING tasks leased to this instance by requester
    (another instance's do not count), and due PENDING tasks oldest first (tasks in
    backoff, RUNNING or finished are not due)."""
    a1 = await create(store, user_id=1, params={"i": 1})
    a2 = await create(store, user_id=1, params={"i": 2})
    await trio.sleep(1)
    b1 = await create(store, user_id=2, params={"i": 1})
    await trio.sleep(1)
    a3 = await create(store, user_id=1, params={"i": 3})
    c1 = await create(store, user_id=3, tenant_id=5, export_type="ORDERS", params={"i": 1})
    await claim(store, a1, "me")
    await claim(store, b1, "other-instance")
    running = await claim(store, c1, "me")
    # a task in backoff is not due
    assert await store.schedule_retry(running, "me", "boom", 60) == RetryOutcome.SCHEDULED
    c2 = await create(store, user_id=3, tenant_id=5, export_type="ORDERS", params={"i": 2})
    await claim(store, c2, "me")

    load = await store.fair_share_load("me")
    assert load.running == {
        fairness.Requester(0, "PLATFORM", 1): 1,
        fairness.Requester(5, "PLATFORM", 3): 1,
    }
    assert [t.task_id for t in load.due] == [a2.id, a3.id]
    assert load.due[0].requester == fairness.Requester(0, "PLATFORM", 1)
    assert load.due[0].dispatch_version == 1
    assert load.due[0].next_retry_at < load.due[1].next_retry_at
    assert [t.task_id for t in (await store.fair_share_load("me", limit=1)).due] == [a2.id]
