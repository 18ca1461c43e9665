"""Publisher (§7.4): send, mark SENT, back off on failure, never give up."""

from __future__ import annotations

import trio
import trio.testing

from actors.core.command_message import Command
from actors.core.errors import TransportSendError
from actors.core.models import OutboxStatus
from actors.core.ports.transport import OutgoingMessage
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.plumbing.wakeup import Wakeup
from actors.supervised.publisher import Publisher
from actors.transport.embedded import EmbeddedBus
from db.store import ExportStore
from tests.helpers import create


class BrokenTransport(EmbeddedBus):
    """A broker that refuses every send."""

    async def send(self, message: OutgoingMessage) -> None:
        raise TransportSendError("connect to 127.0.0.1:9876 failed")


async def test_message_carries_payload_and_the_four_locating_properties(
    store: ExportStore,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """§19.1 Producer：四个定位字段同时写入 payload 与 User Properties，且与 Outbox 列一致。"""
    bus = EmbeddedBus()
    task = await create(store)
    await Publisher(store, bus, settings, metrics, Wakeup()).publish_due()
    [msg] = bus.sent
    [row] = await store.list_outbox(task.id)
    cmd = Command.from_json(msg.body)
    assert msg.properties == {
        "eventId": row.event_id,
        "taskId": str(task.id),
        "dispatchVersion": "1",
        "schemaVersion": "1",
    }
    assert (cmd.event_id, cmd.task_id, cmd.dispatch_version) == (row.event_id, task.id, 1)
    assert (msg.topic, msg.tag, msg.key) == (row.topic, "EXPORT_TASK", str(task.id))
    assert row.status == OutboxStatus.SENT


async def test_send_failures_back_off_and_never_become_terminal(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """§19.1 Publisher：发送失败退避；连续失败 30 次后仍保持 PENDING 继续重试（无终态放弃）。"""
    task = await create(store)
    publisher = Publisher(store, BrokenTransport(), settings, metrics, Wakeup())
    delays = []
    for attempt in range(1, 31):
        assert await publisher.publish_due() == 1
        [row] = await store.list_outbox(task.id)
        assert row.status == OutboxStatus.PENDING and row.attempt_count == attempt
        assert "9876" in row.last_error
        delays.append((row.next_retry_at - row.updated_at).total_seconds())
        assert await publisher.publish_due() == 0  # not due inside the backoff
        await trio.sleep(delays[-1])
    assert delays[:6] == [5, 15, 60, 300, 900, 900]
    assert set(delays[5:]) == {900}
    assert (await store.get_task(task.id)).attempt_count == 0


async def test_publisher_is_woken_by_a_create_without_waiting_for_the_poll(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    settings: Settings,
    metrics: Metrics,
) -> None:
    bus = EmbeddedBus()
    wakeup = Wakeup()
    publisher = Publisher(store, bus, settings, metrics, wakeup)
    async with trio.open_nursery() as n:
        n.start_soon(publisher.run)
        await trio.sleep(1)
        start = trio.current_time()
        await create(store)
        wakeup.set()
        while not bus.sent:
            await trio.sleep(0.001)
        assert trio.current_time() - start < 0.1  # the poll interval is 5 s
        n.cancel_scope.cancel()
