"""The reconciler re-sends only a command that is really lost (docs/design-rules.md
§8.5-1): consumer slots, the publisher and the reconciler over the in-process bus, on the
mock clock with the DB clock following it, on SQLite and MariaDB.

A command a slot acked without claiming its task (fair share held it back, the storage
was down) was seen: the task waits for a slot, which pulls it from the database, and the
command is never sent again. One the transport lost never reached a slot, and is sent
again; so is one that waits undelivered behind busy slots (the database cannot tell them
apart), but once: a third copy would wait behind the same slots.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import trio
import trio.testing

from actors.core.models import OutboxStatus, TaskStatus
from actors.core.outcomes import ExportResult
from actors.core.ports.transport import OutgoingMessage
from actors.pipeline.attempt import RunContext
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.plumbing.wakeup import ClaimRounds, Wakeup
from actors.storage.local import LocalDirectoryStorage
from actors.supervised.claim_gate import ClaimGate
from actors.supervised.consumer import ConsumerSlot
from actors.supervised.local_claims import LocalClaims
from actors.supervised.publisher import Publisher
from actors.supervised.reconciler import Reconciler
from actors.transport.embedded import EmbeddedBus
from db.store import ExportStore
from tests.actors.supervised.reconciler_helpers import Clock, queue_settings, reconciler_for
from tests.helpers import create, make_slot, start_file

Pipeline = Callable[[RunContext], Awaitable[ExportResult]]


@dataclass
class Queue:
    """What a test drives: the settings, the bus, its publisher, the reconciler, and a
    pipeline whose first run holds its slot until ``release`` is set."""

    settings: Settings
    bus: EmbeddedBus
    publisher: Publisher
    reconciler: Reconciler
    release: trio.Event
    pipeline: Pipeline


def queue(
    store: ExportStore,
    storage: LocalDirectoryStorage,
    metrics: Metrics,
    tmp_path: Path,
    *,
    slots: int = 1,
    bus: EmbeddedBus | None = None,
) -> Queue:
    settings = queue_settings(tmp_path, slots)
    bus = bus or EmbeddedBus()
    release = trio.Event()
    held: list[int] = []

    async def pipeline(ctx: RunContext) -> ExportResult:
        key = await start_file(ctx)
        if not held:  # the first run occupies its slot
            held.append(ctx.task.id)
            await release.wait()
        return ExportResult(key, "f.xlsx", "x", 0, 0)

    return Queue(
        settings,
        bus,
        Publisher(store, bus, settings, metrics, Wakeup()),
        reconciler_for(store, storage, settings, metrics),
        release,
        pipeline,
    )


async def wait_seen(store: ExportStore, task_id: int) -> None:
    """Until a slot has marked the task's command seen."""
    with trio.fail_after(60):
        while (await store.list_outbox(task_id))[0].seen_at is None:
            await trio.sleep(1)


async def wait_status(store: ExportStore, task_id: int, status: TaskStatus) -> None:
    with trio.fail_after(120):
        while (await store.get_task(task_id)).status != status:
            await trio.sleep(1)


def stop(*slots: ConsumerSlot) -> None:
    for slot in slots:
        slot.stopping.set()
        slot.stop_receiving()


async def test_a_queued_command_deferred_by_fair_share_is_not_resent(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    metrics: Metrics,
    tmp_path: Path,
) -> None:
    """One requester, two slots: the first export holds the one slot fair share lets it
    have here; the second's command is acked by the other slot as deferred. Queued four
    re-send intervals, it is not re-sent; it runs once the first slot frees, and the two
    tasks cost two sends."""
    q = queue(store, storage, metrics, tmp_path, slots=2)
    gate, local = ClaimGate(store, q.settings), LocalClaims()
    slots = [
        make_slot(store, storage, q.settings, metrics, q.pipeline, transport=q.bus, gate=gate,
                  local=local, name=f"slot-{i}")
        for i in range(2)
    ]  # fmt: skip
    first = await create(store, user_id=1, params={"n": 1})
    second = await create(store, user_id=1, params={"n": 2})
    async with trio.open_nursery() as n:
        for slot in slots:
            n.start_soon(slot.run)
        await q.publisher.publish_due()
        await wait_status(store, first.id, TaskStatus.RUNNING)
        await wait_seen(store, second.id)
        await trio.sleep(4 * q.settings.sent_stale_seconds)
        assert (await store.get_task(second.id)).status == TaskStatus.PENDING
        assert (await q.reconciler.reconcile_once())["redispatch"] == 0
        [row] = await store.list_outbox(second.id)
        assert row.status == OutboxStatus.SENT and row.attempt_count == 1
        q.release.set()
        await wait_status(store, second.id, TaskStatus.SUCCEEDED)
        stop(*slots)
    assert metrics.consumer_no_claim.labels("deferred_fair_share")._value.get() == 1
    done = await store.get_task(second.id)
    assert (done.dispatch_version, done.attempt_count) == (1, 1)
    assert len(q.bus.sent) == 2  # one send per task


async def test_a_command_acked_while_the_storage_is_down_is_not_resent(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    metrics: Metrics,
    tmp_path: Path,
) -> None:
    """While the instance's storage is not known to work its slot acks the command as
    storage_unavailable: seen, so not re-sent however long the outage lasts; a claim round
    after the storage is back runs the task."""
    q = queue(store, storage, metrics, tmp_path)
    q.release.set()  # nothing held
    storage_up = False
    rounds = ClaimRounds()
    gate = ClaimGate(store, q.settings, storage_ready=lambda: storage_up)
    slot = make_slot(store, storage, q.settings, metrics, q.pipeline, transport=q.bus,
                     gate=gate, rounds=rounds)  # fmt: skip
    task = await create(store)
    async with trio.open_nursery() as n:
        n.start_soon(slot.run)
        await q.publisher.publish_due()
        await wait_seen(store, task.id)
        for _ in range(4):
            await trio.sleep(q.settings.sent_stale_seconds)
            assert (await q.reconciler.reconcile_once())["redispatch"] == 0
        await q.publisher.publish_due()
        assert len(q.bus.sent) == 1
        storage_up = True
        rounds.set()
        await wait_status(store, task.id, TaskStatus.SUCCEEDED)
        stop(slot)
    assert metrics.consumer_no_claim.labels("storage_unavailable")._value.get() == 1


async def test_a_command_queued_behind_a_busy_slot_is_sent_again_once(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    metrics: Metrics,
    tmp_path: Path,
) -> None:
    """The only slot runs a long export; the second task's command waits in the bus, seen
    by no slot. After sentStaleSeconds it is sent again, once; eight more intervals add
    no copy. The slot, once free, claims the task from the database; the copies left in
    the bus are acked as no-claims."""
    q = queue(store, storage, metrics, tmp_path)
    slot = make_slot(store, storage, q.settings, metrics, q.pipeline, transport=q.bus)
    first = await create(store, user_id=1)
    second = await create(store, user_id=2)
    async with trio.open_nursery() as n:
        n.start_soon(slot.run)
        await q.publisher.publish_due()
        await wait_status(store, first.id, TaskStatus.RUNNING)
        await trio.sleep(q.settings.sent_stale_seconds)
        assert (await q.reconciler.reconcile_once())["redispatch"] == 1
        await q.publisher.publish_due()
        for _ in range(8):
            await trio.sleep(q.settings.sent_stale_seconds)
            assert (await q.reconciler.reconcile_once())["redispatch"] == 0
            await q.publisher.publish_due()
        assert q.bus.pending() == 2 and len(q.bus.sent) == 3
        q.release.set()
        await wait_status(store, second.id, TaskStatus.SUCCEEDED)
        with trio.fail_after(60):
            while q.bus.pending():
                await trio.sleep(1)
        stop(slot)
    done = await store.get_task(second.id)
    assert (done.dispatch_version, done.attempt_count) == (1, 1)


class DroppingBus(EmbeddedBus):
    """An in-process bus that loses the first message sent (a broker that lost it after
    accepting it): the send succeeds, no slot ever receives it."""

    def __init__(self) -> None:
        super().__init__()
        self.dropped: list[OutgoingMessage] = []

    async def send(self, message: OutgoingMessage) -> None:
        if not self.dropped:
            self.dropped.append(message)
            return
        await super().send(message)


async def test_a_command_the_transport_lost_is_resent(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    metrics: Metrics,
    tmp_path: Path,
) -> None:
    """A command no slot ever received is re-sent once it is stale, at the same version,
    and the task runs once (a slot with no claim rounds, so only a command can start it)."""
    bus = DroppingBus()
    q = queue(store, storage, metrics, tmp_path, bus=bus)
    q.release.set()  # nothing held
    slot = make_slot(store, storage, q.settings, metrics, q.pipeline, transport=bus)
    task = await create(store)
    async with trio.open_nursery() as n:
        n.start_soon(slot.run)
        await q.publisher.publish_due()
        assert len(bus.dropped) == 1 and bus.pending() == 0
        await trio.sleep(q.settings.sent_stale_seconds - 1)
        assert (await q.reconciler.reconcile_once())["redispatch"] == 0  # not stale yet
        await trio.sleep(1)
        assert (await q.reconciler.reconcile_once())["redispatch"] == 1
        await q.publisher.publish_due()
        await wait_status(store, task.id, TaskStatus.SUCCEEDED)
        stop(slot)
    [row] = await store.list_outbox(task.id)
    assert (row.dispatch_version, row.attempt_count, row.seen_at) == (1, 2, None)
    assert row.resent_at is not None
    done = await store.get_task(task.id)
    assert (done.dispatch_version, done.attempt_count) == (1, 1)
