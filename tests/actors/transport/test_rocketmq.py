"""The RocketMQ transport against a real broker (seed §6.2, §6.4, §8.1, §9.4; docs/rocketmq.md).

Each test opens its own transport on the session's topic prefix, so every test also shows
that a new consumer of the group takes over from the previous one. Deliveries of messages
a test did not send are acked and ignored. Waits are bounded polls of a condition; the
only fixed windows are the "nothing more arrives" checks, a few times longer than the
dev broker's 1 s redelivery delay.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import uuid
from collections.abc import AsyncIterator, Collection
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.core.command_message import LOCATING_PROPERTIES
from actors.core.errors import TransportSendError
from actors.core.models import OutboxStatus, TaskStatus
from actors.core.outcomes import ExportResult, QuarantineOutcome
from actors.core.ports.transport import OutgoingMessage
from actors.pipeline.attempt import RunContext
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.storage.local import LocalDirectoryStorage
from actors.supervised.consumer import ConsumerSlot
from actors.supervised.dlq import DlqHandler
from actors.supervised.publisher import outgoing_message
from actors.transport.rocketmq import (
    PROP_ORIGIN_MESSAGE_ID,
    PROP_ORIGIN_TOPIC,
    RocketMQDelivery,
    RocketMQTransport,
    native_core_info,
    open_rocketmq_transport,
)
from db.ids import IdGenerator
from db.sqlite import SqliteDatabase, wall_clock_ms
from db.store import ExportStore
from tests.helpers import create, make_settings
from tests.servers import Broker

pytestmark = pytest.mark.rocketmq

log = logging.getLogger(__name__)

#: bound for a delivery to arrive, seconds (first deliveries include a rebalance)
ARRIVAL_TIMEOUT = 30.0
#: "no further delivery" window, seconds: the dev broker redelivers after 1 s
QUIET_WINDOW = 4.0


def rmq_settings(broker: Broker, tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "transport": "rocketmq",
        "mq_topic_prefix": broker.topic_prefix,
        "rocketmq_name_server": broker.name_server,
        "consumer_enabled": True,  # off by default with RocketMQ (staged switches)
        "consumer_concurrency": 2,
        "max_reconsume_times": 2,
        "instance_id": "rocketmq-test",
    }
    values.update(overrides)
    return make_settings(tmp_path, **values)


@pytest.fixture
async def transport(rocketmq_broker: Broker, tmp_path: Path) -> AsyncIterator[RocketMQTransport]:
    async with open_rocketmq_transport(rmq_settings(rocketmq_broker, tmp_path)) as t:
        yield t


def command(transport: RocketMQTransport, task_id: int = 190000000000000001, **kw: Any) -> Any:
    """A §6.4 command with a fresh eventId, addressed like the publisher does."""
    event_id = str(uuid.uuid4())
    body = kw.pop("body", None) or json.dumps(
        {
            "schemaVersion": 1,
            "eventId": event_id,
            "taskId": str(task_id),
            "exportType": "CUSTOMER_LIST",
            "dispatchVersion": 1,
            "occurredAt": "2026-08-03T18:00:00+08:00",
            "traceId": "t-" + event_id[:8],
        }
    )
    properties = {
        "eventId": event_id,
        "taskId": str(task_id),
        "dispatchVersion": "1",
        "schemaVersion": "1",
    }
    return OutgoingMessage(transport.command_topic, "EXPORT_TASK", str(task_id), body, properties)


async def next_of(
    transport: RocketMQTransport,
    event_ids: Collection[str],
    *,
    dead: bool = False,
    timeout: float = ARRIVAL_TIMEOUT,
) -> RocketMQDelivery:
    """The next delivery of one of ``event_ids``; anything else is acked and skipped."""
    with trio.fail_after(timeout):
        while True:
            d = await (transport.receive_dead_letter() if dead else transport.receive())
            if d.properties.get("eventId") in event_ids:
                return d
            log.info("skipping foreign delivery %s %r", d.message_id, dict(d.properties))
            await d.ack()


async def assert_quiet(transport: RocketMQTransport, event_id: str, *, dead: bool = False) -> None:
    """Nothing more for ``event_id`` arrives within ``QUIET_WINDOW`` seconds."""
    with trio.move_on_after(QUIET_WINDOW):
        d = await next_of(transport, {event_id}, dead=dead, timeout=QUIET_WINDOW * 2)
        await d.ack()
        pytest.fail(f"unexpected delivery {d.message_id} (reconsume {d.reconsume_times})")


def locating(d: RocketMQDelivery) -> dict[str, str]:
    return {k: d.properties[k] for k in LOCATING_PROPERTIES if k in d.properties}


# -- a) body and properties, delivered once, ack --------------------------------------------


async def test_message_carries_body_and_properties_and_is_delivered_once(
    transport: RocketMQTransport,
) -> None:
    msg = command(transport)
    await transport.send(msg)
    d = await next_of(transport, {msg.properties["eventId"]})
    assert d.body == msg.body
    assert locating(d) == dict(msg.properties)
    assert d.reconsume_times == 0 and d.message_id
    assert d.topic == transport.command_topic
    await d.ack()
    assert d.settled
    await assert_quiet(transport, msg.properties["eventId"])


# -- b) reject → redelivery 1, 2 → application DLQ -------------------------------------------


async def test_rejected_message_is_redelivered_then_dead_lettered_by_the_application(
    transport: RocketMQTransport,
) -> None:
    """§8.1 maxReconsumeTimes = 2: deliveries 1-3 rejected, then the transport moves the
    message to %DLQ%<worker group> with its properties; the main topic never sees it again."""
    msg = command(transport, body="{broken")  # an undecodable body: the only rejected path
    event_id = msg.properties["eventId"]
    await transport.send(msg)
    ids = []
    for expected in (0, 1, 2):
        d = await next_of(transport, {event_id})
        assert d.reconsume_times == expected
        assert d.body == msg.body and locating(d) == dict(msg.properties)
        ids.append(d.message_id)
        await d.reject()
    assert len(set(ids)) == 1  # one message, redelivered
    dead = await next_of(transport, {event_id}, dead=True)
    assert locating(dead) == dict(msg.properties)
    assert dead.body == msg.body
    assert dead.reconsume_times == 2
    assert dead.message_id == ids[0] == dead.properties[PROP_ORIGIN_MESSAGE_ID]
    assert dead.properties[PROP_ORIGIN_TOPIC] == transport.command_topic
    assert dead.topic == transport.dead_letter_topic
    # counted on the native thread once send_sync returns, which can be after the DLQ
    # consumer already has the message
    with trio.fail_after(5):
        while transport.dead_lettered < 1:
            await trio.sleep(0.01)
    assert transport.dead_lettered == 1
    await dead.ack()
    await assert_quiet(transport, event_id)
    await assert_quiet(transport, event_id, dead=True)


# -- c) duplicates are delivered, not deduplicated --------------------------------------------


async def test_duplicate_sends_are_all_delivered(transport: RocketMQTransport) -> None:
    """§3 principle 4, at least once: the broker does not deduplicate; the database claim does."""
    msg = command(transport)
    event_id = msg.properties["eventId"]
    for _ in range(5):
        await transport.send(msg)
    seen = []
    for _ in range(5):
        d = await next_of(transport, {event_id})
        assert d.body == msg.body and d.reconsume_times == 0
        seen.append(d.message_id)
        await d.ack()
    assert len(set(seen)) == 5
    await assert_quiet(transport, event_id)


# -- d) DLQ message without locating properties ----------------------------------------------


async def test_dead_letter_without_locating_properties_is_acked_not_dead_lettered_again(
    transport: RocketMQTransport, caplog: pytest.LogCaptureFixture
) -> None:
    """§9.4.2/§9.4.3: logged CRITICAL and acked by the DLQ handler; a rejected DLQ delivery
    is redelivered (DB failures retry without limit), never sent to a second-level DLQ."""
    marker = str(uuid.uuid4())
    body = json.dumps({"marker": marker})
    await transport.send(
        OutgoingMessage(transport.dead_letter_topic, "EXPORT_TASK", "k", body, {"note": "x"})
    )

    async def next_marked() -> RocketMQDelivery:
        with trio.fail_after(ARRIVAL_TIMEOUT):
            while True:
                d = await transport.receive_dead_letter()
                if d.body == body:
                    return d
                await d.ack()

    first = await next_marked()
    assert first.properties == {} and first.reconsume_times == 0
    await first.reject()  # the DLQ handler's database retry path
    again = await next_marked()
    assert again.reconsume_times == 1 and again.message_id == first.message_id
    metrics = Metrics()
    with caplog.at_level(logging.CRITICAL, logger="actors.supervised.dlq"):
        # the store is never touched for a message that cannot be located
        assert await DlqHandler(None, transport, metrics).handle(again) is None  # type: ignore[arg-type]
    assert again.settled
    assert any(r.levelno == logging.CRITICAL for r in caplog.records)
    with trio.move_on_after(QUIET_WINDOW):
        d = await next_marked()
        pytest.fail(f"acked DLQ message came back: {d.message_id}")


# -- e) the bundled native core ---------------------------------------------------------------


def test_native_core_info_reports_the_bundled_core(figures: dict[str, str]) -> None:
    info = native_core_info()
    path = Path(info["path"])
    assert info["exists"] and path.is_file() and path.name == "librocketmq.so"
    assert path.parent.name == "rocketmq" and info["size_bytes"] > 1_000_000
    figures["native core"] = (
        f"{info['path']} version {info['version']} built {info['build_date']}; "
        f"originTopic present: {info['has_origin_topic']}; "
        f"maxReconsumeTimes present: {info['has_max_reconsume_times']}"
    )
    print(f"native core: {info}")


# -- f) aclose while callbacks wait for trio ---------------------------------------------------


async def test_aclose_while_callbacks_wait_for_trio(
    rocketmq_broker: Broker, tmp_path: Path
) -> None:
    """One delivery is held by "a slot" without ack, a second native callback is blocked in
    the hand-over: aclose releases both, shuts down in bounded time, and the messages go back
    to the broker (RECONSUME_LATER), so the next consumer gets both."""
    settings = rmq_settings(rocketmq_broker, tmp_path)
    first = RocketMQTransport.from_settings(settings, close_timeout=20)
    a, b = command(first), command(first)
    ours = {a.properties["eventId"], b.properties["eventId"]}
    held: RocketMQDelivery | None = None
    try:
        await first.start()
        await first.send(a)
        await first.send(b)
        held = await next_of(first, ours)
        with trio.fail_after(ARRIVAL_TIMEOUT):
            while first.blocked_callbacks < 2:  # the other one waits in the hand-over
                await trio.sleep(0.05)
    finally:
        started = trio.current_time()
        with trio.fail_after(45):
            await first.aclose()
            await first.aclose()  # idempotent
            await trio.lowlevel.checkpoint()
        elapsed = trio.current_time() - started
    assert elapsed < 45 and first.abandoned == []
    assert first.blocked_callbacks == 0
    assert held is not None and held.settled  # released by aclose
    await held.ack()  # too late: a no-op, the message already went back
    with pytest.raises(TransportSendError):
        await first.send(a)

    async with open_rocketmq_transport(settings) as second:
        seen: dict[str, int] = {}
        while len(seen) < 2:
            d = await next_of(second, ours - seen.keys(), timeout=60)
            seen[d.properties["eventId"]] = d.reconsume_times
            await d.ack()
    assert seen[held.properties["eventId"]] == 1


# -- staged switches --------------------------------------------------------------------------


async def test_publisher_only_instance_leaves_commands_to_consuming_instances(
    rocketmq_broker: Broker, tmp_path: Path
) -> None:
    """FILE_EXPORT_CONSUMER_ENABLED=false: no worker consumer, so this instance never
    pulls (and holds) commands — its ``receive`` just waits (its slots claim from the
    database) — and an instance with consumers gets them."""
    off = rmq_settings(rocketmq_broker, tmp_path, consumer_enabled=False)
    async with open_rocketmq_transport(off) as publisher_only:
        assert not publisher_only.consume_commands
        received: list[RocketMQDelivery] = []
        async with trio.open_nursery() as listening:

            async def listen() -> None:
                received.append(await publisher_only.receive())

            listening.start_soon(listen)
            msg = command(publisher_only)
            await publisher_only.send(msg)
            async with open_rocketmq_transport(rmq_settings(rocketmq_broker, tmp_path)) as consumer:
                d = await next_of(consumer, {msg.properties["eventId"]})
                assert d.reconsume_times == 0
                await d.ack()
            listening.cancel_scope.cancel()
        assert received == []


# -- send failures ---------------------------------------------------------------------------


async def test_send_failures_raise_transport_send_error(transport: RocketMQTransport) -> None:
    with pytest.raises(TransportSendError):
        await transport.send(
            OutgoingMessage(f"no-such-topic-{uuid.uuid4().hex[:8]}", "EXPORT_TASK", "k", "{}")
        )
    with pytest.raises(TransportSendError, match="NUL"):
        await transport.send(OutgoingMessage(transport.command_topic, "EXPORT_TASK", "k", "{\x00}"))


# -- end to end: a poison command is quarantined through the real broker ----------------------


async def _no_pipeline(ctx: RunContext) -> ExportResult:
    raise AssertionError("a poison message must never run an export")


@pytest.fixture
async def sqlite_store(transport: RocketMQTransport) -> AsyncIterator[ExportStore]:
    """An embedded store on the wall clock. The store contract runs on both databases in
    tests/db; here only the transport is under test, so this suite needs no MariaDB."""
    db = SqliteDatabase(":memory:", clock_ms=wall_clock_ms)
    db.migrate()
    yield ExportStore(db, IdGenerator(wall_clock_ms), topic=transport.command_topic)
    await db.aclose()


async def test_poison_command_is_quarantined_through_rocketmq(
    transport: RocketMQTransport,
    sqlite_store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """§9.4.2 over the real broker: the consumer slot rejects an undecodable body three
    times, the transport dead-letters it, the DLQ handler quarantines the outbox row and
    fails the task from the properties alone."""
    store = sqlite_store
    task = await create(store)
    [row] = await store.claim_due_outbox("pub", 60, 10)
    await store.mark_outbox_sent(row.id, "pub")
    # the publisher's own message for the row, with its body corrupted (§9.4.4)
    await transport.send(dataclasses.replace(outgoing_message(row), body="{broken"))
    slot = ConsumerSlot(
        "s", store, transport, storage, settings, metrics, _no_pipeline, trio.Event()
    )
    for expected in (0, 1, 2):
        d = await next_of(transport, {row.event_id})
        assert d.reconsume_times == expected
        await slot.handle(d)  # decode fails → reject
    handler = DlqHandler(store, transport, metrics)
    dead = await next_of(transport, {row.event_id}, dead=True)
    assert await handler.handle(dead) == QuarantineOutcome.QUARANTINED
    assert (await store.get_task(task.id)).status == TaskStatus.FAILED
    [quarantined] = await store.list_outbox(task.id)
    assert quarantined.status == OutboxStatus.QUARANTINED
    assert "after 3 deliveries" in (quarantined.last_error or "")
