"""The operator's read-only queries (``db/store/inspection.py``) on SQLite and MariaDB:
the list across tenants with its filters, and one task's row, outbox rows and events read
with the DB clock, which is what ``export-center inspect`` diagnoses."""

from __future__ import annotations

import trio
import trio.testing

from actors.core.events import TaskEventKind
from actors.core.models import OutboxStatus, TaskStatus
from actors.core.ops.troubleshooting import Symptom, diagnose, relative_time
from db.store import ExportStore
from tests.helpers import claim, create


async def test_operator_list_sees_every_tenant_with_filters(store: ExportStore) -> None:
    a = await create(store, user_id=1)
    b = await create(store, user_id=2, tenant_id=9)
    c = await create(store, user_id=3, export_type="ORDER_LIST")
    running = await claim(store, a)

    everything = await store.operator_list()
    assert [t.id for t in everything] == [c.id, b.id, a.id]  # newest first, every tenant
    assert [t.id for t in await store.operator_list(limit=2)] == [c.id, b.id]
    assert [t.id for t in await store.operator_list((TaskStatus.RUNNING,))] == [running.id]
    pending = await store.operator_list((TaskStatus.PENDING, TaskStatus.PENDING))
    assert [t.id for t in pending] == [c.id, b.id]  # a status given twice counts once
    both = await store.operator_list((TaskStatus.RUNNING, TaskStatus.PENDING), limit=2)
    assert [t.id for t in both] == [c.id, b.id]  # merged newest first, then cut
    assert [t.id for t in await store.operator_list(export_type="ORDER_LIST")] == [c.id]
    of_type = await store.operator_list((TaskStatus.PENDING,), export_type="CUSTOMER_LIST")
    assert [t.id for t in of_type] == [b.id]
    assert await store.operator_list((TaskStatus.FAILED,)) == []


async def test_inspect_reads_row_outbox_events_and_db_time_together(
    store: ExportStore, autojump_clock: trio.testing.MockClock
) -> None:
    assert await store.inspect_task(123) is None
    task = await claim(store, await create(store), lease=10, max_duration=30)

    seen = await store.inspect_task(task.id)
    assert seen is not None
    assert seen.task.status == TaskStatus.RUNNING and seen.task.lease_owner == "owner-a"
    # claimed before its command was sent: the claim closed it (never sent)
    assert [(r.dispatch_version, r.status) for r in seen.outbox] == [(1, OutboxStatus.SENT)]
    assert seen.current_outbox() == seen.outbox[0]
    assert [e.kind for e in seen.events] == [TaskEventKind.CREATED, TaskEventKind.CLAIMED]
    assert seen.db_now == await store.db_now()  # the mock clock has not moved
    assert seen.task.lease_until is not None
    assert relative_time(seen.task.lease_until, seen.db_now) == "in 10.0 s"
    assert diagnose(seen) == ()

    await trio.sleep(31)  # DB time follows: the lease ended, the deadline passed
    late = await store.inspect_task(task.id)
    assert late is not None and late.task.lease_until is not None
    assert relative_time(late.task.lease_until, late.db_now) == "21.0 s ago"
    assert [f.symptom for f in diagnose(late)] == [Symptom.LEASE_RECOVERY, Symptom.PAST_DEADLINE]

    recovered = (await store.expired_leases(10))[0]
    await store.recover_expired_lease(recovered, "lease expired", "lease expired, spent")
    after = await store.inspect_task(task.id, event_limit=2)
    assert after is not None and after.task.status == TaskStatus.PENDING
    assert [e.kind for e in after.events] == [  # the newest two, oldest first
        TaskEventKind.CLAIMED,
        TaskEventKind.LEASE_RECOVERED,
    ]
    assert [f.symptom for f in diagnose(after)] == [Symptom.LEASE_RECOVERY, Symptom.RETRIES]
