"""Poison commands end in the dead-letter channel and are quarantined (§6.4, §9.4)."""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing

from actors.core.errors import TransientDatabaseError
from actors.core.models import OutboxStatus, TaskStatus
from actors.core.outcomes import ExportResult, QuarantineOutcome
from actors.core.ports.transport import OutgoingMessage
from actors.pipeline.attempt import RunContext
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.storage.local import LocalDirectoryStorage
from actors.supervised.consumer import ConsumerSlot
from actors.supervised.dlq import DlqHandler
from actors.supervised.reconciler import Reconciler
from actors.transport.embedded import EmbeddedBus
from db.store import ExportStore
from tests.helpers import claim, create


async def _no_pipeline(ctx: RunContext) -> ExportResult:
    raise AssertionError("a poison message must never run an export")


async def poison(bus: EmbeddedBus, store: ExportStore, task_id: int, **props: str) -> None:
    """Send a malformed body with the task's real locating properties."""
    [row] = [r for r in await store.list_outbox(task_id)]
    properties = {
        "eventId": row.event_id,
        "taskId": str(task_id),
        "dispatchVersion": str(row.dispatch_version),
        "schemaVersion": "1",
    }
    properties.update(props)
    await bus.send(OutgoingMessage(row.topic, row.tag, row.message_key, "{broken", properties))


async def test_embedded_bus_redelivers_then_dead_letters() -> None:
    bus = EmbeddedBus(max_reconsume_times=2)
    await bus.send(OutgoingMessage("t", "EXPORT_TASK", "1", "x", {"eventId": "e"}))
    seen = []
    for _ in range(3):
        d = await bus.receive()
        seen.append(d.reconsume_times)
        await d.reject()
    assert seen == [0, 1, 2] and bus.pending() == 0
    dead = await bus.receive_dead_letter()
    assert dead.properties == {"eventId": "e"} and bus.dead_lettered == 1


async def test_poison_message_is_quarantined_and_never_resent(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """§19.1 DLQ Handler 使用属性自动执行 QUARANTINED + FAILED 同事务更新; Reconciler
    永不补投 QUARANTINED (waits past sentStaleSeconds)."""
    bus = EmbeddedBus()
    task = await create(store)
    [row] = await store.claim_due_outbox("pub", 60, 10)
    await store.mark_outbox_sent(row.id, "pub")
    await poison(bus, store, task.id)
    slot = ConsumerSlot("s", store, bus, storage, settings, metrics, _no_pipeline, trio.Event())
    for _ in range(3):  # first delivery + maxReconsumeTimes (2) redeliveries
        await slot.handle(await bus.receive())
    handler = DlqHandler(store, bus, metrics)
    assert await handler.handle(await bus.receive_dead_letter()) == (QuarantineOutcome.QUARANTINED)
    after = await store.get_task(task.id)
    assert after.status == TaskStatus.FAILED and "corrupted" in after.failure_message
    [quarantined] = await store.list_outbox(task.id)
    assert quarantined.status == OutboxStatus.QUARANTINED
    assert quarantined.last_error.startswith("DLQ quarantine")
    assert metrics.dlq_messages._value.get() == 1
    # A quarantined task is a FAILED task for the failure-rate alert.
    completed = {"type": task.export_type, "status": "FAILED"}
    assert metrics.registry.get_sample_value("export_task_completed_total", completed) == 1
    rec = Reconciler(store, storage, settings, metrics)
    await trio.sleep(settings.sent_stale_seconds * 2)
    assert (await rec.reconcile_once())["redispatch"] == 0
    assert bus.pending() == 0


async def test_dlq_message_for_a_stale_version_changes_nothing(
    store: ExportStore,
    metrics: Metrics,
) -> None:
    """§19.1 旧版本、eventId 不匹配消息不得误伤当前任务."""
    bus = EmbeddedBus(max_reconsume_times=0)
    task = await create(store)
    running = await claim(store, task)
    await store.schedule_retry(running, "owner-a", "503", 0)  # now at version 2
    v1 = [r for r in await store.list_outbox(task.id) if r.dispatch_version == 1][0]
    await bus.send(
        OutgoingMessage(
            "t",
            "EXPORT_TASK",
            str(task.id),
            "{",
            {
                "eventId": v1.event_id,
                "taskId": str(task.id),
                "dispatchVersion": "1",
                "schemaVersion": "1",
            },
        )
    )
    await (await bus.receive()).reject()
    assert await DlqHandler(store, bus, metrics).handle(await bus.receive_dead_letter()) == (
        QuarantineOutcome.MISMATCH
    )
    after = await store.get_task(task.id)
    assert after.status == TaskStatus.PENDING and after.dispatch_version == 2
    statuses = [r.status for r in await store.list_outbox(task.id)]
    assert OutboxStatus.QUARANTINED not in statuses and len(statuses) == 2
    completed = {"type": task.export_type, "status": "FAILED"}
    assert metrics.registry.get_sample_value("export_task_completed_total", completed) is None


async def test_dlq_message_with_a_foreign_event_id_changes_nothing(
    store: ExportStore,
    metrics: Metrics,
) -> None:
    bus = EmbeddedBus(max_reconsume_times=0)
    task = await create(store)
    await poison(bus, store, task.id, eventId="not-ours")
    await (await bus.receive()).reject()
    assert await DlqHandler(store, bus, metrics).handle(await bus.receive_dead_letter()) == (
        QuarantineOutcome.MISMATCH
    )
    assert (await store.get_task(task.id)).status == TaskStatus.PENDING
    [row] = await store.list_outbox(task.id)
    assert row.status == OutboxStatus.PENDING


async def test_dlq_message_without_locating_properties_is_logged_critical_and_acked(
    store: ExportStore,
    metrics: Metrics,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """§19.1 缺属性消息不得误伤当前任务; logged CRITICAL, acked, counted."""
    bus = EmbeddedBus(max_reconsume_times=0)
    task = await create(store)
    await bus.send(OutgoingMessage("t", "EXPORT_TASK", "k", "{", {"taskId": str(task.id)}))
    await (await bus.receive()).reject()
    with caplog.at_level(logging.CRITICAL, logger="actors.supervised.dlq"):
        assert await DlqHandler(store, bus, metrics).handle(await bus.receive_dead_letter()) is None
    assert any(r.levelno == logging.CRITICAL for r in caplog.records)
    assert (await store.get_task(task.id)).status == TaskStatus.PENDING
    assert metrics.dlq_messages._value.get() == 1


@pytest.mark.parametrize(
    "fault", [OSError("database unavailable"), TransientDatabaseError("connection lost")]
)
async def test_dlq_handler_retries_database_failures_before_acking(
    fault: Exception,
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    metrics: Metrics,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """§19.1 DLQ: 任一步失败则回滚且不确认 — the delivery is acked only after the quarantine
    transaction commits; database errors are retried without limit (§9.4.3), with back-off
    for every kind of error — a transient one retried at once would spin on the database."""
    bus = EmbeddedBus(max_reconsume_times=0)
    task = await create(store)
    await poison(bus, store, task.id)
    await (await bus.receive()).reject()
    inner = await bus.receive_dead_letter()
    acked: list[bool] = []

    class TrackingDelivery:
        body, properties = inner.body, inner.properties
        reconsume_times, message_id = inner.reconsume_times, inner.message_id

        async def ack(self) -> None:
            acked.append(True)
            await inner.ack()

        async def reject(self) -> None:
            await inner.reject()

    delivery = TrackingDelivery()
    real_quarantine = store.quarantine
    failures = 0

    async def flaky_quarantine(*args: object) -> QuarantineOutcome:
        nonlocal failures
        if failures < 4:
            failures += 1
            assert not acked  # not acked while the database keeps failing
            raise fault
        return await real_quarantine(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "quarantine", flaky_quarantine)
    started = trio.current_time()
    outcome = await DlqHandler(store, bus, metrics).handle(delivery)
    assert outcome == QuarantineOutcome.QUARANTINED and failures == 4 and acked == [True]
    assert trio.current_time() - started >= 0.5 + 1 + 2 + 4  # backed off between tries
    assert (await store.get_task(task.id)).status == TaskStatus.FAILED
