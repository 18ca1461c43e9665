"""Fair share of consumer slots between requesters, on the mock clock (issue 13 item 7).

Each test runs real consumer slots and the real publisher over the embedded bus against
the store (SQLite and MariaDB); the export body is a pipeline that "takes" the number of
seconds named in the task's parameters, so heavy and light exports differ only in time.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

import pytest
import trio
import trio.testing

from actors.core.command_message import Command
from actors.core.models import Task, TaskStatus
from actors.core.outcomes import ExportResult
from actors.core.ports.transport import OutgoingMessage
from actors.pipeline.attempt import RunContext
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.plumbing.wakeup import Wakeup
from actors.storage.keys import new_object_key
from actors.storage.local import LocalDirectoryStorage
from actors.supervised.claim_gate import ClaimGate
from actors.supervised.consumer import ConsumerSlot
from actors.supervised.publisher import Publisher
from actors.transport.embedded import EmbeddedBus
from db.store import ExportStore
from tests.helpers import claim, create, make_settings
from tests.servers import RecordingDelivery

HEAVY = 7
LIGHT = 8


@dataclass
class Recorder:
    """What the pipeline saw: one entry per run, (task id, trio start time)."""

    runs: list[tuple[int, float]] = field(default_factory=list)

    def starts(self, task_id: int) -> list[float]:
        return [at for tid, at in self.runs if tid == task_id]


def fair_settings(tmp_path: Path, slots: int, **overrides: object) -> Settings:
    # The heartbeat (7 s) divides no export length used here, so a lease renewal never
    # falls on the instant a run ends: cancelling the watchdog in the middle of a MariaDB
    # query discards its connection, and the discarded socket is then reported by the
    # garbage collector as a ResourceWarning in whichever test runs next.
    return make_settings(
        tmp_path,
        consumer_concurrency=slots,
        task_lease_seconds=30,
        task_heartbeat_seconds=7,
        max_duration_minutes=10,
        **overrides,
    )


def timed_pipeline(
    store: ExportStore, storage: LocalDirectoryStorage, recorder: Recorder
) -> Callable[[RunContext], object]:
    async def pipeline(ctx: RunContext) -> ExportResult:
        recorder.runs.append((ctx.task.id, trio.current_time()))
        key = new_object_key(ctx.task.id)
        assert await store.record_object_key(ctx.task, ctx.owner, key)
        f = await storage.create(key)
        f.write(b"xlsx")
        f.close()
        await trio.sleep(float(ctx.task.parameters["seconds"]))
        return ExportResult(key, "f.xlsx", "application/x", 4, 1)

    return pipeline


@dataclass
class Instance:
    """One instance's slots and publisher, running in a nursery."""

    store: ExportStore
    bus: EmbeddedBus
    wakeup: Wakeup
    slots: list[ConsumerSlot]

    async def create(self, user: int, seconds: float, **params: object) -> Task:
        task = await create(self.store, user_id=user, params={"seconds": seconds, **params})
        self.wakeup.set()  # as the API does after the commit
        return task


@asynccontextmanager
async def running_instance(
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
    recorder: Recorder,
) -> AsyncIterator[Instance]:
    bus = EmbeddedBus()
    wakeup = Wakeup()
    stopping = trio.Event()
    pipeline = timed_pipeline(store, storage, recorder)
    gate = ClaimGate(store, settings)
    slots = [
        ConsumerSlot(
            f"slot-{i}",
            store,
            bus,
            storage,
            settings,
            metrics,
            pipeline,  # type: ignore[arg-type]
            stopping,
            rand=lambda: 0.5,
            gate=gate,
        )
        for i in range(settings.consumer_concurrency)
    ]
    publisher = Publisher(store, bus, settings, metrics, wakeup)

    async def publish_until_stopping() -> None:
        # Publisher.run, but it stops between rounds: cancelling a MariaDB query in
        # flight would leave its connection for the garbage collector.
        while not stopping.is_set():
            await publisher.publish_due()
            await wakeup.wait(settings.publisher_poll_ms / 1000)

    async with trio.open_nursery() as n:
        n.start_soon(publish_until_stopping)
        for slot in slots:
            n.start_soon(slot.run)
        yield Instance(store, bus, wakeup, slots)
        stopping.set()  # as at SIGTERM: every actor finishes what it is doing, then returns
        wakeup.set()
        for slot in slots:
            slot.stop_receiving()


async def wait_all_succeeded(store: ExportStore, tasks: list[Task], limit: float = 3600) -> None:
    """Poll (mock time) until every task SUCCEEDED."""
    with trio.fail_after(limit):
        while True:
            now = [await store.get_task(t.id) for t in tasks]
            if all(t.status == TaskStatus.SUCCEEDED for t in now):
                return
            await trio.sleep(0.5)


def seconds_between(a: datetime | None, b: datetime | None) -> float:
    assert a is not None and b is not None
    return (b - a).total_seconds()


async def test_light_export_starts_at_once_beside_a_heavy_users_long_exports(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    metrics: Metrics,
    tmp_path: Path,
) -> None:
    """The reported case: 3 slots, one user's three 60 s exports, then another user's
    1 s export. It starts within a second of its creation instead of after a heavy one
    has finished, and every export runs exactly once."""
    settings = fair_settings(tmp_path, slots=3)
    recorder = Recorder()
    async with running_instance(store, storage, settings, metrics, recorder) as inst:
        heavy = [await inst.create(HEAVY, 60, i=i) for i in range(3)]
        await trio.sleep(1)
        light = await inst.create(LIGHT, 1)
        await wait_all_succeeded(store, [*heavy, light])
    done = await store.get_task(light.id)
    # Before fair share it waited for a heavy export: 59 s. The bound leaves room for the
    # MariaDB runs' clock, which may jump while a query is in flight on a busy machine.
    assert seconds_between(done.requested_at, done.started_at) <= 5.0
    for t in [*heavy, light]:
        after = await store.get_task(t.id)
        assert (after.dispatch_version, after.attempt_count) == (1, 1)
        assert len(recorder.starts(t.id)) == 1


async def test_round_robin_between_requesters_on_a_single_slot(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    metrics: Metrics,
    tmp_path: Path,
) -> None:
    """One slot, one user's three 10 s exports queued before another user's: the other
    user's export runs second (round robin by requester), not last."""
    settings = fair_settings(tmp_path, slots=1)
    recorder = Recorder()
    async with running_instance(store, storage, settings, metrics, recorder) as inst:
        heavy = [await inst.create(HEAVY, 10, i=i) for i in range(3)]
        light = await inst.create(LIGHT, 10)
        await wait_all_succeeded(store, [*heavy, light])
    order = [tid for tid, _ in sorted(recorder.runs, key=lambda r: r[1])]
    assert order == [heavy[0].id, light.id, heavy[1].id, heavy[2].id]


async def test_a_lone_user_keeps_all_but_the_reserved_slot_busy(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    metrics: Metrics,
    tmp_path: Path,
) -> None:
    """Only one user has work on 3 slots: two exports run at once (one slot stays free
    for someone else) and the third starts the moment one of them finishes, without
    waiting for the reconciler. With 4 slots, the user's three exports all run at once."""
    settings = fair_settings(tmp_path / "three", slots=3)
    recorder = Recorder()
    async with running_instance(store, storage, settings, metrics, recorder) as inst:
        first = [await inst.create(HEAVY, 20, i=i) for i in range(3)]
        await wait_all_succeeded(store, first)
    starts = sorted(at for _, at in recorder.runs)
    assert starts[1] - starts[0] <= 3.0
    assert starts[2] - starts[0] == pytest.approx(20, abs=3.0)

    settings = fair_settings(tmp_path / "four", slots=4)
    recorder = Recorder()
    async with running_instance(store, storage, settings, metrics, recorder) as inst:
        base = trio.current_time()
        second = [await inst.create(HEAVY, 20, i=10 + i) for i in range(3)]
        await wait_all_succeeded(store, second)
    assert all(at - base <= 3.0 for _, at in recorder.runs)


async def test_no_slot_idles_while_two_users_have_work(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    metrics: Metrics,
    tmp_path: Path,
) -> None:
    """4 slots, one user's three exports and another user's one, all created together:
    all four run at once (a command deferred for the share is run by the pull)."""
    settings = fair_settings(tmp_path, slots=4)
    recorder = Recorder()
    async with running_instance(store, storage, settings, metrics, recorder) as inst:
        base = trio.current_time()
        tasks = [await inst.create(HEAVY, 30, i=i) for i in range(3)]
        tasks.append(await inst.create(LIGHT, 30))
        await wait_all_succeeded(store, tasks)
    assert len(recorder.runs) == 4
    assert all(at - base <= 3.0 for _, at in recorder.runs)


async def test_a_deferred_task_runs_when_a_slot_frees_and_duplicates_run_it_once(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    metrics: Metrics,
    tmp_path: Path,
) -> None:
    """2 slots, one user's two exports and three copies of every command on the bus: the
    second export is deferred (one slot is kept for others), runs as soon as the first
    finishes, and each export runs once at version 1 — the copies are acked as no-ops."""
    settings = fair_settings(tmp_path, slots=2)
    recorder = Recorder()
    async with running_instance(store, storage, settings, metrics, recorder) as inst:
        tasks = [await inst.create(HEAVY, 15, i=i) for i in range(2)]
        for t in tasks:
            for _ in range(2):
                await inst.bus.send(_copy_of_command(t))
        await wait_all_succeeded(store, tasks)
        with trio.fail_after(60):
            while inst.bus.pending():
                await trio.sleep(0.5)
    starts = sorted(at for _, at in recorder.runs)
    assert len(starts) == 2
    assert starts[1] - starts[0] == pytest.approx(15, abs=3.0)
    for t in tasks:
        after = await store.get_task(t.id)
        assert (after.dispatch_version, after.attempt_count) == (1, 1)


def _copy_of_command(task: Task) -> OutgoingMessage:
    cmd = Command.new(task.id, task.export_type, task.dispatch_version, "t", rand=os.urandom)
    return OutgoingMessage("t", "EXPORT_TASK", str(task.id), cmd.to_json(), cmd.properties())


async def test_a_deferred_command_is_acked_changes_nothing_and_runs_when_a_slot_frees(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    metrics: Metrics,
    tmp_path: Path,
) -> None:
    """3 slots, the user already holds 2: the command for the user's third task is acked
    and counted as ``deferred_fair_share``; the task stays PENDING at version 1 with no
    attempt spent and no new outbox row (no re-dispatch): its one row only marked seen, so
    the reconciler does not re-send it. When one of the user's runs ends, the freed slot
    claims and runs it from the database."""
    settings = fair_settings(tmp_path, slots=3)
    recorder = Recorder()
    gate = ClaimGate(store, settings)
    slot = ConsumerSlot(
        "slot-2",
        store,
        EmbeddedBus(),
        storage,
        settings,
        metrics,
        timed_pipeline(store, storage, recorder),  # type: ignore[arg-type]
        trio.Event(),
        gate=gate,
    )
    tasks = [await create(store, user_id=HEAVY, params={"seconds": 1, "i": i}) for i in range(3)]
    held = [await claim(store, t, settings.instance_id) for t in tasks[:2]]
    outbox_before = await store.list_outbox(tasks[2].id)
    delivery = RecordingDelivery(
        Command.new(tasks[2].id, tasks[2].export_type, 1, "t", rand=os.urandom).to_json()
    )

    await slot.handle(delivery)
    assert delivery.events == ["ack"] and recorder.runs == []
    after = await store.get_task(tasks[2].id)
    assert (after.status, after.dispatch_version, after.attempt_count) == (
        TaskStatus.PENDING,
        1,
        0,
    )
    [seen] = await store.list_outbox(tasks[2].id)
    assert seen.seen_at is not None
    assert [replace(seen, seen_at=None)] == outbox_before
    sample = metrics.registry.get_sample_value(
        "export_consumer_no_claim_total", {"reason": "deferred_fair_share"}
    )
    assert sample == 1

    await slot.run_pulled()  # the user still holds 2 of 3: nothing may run
    assert recorder.runs == []
    assert await store.complete_task(
        held[0],
        settings.instance_id,
        file_name="f.xlsx",
        object_key="k",
        content_type="x",
        size_bytes=1,
        rows=1,
        retention_seconds=60,
    )
    await slot.run_pulled()
    assert [tid for tid, _ in recorder.runs] == [tasks[2].id]
    done = await store.get_task(tasks[2].id)
    assert (done.status, done.dispatch_version, done.attempt_count) == (
        TaskStatus.SUCCEEDED,
        1,
        1,
    )
