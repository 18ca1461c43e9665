"""Store contract under database faults, on SQLite and MariaDB: every risky transition hit
by a dead connection at BEGIN, a server that refuses connections, a connection killed
mid-transaction, and a lost COMMIT that did or did not land, gives the answer it gives
without the fault and writes its effect exactly once.

The faults are injected by ``tests.faults.FaultyDatabase`` around the real database (the
lost-but-landed COMMIT cannot be produced on demand otherwise); ``test_mysql.py`` produces
the same faults for real on MariaDB.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from actors.core.handback import HandBackFate
from actors.core.models import OutboxStatus, TaskStatus
from actors.core.outcomes import CreateOutcome, ManualRetryOutcome, QuarantineOutcome, RetryOutcome
from db.database import DatabaseUnavailableError
from db.store import ExportStore
from tests.faults import Fault, FaultyDatabase
from tests.helpers import TOPIC, claim, create, exec_sql, new_task

Scenario = Callable[[ExportStore, ExportStore, FaultyDatabase], Awaitable[None]]
SCENARIOS: dict[str, Scenario] = {}


def scenario(fn: Scenario) -> Scenario:
    SCENARIOS[fn.__name__] = fn
    return fn


def faulty_store(store: ExportStore) -> tuple[ExportStore, FaultyDatabase]:
    faulty = FaultyDatabase(store.db)
    fs = ExportStore(faulty, store.ids, topic=TOPIC, retry_policy=store.retry_policy)  # type: ignore[arg-type]
    return fs, faulty


async def outbox_versions(store: ExportStore, task_id: int) -> list[int]:
    return sorted(r.dispatch_version for r in await store.list_outbox(task_id))


@scenario
async def create_task(base: ExportStore, fs: ExportStore, faulty: FaultyDatabase) -> None:
    """The user already has 2 of 3 active tasks: a landed create must not come back as
    its own duplicate, nor as USER_LIMIT because it now fills the third place."""
    for i in range(2):
        await create(base, params={"i": i})
    result = await fs.create_task(new_task(params={"i": "new"}))
    assert result.outcome == CreateOutcome.CREATED and result.task is not None
    tasks, total = await base.list_tasks(new_task().principal, all_users=True, limit=10, offset=0)
    assert total == 3
    assert await outbox_versions(base, result.task.id) == [1]


@scenario
async def claim_task(base: ExportStore, fs: ExportStore, faulty: FaultyDatabase) -> None:
    """A claim whose answer was lost is this call's own: claimed once, one attempt."""
    task = await create(base)
    result = await fs.claim_task(task.id, 1, "owner-a", 10, 60)
    assert result.task is not None, result.no_claim
    after = await base.get_task(task.id)
    assert (after.status, after.attempt_count, after.lease_owner) == (
        TaskStatus.RUNNING,
        1,
        "owner-a",
    )


@scenario
async def complete_task(base: ExportStore, fs: ExportStore, faulty: FaultyDatabase) -> None:
    """The fenced final commit: True even when its first COMMIT landed (else the caller
    would delete the file of a SUCCEEDED task)."""
    running = await claim(base, await create(base))
    ok = await fs.complete_task(
        running,
        "owner-a",
        file_name="f.xlsx",
        object_key=f"exports/{running.id}/{'a' * 32}.xlsx",
        content_type="x",
        size_bytes=1,
        rows=1,
        retention_seconds=60,
    )
    assert ok
    after = await base.get_task(running.id)
    assert after.status == TaskStatus.SUCCEEDED and after.object_key.endswith("a" * 32 + ".xlsx")


@scenario
async def fail_task(base: ExportStore, fs: ExportStore, faulty: FaultyDatabase) -> None:
    running = await claim(base, await create(base))
    assert await fs.fail_task(running, "owner-a", "export exceeds max-rows 10")
    after = await base.get_task(running.id)
    assert (after.status, after.failure_message) == (
        TaskStatus.FAILED,
        "export exceeds max-rows 10",
    )


@scenario
async def schedule_retry(base: ExportStore, fs: ExportStore, faulty: FaultyDatabase) -> None:
    """One new version, one new outbox row — never a second one, never LOST."""
    running = await claim(base, await create(base))
    outcome = await fs.schedule_retry(running, "owner-a", "provider answered HTTP 503", 60)
    assert outcome == RetryOutcome.SCHEDULED
    after = await base.get_task(running.id)
    assert (after.status, after.dispatch_version) == (TaskStatus.PENDING, 2)
    assert await outbox_versions(base, running.id) == [1, 2]


@scenario
async def schedule_retry_exhausted(
    base: ExportStore, fs: ExportStore, faulty: FaultyDatabase
) -> None:
    running = await claim(base, await create(base, max_attempts=1))
    outcome = await fs.schedule_retry(running, "owner-a", "provider answered HTTP 503", 60)
    assert outcome == RetryOutcome.FAILED
    assert (await base.get_task(running.id)).status == TaskStatus.FAILED
    assert await outbox_versions(base, running.id) == [1]


@scenario
async def release_lease(base: ExportStore, fs: ExportStore, faulty: FaultyDatabase) -> None:
    running = await claim(base, await create(base))
    assert await fs.release_lease(running, "owner-a")
    after = await base.get_task(running.id)
    assert (after.status, after.dispatch_version, after.attempt_count) == (TaskStatus.PENDING, 2, 0)
    assert await outbox_versions(base, running.id) == [1, 2]


@scenario
async def hand_back_counted(base: ExportStore, fs: ExportStore, faulty: FaultyDatabase) -> None:
    """Past the bound the hand-back counts: one new version and outbox row, counted once."""
    running = await claim(base, await create(base))
    handed = await fs.release_lease(running, "owner-a", max_handbacks=0)
    assert handed is not None and handed.fate == HandBackFate.COUNTED
    after = await base.get_task(running.id)
    assert (after.status, after.attempt_count, after.handback_count) == (TaskStatus.PENDING, 1, 1)
    assert await outbox_versions(base, running.id) == [1, 2]


@scenario
async def hand_back_failed(base: ExportStore, fs: ExportStore, faulty: FaultyDatabase) -> None:
    """The last attempt: FAILED once, with the message, and the answer says so."""
    running = await claim(base, await create(base, max_attempts=1))
    handed = await fs.release_lease(running, "owner-a", max_handbacks=0)
    assert handed is not None and handed.fate == HandBackFate.FAILED
    after = await base.get_task(running.id)
    assert (after.status, after.failure_message, after.handback_count) == (
        TaskStatus.FAILED,
        handed.message,
        1,
    )
    assert await outbox_versions(base, running.id) == [1]


async def _expired(base: ExportStore, **kw: object) -> object:
    running = await claim(base, await create(base, **kw))  # type: ignore[arg-type]
    await exec_sql(
        base, "UPDATE file_export_task SET lease_until = {now} WHERE id = :id", {"id": running.id}
    )
    [expired] = await base.expired_leases(20)
    return expired


@scenario
async def recover_expired_lease(base: ExportStore, fs: ExportStore, faulty: FaultyDatabase) -> None:
    """A landed recovery must not come back LOST: the answer decides whether the dead
    run's file is deleted."""
    expired = await _expired(base)
    outcome = await fs.recover_expired_lease(expired, "lease lost", "lease lost, no more")
    assert outcome == RetryOutcome.SCHEDULED
    assert await outbox_versions(base, expired.id) == [1, 2]


@scenario
async def recover_expired_lease_exhausted(
    base: ExportStore, fs: ExportStore, faulty: FaultyDatabase
) -> None:
    expired = await _expired(base, max_attempts=1)
    outcome = await fs.recover_expired_lease(expired, "lease lost", "lease lost, no more")
    assert outcome == RetryOutcome.FAILED
    assert (await base.get_task(expired.id)).failure_message == "lease lost, no more"


@scenario
async def manual_retry(base: ExportStore, fs: ExportStore, faulty: FaultyDatabase) -> None:
    """The requester has 2 other active tasks: the landed retry fills the third place and
    must still be reported CREATED, not USER_LIMIT."""
    running = await claim(base, await create(base, params={"r": 1}))
    assert await base.fail_task(running, "owner-a", "boom")
    for i in range(2):
        await create(base, params={"other": i})
    failed = await base.get_task(running.id)
    outcome, updated = await fs.manual_retry(failed)
    assert outcome == ManualRetryOutcome.RETRIED and updated is not None
    assert (updated.status, updated.dispatch_version) == (TaskStatus.PENDING, 2)
    assert await outbox_versions(base, running.id) == [1, 2]


@scenario
async def publisher_claim(base: ExportStore, fs: ExportStore, faulty: FaultyDatabase) -> None:
    """A claimed outbox row whose answer was lost is still sent this round (not left
    CLAIMED until its lease expires). The first transaction (the select) passes."""
    task = await create(base)
    faulty.plan.insert(0, None)
    [row] = await fs.claim_due_outbox("pub", 60, 10)
    assert (row.task_id, row.status, row.attempt_count) == (task.id, OutboxStatus.CLAIMED, 1)


@scenario
async def mark_outbox_sent(base: ExportStore, fs: ExportStore, faulty: FaultyDatabase) -> None:
    await create(base)
    [row] = await base.claim_due_outbox("pub", 60, 10)
    assert await fs.mark_outbox_sent(row.id, "pub")
    [after] = await base.list_outbox(row.task_id)
    assert after.status == OutboxStatus.SENT


@scenario
async def quarantine(base: ExportStore, fs: ExportStore, faulty: FaultyDatabase) -> None:
    task = await create(base)
    [row] = await base.claim_due_outbox("pub", 60, 10)
    assert await base.mark_outbox_sent(row.id, "pub")
    outcome = await fs.quarantine(row.event_id, task.id, 1, "undecodable")
    assert outcome == QuarantineOutcome.QUARANTINED
    assert (await base.get_task(task.id)).status == TaskStatus.FAILED


@scenario
async def renew_lease(base: ExportStore, fs: ExportStore, faulty: FaultyDatabase) -> None:
    running = await claim(base, await create(base))
    assert await fs.renew_lease(running, "owner-a", 10)


@scenario
async def record_object_key(base: ExportStore, fs: ExportStore, faulty: FaultyDatabase) -> None:
    running = await claim(base, await create(base))
    key = f"exports/{running.id}/{'b' * 32}.xlsx"
    assert await fs.record_object_key(running, "owner-a", key)
    assert (await base.get_task(running.id)).object_key == key


FAULTS = [
    Fault.BEFORE_BEGIN,
    Fault.UNAVAILABLE,
    Fault.MID_TRANSACTION,
    Fault.COMMIT_LANDED,
    Fault.COMMIT_LOST,
]


@pytest.mark.parametrize("fault", FAULTS, ids=[f.value for f in FAULTS])
@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_a_transition_hit_by_a_connection_fault_answers_as_without_it(
    store: ExportStore, name: str, fault: Fault
) -> None:
    fs, faulty = faulty_store(store)
    faulty.arm(fault)
    await SCENARIOS[name](store, fs, faulty)
    assert faulty.plan == [], "the fault was not reached"
    assert fs.health.faults >= 1 and fs.health.faulty_since is None  # seen, then recovered


async def test_a_fault_that_outlasts_the_budget_is_raised(store: ExportStore) -> None:
    """A database that stays down past the budget: the transition gives up with the
    transient error (for its caller to ride out), after trying more than once."""
    fs, faulty = faulty_store(store.with_retry_budget(0.3))
    faulty.down = True
    with pytest.raises(DatabaseUnavailableError):
        await fs.get_task(1)
    assert faulty.transactions > 2
    assert fs.health.faulty_since is not None  # still in the blip


async def test_a_callers_deadline_bounds_the_retries(store: ExportStore) -> None:
    """Retries never sleep into the caller's cancellation: with 0.2 s left the transition
    raises the database error itself (no Cancelled), well before the 30 s budget."""
    import trio

    fs, faulty = faulty_store(store)
    faulty.down = True
    with trio.move_on_after(0.2) as scope:
        with pytest.raises(DatabaseUnavailableError):
            await fs.get_task(1)
    assert not scope.cancelled_caught
