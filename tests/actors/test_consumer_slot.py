"""Consumer slot: decoding, claiming and the ack discipline (§8.1, §8.2).

Running the claimed task is the executor's (``tests/actors/test_execution.py``).
"""

from __future__ import annotations

import trio

from actors.config import Settings
from actors.core.models import Command
from actors.core.outcomes import ExportResult
from actors.metrics import Metrics
from actors.pipeline.context import RunContext
from actors.pipeline.storage import LocalDirectoryStorage
from db.store import ExportStore
from tests.helpers import RecordingDelivery, claim, create, make_slot, start_file


async def test_claimed_command_is_acked_before_the_export_runs(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    task = await create(store)
    delivery = RecordingDelivery(Command.new(task.id, task.export_type, 1, "t").to_json())

    async def pipeline(ctx: RunContext) -> ExportResult:
        delivery.events.append("run")
        key = await start_file(store, storage, ctx)
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
        RecordingDelivery(Command.new(task.id, task.export_type, 1, "t").to_json()),  # running
        RecordingDelivery(Command.new(999, "CUSTOMER_LIST", 1, "t").to_json()),  # missing
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
