"""Store contract of re-dispatch (docs/design-rules.md §8.5-1): a command a slot acked
without a claim is marked seen, and the reconciler's SQL re-sends exactly what
``actors.core.dispatch.command_state`` calls lost; the embedded start's requeue leaves a
seen command alone too. On SQLite and MariaDB, on the mock clock (DB time follows it)."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from actors.core.admission import CreateLimits
from actors.core.dispatch import command_state
from actors.core.models import OutboxStatus
from db.store import ExportStore
from tests.helpers import claim, create, exec_sql, new_task

STALE = 600.0
GRACE = 60.0
ROOMY = CreateLimits(max_active_per_user=100, max_active_per_type=100, type_reserved_places=0)


async def send_due(store: ExportStore) -> None:
    """Publish every due command through a transport that always succeeds."""
    for row in await store.claim_due_outbox("pub", 60, 100):
        assert await store.mark_outbox_sent(row.id, "pub")


async def test_a_command_is_marked_seen_once_by_db_time(
    autojump_clock: trio.testing.MockClock, store: ExportStore
) -> None:
    """The first no-claim marks the row of the command's version; later ones keep that
    time; a version with no row marks nothing."""
    task = await create(store)
    await send_due(store)
    assert await store.mark_command_seen(task.id, 1)
    [first] = await store.list_outbox(task.id)
    assert first.seen_at == await store.db_now()
    await trio.sleep(5)
    assert not await store.mark_command_seen(task.id, 1)
    [again] = await store.list_outbox(task.id)
    assert again.seen_at == first.seen_at and again.status == OutboxStatus.SENT
    assert not await store.mark_command_seen(task.id, 2)


#: (row status, or None for no row; seen by a slot; sent again by the reconciler already;
#: seconds since it was last sent)
STATES = [
    (None, False, False, None),
    (OutboxStatus.QUARANTINED, False, False, 2 * STALE),
    (OutboxStatus.PENDING, False, False, None),
    (OutboxStatus.CLAIMED, False, False, None),
    (OutboxStatus.SENT, False, False, STALE / 2),
    (OutboxStatus.SENT, False, False, STALE + 1),
    (OutboxStatus.SENT, False, True, STALE / 2),
    (OutboxStatus.SENT, False, True, STALE + 1),
    (OutboxStatus.SENT, True, False, STALE / 2),
    (OutboxStatus.SENT, True, False, STALE + 1),
    (OutboxStatus.SENT, True, False, 20 * STALE),
]


@pytest.mark.parametrize(("status", "seen", "resent", "age"), STATES)
async def test_the_reconciler_redispatches_what_command_state_calls_lost(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    status: OutboxStatus | None,
    seen: bool,
    resent: bool,
    age: float | None,
) -> None:
    """Cases A and B of §8.5-1 as the table of ``actors/core/dispatch.py`` has them, for a
    PENDING task past its grace: a missing row is written, a SENT one that no slot saw is
    reset to PENDING once stale, unless it was sent again already; a seen one is never
    re-sent, however long it waits."""
    task = await create(store)
    await trio.sleep(max(GRACE, age or 0) + 1)
    if status is None:
        await exec_sql(store, "DELETE FROM file_export_outbox WHERE task_id = :t", {"t": task.id})
    else:
        await exec_sql(
            store,
            "UPDATE file_export_outbox SET status = :s, sent_at = "
            + ("NULL" if age is None else "{now-:age}")
            + (", resent_at = {now-:age}" if resent else "")
            + " WHERE task_id = :t",
            {"s": status.value, "t": task.id, "age": age or 0},
        )
    if seen:
        assert await store.mark_command_seen(task.id, 1)
    before = await store.list_outbox(task.id)
    acted = await store.redispatch_stale_sent(STALE, GRACE, 20)
    acted += await store.redispatch_missing_outbox(GRACE, 50)
    after = await store.list_outbox(task.id)
    expected = command_state(
        status, seen=seen, resent=resent, sent_age_seconds=age, stale_seconds=STALE
    )
    assert acted == int(expected.redispatched), expected
    if expected.redispatched:
        [row] = after
        assert (row.status, row.dispatch_version) == (OutboxStatus.PENDING, 1)
    else:
        assert after == before
    assert (await store.get_task(task.id)).dispatch_version == 1


async def test_an_unseen_command_is_sent_again_once(
    autojump_clock: trio.testing.MockClock, store: ExportStore
) -> None:
    """The re-send is recorded by DB time; its copy unseen after another interval is not
    sent a third time (the task waits behind busy slots, or no consumer runs)."""
    task = await create(store)
    await send_due(store)
    await trio.sleep(STALE + GRACE)
    assert await store.redispatch_stale_sent(STALE, GRACE, 20) == 1
    [row] = await store.list_outbox(task.id)
    assert row.resent_at == await store.db_now() and row.seen_at is None
    await send_due(store)
    for _ in range(5):
        await trio.sleep(STALE)
        assert await store.redispatch_stale_sent(STALE, GRACE, 20) == 0
    [again] = await store.list_outbox(task.id)
    assert (again.status, again.attempt_count) == (OutboxStatus.SENT, 2)


async def test_a_seen_command_of_an_old_version_does_not_hold_back_the_new_one(
    autojump_clock: trio.testing.MockClock, store: ExportStore
) -> None:
    """Seen is fenced by version: after a retry (a new version) the new command is
    re-sent once stale and unseen, whatever a slot saw of the old one."""
    task = await create(store)
    await send_due(store)
    assert await store.mark_command_seen(task.id, 1)
    running = await claim(store, task)
    await store.schedule_retry(running, "owner-a", "503", 0)
    await send_due(store)
    await trio.sleep(STALE + GRACE)
    assert await store.redispatch_stale_sent(STALE, GRACE, 20) == 1
    rows = {r.dispatch_version: r for r in await store.list_outbox(task.id)}
    assert rows[2].status == OutboxStatus.PENDING and rows[2].seen_at is None


async def test_the_embedded_start_requeues_only_unseen_commands(
    autojump_clock: trio.testing.MockClock, store: ExportStore
) -> None:
    """A restarted in-process bus lost what it held, not what a slot acked: a seen
    command's task waits for a slot, which pulls it from the database."""
    held = (await store.create_task(new_task(1), ROOMY)).task
    acked = (await store.create_task(new_task(2), ROOMY)).task
    assert held is not None and acked is not None
    await send_due(store)
    assert await store.mark_command_seen(acked.id, 1)
    assert await store.requeue_sent_of_pending_tasks() == 1
    [row] = await store.list_outbox(held.id)
    assert row.status == OutboxStatus.PENDING
    [seen] = await store.list_outbox(acked.id)
    assert seen.status == OutboxStatus.SENT
