"""A task's history in the store, on SQLite and MariaDB: every transition appends its event
in its own transaction (a transition that does not land leaves none), newest last, and
pruning removes the events older than the retention."""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from actors.core.events import TaskEventKind as K
from actors.core.outcomes import QuarantineOutcome, RetryOutcome
from db.store import ExportStore
from tests.helpers import claim, create, exec_sql


async def kinds(store: ExportStore, task_id: int) -> list[K]:
    return [e.kind for e in await store.list_task_events(task_id)]


async def details(store: ExportStore, task_id: int) -> list[tuple[K, dict[str, Any]]]:
    return [(e.kind, e.detail) for e in await store.list_task_events(task_id)]


async def publish(store: ExportStore) -> None:
    for row in await store.claim_due_outbox("publisher", 30, 100):
        assert await store.mark_outbox_sent(row.id, "publisher")


async def test_the_life_of_a_task_is_its_history(store: ExportStore) -> None:
    task = await create(store)
    await publish(store)
    first = await claim(store, task, "instance-a")
    assert (
        await store.schedule_retry(first, "instance-a", "provider down", 0, "ProviderError")
        == RetryOutcome.SCHEDULED
    )
    await publish(store)
    again = await store.get_task(task.id)
    assert again is not None
    second = await claim(store, again, "instance-b")
    assert await store.complete_task(
        second,
        "instance-b",
        file_name="f.xlsx",
        object_key="exports/1/f.xlsx",
        content_type="x",
        size_bytes=1234,
        rows=56,
        retention_seconds=0,
    )
    await store.record_download(task.id, 9)
    assert await store.mark_expired(task.id)
    history = await details(store, task.id)
    assert [k for k, _ in history] == [
        K.CREATED,
        K.DISPATCHED,
        K.CLAIMED,
        K.ATTEMPT_FAILED,
        K.RETRY_SCHEDULED,
        K.DISPATCHED,
        K.CLAIMED,
        K.SUCCEEDED,
        K.DOWNLOADED,
        K.EXPIRED,
    ]
    assert history[0][1] == {"by": 7, "exportType": "CUSTOMER_LIST"}
    assert history[1][1]["version"] == 1 and history[5][1]["version"] == 2
    assert history[2][1] == {"instance": "instance-a", "version": 1, "attempt": 1}
    assert history[3][1] == {
        "version": 1,
        "attempt": 1,
        "errorClass": "ProviderError",
        "code": "export-failed",  # not a class of the export errors: the fallback
        "message": "provider down",
        "final": False,
    }
    assert history[4][1]["version"] == 2 and history[4][1]["at"].endswith("+00:00")
    assert history[6][1] == {"instance": "instance-b", "version": 2, "attempt": 2}
    assert history[7][1]["rows"] == 56 and history[7][1]["bytes"] == 1234
    assert history[7][1]["seconds"] >= 0
    assert history[8][1] == {"by": 9}
    events = await store.list_task_events(task.id)
    assert [e.id for e in events] == sorted(e.id for e in events)  # newest last


async def test_failure_cancel_retry_and_quarantine_are_recorded(store: ExportStore) -> None:
    failed = await claim(store, await create(store))
    assert await store.fail_task(failed, "owner-a", "bad data", "PermanentExportError")
    assert (await details(store, failed.id))[-1] == (
        K.ATTEMPT_FAILED,
        {
            "version": 1,
            "attempt": 1,
            "errorClass": "PermanentExportError",
            "code": "export-failed",  # the code people read it by (actors/core/messages.py)
            "message": "bad data",
            "final": True,
        },
    )
    now_failed = await store.get_task(failed.id)
    assert now_failed is not None
    await store.manual_retry(now_failed)
    kind, detail = (await details(store, failed.id))[-1]
    assert kind == K.RETRY_SCHEDULED and detail["manual"] is True and detail["version"] == 2

    cancelled = await create(store, user_id=8)
    await store.cancel_task(cancelled.id, "cancelled by user 8", by=8)
    await store.cancel_task(cancelled.id, "cancelled by user 8", by=8)  # no second event
    assert await details(store, cancelled.id) == [
        (K.CREATED, {"by": 8, "exportType": "CUSTOMER_LIST"}),
        (K.CANCELLED, {"by": 8}),
    ]

    poisoned = await create(store, user_id=9)
    [row] = await store.list_outbox(poisoned.id)
    assert await store.quarantine("other-event", poisoned.id, 1, "x") == QuarantineOutcome.MISMATCH
    assert await kinds(store, poisoned.id) == [K.CREATED]  # rolled back with its transition
    assert await store.quarantine(row.event_id, poisoned.id, 1, "bad body") == (
        QuarantineOutcome.QUARANTINED
    )
    assert (await details(store, poisoned.id))[-1] == (
        K.QUARANTINED,
        {"version": 1, "eventId": row.event_id, "reason": "bad body"},
    )


async def test_lease_recovery_and_hand_back_are_recorded(
    autojump_clock: trio.testing.MockClock, store: ExportStore
) -> None:
    crashed = await claim(store, await create(store), "instance-a", lease=10)
    await trio.sleep(11)
    [expired] = await store.expired_leases(10)
    outcome = await store.recover_expired_lease(expired, "executor lost", "gave up")
    assert outcome == RetryOutcome.SCHEDULED
    kind, detail = (await details(store, crashed.id))[-1]
    assert kind == K.LEASE_RECOVERED
    assert detail == {
        "instance": "instance-a",
        "version": 1,
        "nextVersion": 2,
        "message": "executor lost",
    }

    stopped = await claim(store, await create(store, user_id=8), "instance-b")
    assert await store.release_lease(stopped, "instance-b")
    assert (await details(store, stopped.id))[-1] == (
        K.HANDED_BACK,
        {"instance": "instance-b", "version": 2, "cause": "shutdown", "inARow": 1},
    )
    lost = await claim(store, await create(store, user_id=9), "instance-c")
    await exec_sql(
        store, "UPDATE file_export_task SET lease_owner = 'x' WHERE id = :id", {"id": lost.id}
    )
    assert not await store.fail_task(lost, "instance-c", "late")  # fenced out: no event
    assert await kinds(store, lost.id) == [K.CREATED, K.CLAIMED]


async def test_events_older_than_the_retention_are_pruned(
    autojump_clock: trio.testing.MockClock, store: ExportStore
) -> None:
    old = await create(store)
    await trio.sleep(3 * 86400)
    new = await create(store, user_id=8)
    assert await store.prune_task_events(2 * 86400) == 1
    assert await kinds(store, old.id) == []
    assert await kinds(store, new.id) == [K.CREATED]
    assert await store.prune_task_events(2 * 86400) == 0


async def test_pruning_deletes_at_most_a_chunk_oldest_first(
    autojump_clock: trio.testing.MockClock, store: ExportStore
) -> None:
    """Like the SENT outbox rows: one pass never deletes months of history at once."""
    tasks = []
    for user in range(3):
        tasks.append(await create(store, user_id=user + 1))
        await trio.sleep(60)  # each task's "created" event a minute after the previous one
    await trio.sleep(3 * 86400)
    assert await store.prune_task_events(2 * 86400, chunk=2) == 2
    assert [await kinds(store, t.id) for t in tasks] == [[], [], [K.CREATED]]
    assert await store.prune_task_events(2 * 86400, chunk=2) == 1
    assert await kinds(store, tasks[2].id) == []
