"""Consumer slot: decoding, claiming and the ack discipline (§8.1, §8.2).

Running the claimed task is the executor's (``tests/actors/supervised/test_execution.py``).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

import trio
import trio.testing

from actors.core.command_message import Command
from actors.core.models import TaskStatus
from actors.core.outcomes import ExportResult
from actors.pipeline.attempt import RunContext
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.plumbing.wakeup import ClaimRounds
from actors.storage.local import LocalDirectoryStorage
from actors.supervised.claim_gate import ClaimGate
from db.store import ExportStore
from tests.helpers import claim, create, make_slot, start_file
from tests.servers import RecordingDelivery


def make_settings_like(settings: Settings, **changes: Any) -> Settings:
    """``settings`` with some fields changed (validated again)."""
    return settings.model_copy(update=changes)


async def test_claimed_command_is_acked_before_the_export_runs(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    task = await create(store)
    delivery = RecordingDelivery(
        Command.new(task.id, task.export_type, 1, "t", rand=os.urandom).to_json()
    )

    async def pipeline(ctx: RunContext) -> ExportResult:
        delivery.events.append("run")
        key = await start_file(ctx)
        return ExportResult(key, "f.xlsx", "x", 18, 1)

    await make_slot(store, storage, settings, metrics, pipeline).handle(delivery)
    assert delivery.events == ["ack", "run"]


async def test_every_no_claim_branch_acks(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """§19.1 Consumer 抢占：每个分支都必须断言返回 CONSUME_SUCCESS (ack)."""
    task = await create(store)
    await claim(store, task, "someone-else")
    deliveries = [
        RecordingDelivery(
            Command.new(task.id, task.export_type, 1, "t", rand=os.urandom).to_json()
        ),  # running
        RecordingDelivery(
            Command.new(999, "CUSTOMER_LIST", 1, "t", rand=os.urandom).to_json()
        ),  # missing
    ]

    async def pipeline(ctx: RunContext) -> ExportResult:
        raise AssertionError("must not run")

    slot = make_slot(store, storage, settings, metrics, pipeline)
    for d in deliveries:
        await slot.handle(d)
    assert [d.events for d in deliveries] == [["ack"], ["ack"]]


async def test_undecodable_command_is_rejected_not_acked(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """§19.1 主 Consumer 反序列化失败时不确认消费。"""
    delivery = RecordingDelivery("{not json")

    async def pipeline(ctx: RunContext) -> ExportResult:
        raise AssertionError("must not run")

    await make_slot(store, storage, settings, metrics, pipeline).handle(delivery)
    assert delivery.events == ["reject"]


class CountingStore:
    """The store, counting the reads of due tasks (``fair_share_load``)."""

    def __init__(self, store: ExportStore) -> None:
        self._store = store
        self.due_reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def fair_share_load(self, owner: str, limit: int = 500) -> Any:
        self.due_reads += 1
        return await self._store.fair_share_load(owner, limit)


def signalling_pipeline(
    store: ExportStore, storage: LocalDirectoryStorage
) -> tuple[trio.Event, Callable[[RunContext], Awaitable[ExportResult]]]:
    """A pipeline that writes a small file, and the event it sets when a run starts."""
    ran = trio.Event()

    async def pipeline(ctx: RunContext) -> ExportResult:
        ran.set()
        key = await start_file(ctx)
        return ExportResult(key, "f.xlsx", "x", 18, 1)

    return ran, pipeline


async def test_an_idle_slot_claims_a_due_task_in_the_next_claim_round_with_no_command(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """The bus only makes dispatch fast: with no command ever delivered (the bus is down,
    or the command was lost), an idle slot claims the due task from the database in the
    next claim round (docs/design-rules.md §4.2, §8.1)."""
    task = await create(store)
    ran, pipeline = signalling_pipeline(store, storage)
    rounds = ClaimRounds()
    slot = make_slot(store, storage, settings, metrics, pipeline, rounds=rounds)
    async with trio.open_nursery() as n:
        n.start_soon(slot.run)
        await trio.testing.wait_all_tasks_blocked()
        assert not ran.is_set()  # a slot waiting for a command alone would wait forever
        started = trio.current_time()
        ticking = trio.CancelScope()

        async def tick() -> None:
            with ticking:
                await rounds.tick(2.0)

        n.start_soon(tick)
        with trio.fail_after(60):
            await ran.wait()
        assert trio.current_time() - started == 2.0  # the first round, not later
        ticking.cancel()
        slot.stopping.set()  # the run goes on to its end; then the slot returns
        n.cancel_scope.deadline = trio.current_time() + 60
    assert not n.cancel_scope.cancelled_caught
    done = await store.get_task(task.id)
    assert done is not None and done.status == TaskStatus.SUCCEEDED


async def test_a_claim_round_reads_the_database_once_whatever_the_number_of_idle_slots(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """Four idle slots and nothing due: each round costs one read, not four."""

    async def pipeline(ctx: RunContext) -> ExportResult:
        raise AssertionError("nothing is due")

    counting = CountingStore(store)
    gate = ClaimGate(counting, make_settings_like(settings, consumer_concurrency=4))
    rounds = ClaimRounds()
    slots = [
        make_slot(store, storage, settings, metrics, pipeline, rounds=rounds, gate=gate)
        for _ in range(4)
    ]
    async with trio.open_nursery() as n:
        for slot in slots:
            n.start_soon(slot.run)
        await trio.testing.wait_all_tasks_blocked()
        for expected in (1, 2, 3):
            rounds.set()
            with trio.fail_after(60):  # every slot has pulled and waits for the next round
                while rounds.waiting() < len(slots):
                    await trio.sleep(0.01)
            assert counting.due_reads == expected
        n.cancel_scope.cancel()


async def test_a_create_wakes_idle_slots_at_once(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """A round started by ``set`` (the API's wake-up after a create) claims at once,
    without waiting for the poll."""
    ran, pipeline = signalling_pipeline(store, storage)
    rounds = ClaimRounds()
    slot = make_slot(store, storage, settings, metrics, pipeline, rounds=rounds)
    async with trio.open_nursery() as n:
        n.start_soon(slot.run)
        n.start_soon(rounds.tick, 3600.0)
        await trio.testing.wait_all_tasks_blocked()
        await create(store)
        started = trio.current_time()
        rounds.set()
        with trio.fail_after(60):
            await ran.wait()
        assert trio.current_time() - started < 1.0
        n.cancel_scope.cancel()
