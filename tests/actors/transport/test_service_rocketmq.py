"""The whole service on the RocketMQ transport against the real broker (issue 5).

Every test runs ``actors.runtime.serve`` (or the real ``python -m actors`` process) with
``FILE_EXPORT_TRANSPORT=rocketmq`` on the session's topic prefix, with the reconciler,
publisher and consumer switched on, and drives it through the HTTP API.

How the tests see what crossed the broker: ``BrokerTap`` wraps, at class level and before
the service starts, the methods of the service's own ``RocketMQTransport``:

* ``send`` — records each message the publisher hands to the broker; a test can ask the
  tap to alter the *next* command the publisher sends (corrupt its body, send it five
  times, or drop it, i.e. report success without sending: a command lost after SENT).
  Whatever is sent is sent by the real transport to the real broker.
* ``receive`` / ``receive_dead_letter`` — records each delivery a consumer slot or the DLQ
  handler gets. A delivery only exists once the native push consumer received the message
  from the broker (``RocketMQDelivery.from_native`` builds it from the native message), so its
  body and properties are what the broker delivered, not what the publisher meant to send.
* ``RocketMQDelivery.ack`` / ``reject`` and ``DlqHandler.handle`` — record decisions and
  DLQ outcomes.

A second consumer group cannot observe the command topic here: the broker runs with
``autoCreateSubscriptionGroup=false`` and only the session's groups are provisioned, and a
second consumer *in* the worker group would steal commands from the service.

Waits are bounded polls of a condition (``eventually``); the only fixed window is the
"an acked DLQ message is not redelivered" check, several times the dev broker's 1 s
redelivery delay. ``test_broker_outage_after_commit_recovers_without_manual_step`` stops
the shared broker and restarts it in ``finally`` (``broker.sh start`` waits until the broker
is registered and the session's topics are routed again); every test that uses the broker
first waits until it serves the session's topics (``conftest.py``), so the tests run in
any order.
"""

from __future__ import annotations

import dataclasses
import inspect
import io
import logging
import os
import signal
import sqlite3
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import openpyxl
import pytest
import trio

from actors.core.command_message import LOCATING_PROPERTIES
from actors.core.dispatch import NoClaim
from actors.core.models import OutboxRow, OutboxStatus, Task, TaskStatus
from actors.core.outcomes import QuarantineOutcome
from actors.core.ports.transport import OutgoingMessage
from actors.runtime import Runtime, serve
from actors.service.metrics import Metrics
from actors.supervised.dlq import DlqHandler
from actors.transport.rocketmq import (
    PROP_ORIGIN_MESSAGE_ID,
    PROP_ORIGIN_TOPIC,
    PROP_RECONSUME_TIMES,
    RocketMQDelivery,
    RocketMQTransport,
)
from tests.helpers import API, client_for, make_settings, wait_for_status
from tests.processes import ServeProcess, poll_task, process_client
from tests.servers import BROKER_SH, Broker

pytestmark = pytest.mark.rocketmq

T = TypeVar("T")

#: a first delivery to a freshly started service includes the consumer's rebalance
DELIVERY_TIMEOUT = 60.0
#: "an acked message does not come back" window: the dev broker redelivers after 1 s
QUIET_WINDOW = 4.0
#: sentStaleSeconds of the poison test: it waits past it to show nothing is re-sent
POISON_SENT_STALE_SECONDS = 5.0
ROWS = 300


# -- the tap --------------------------------------------------------------------------------


@dataclasses.dataclass
class Seen:
    """One message handed to the broker (``kind="send"``) or delivered by it."""

    at: float  # trio.current_time()
    kind: str  # "send", "command" (worker consumer) or "dead" (DLQ handler consumer)
    topic: str
    body: str
    properties: dict[str, str]
    action: str = "send"  # sends only: what the tap did with it
    message_id: str = ""
    reconsume_times: int = 0
    delivery: RocketMQDelivery | None = None
    decision: str | None = None  # deliveries only: "ack" / "reject"
    outcome: Any = "unhandled"  # dead letters only: DlqHandler.handle's return value
    done_at: float | None = None  # sends only: when the (last) native send returned


class BrokerTap:
    """Records the service transport's traffic; see the module docstring.

    ``plan`` lists actions for the next command-topic sends, one each, in order:
    ``"corrupt"`` (send the first half of the body: undecodable JSON, properties intact),
    ``"x5"`` (send the same message five times: five broker messages), ``"drop"`` (send
    nothing, report success).
    """

    def __init__(self) -> None:
        self.sent: list[Seen] = []
        self.received: list[Seen] = []
        self.plan: list[str] = []
        self._by_delivery: dict[int, Seen] = {}

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        tap = self
        send, receive = RocketMQTransport.send, RocketMQTransport.receive
        receive_dead = RocketMQTransport.receive_dead_letter
        ack, reject = RocketMQDelivery.ack, RocketMQDelivery.reject
        handle = DlqHandler.handle

        async def tapped_send(transport: RocketMQTransport, message: OutgoingMessage) -> None:
            action = "send"
            if message.topic == transport.command_topic and tap.plan:
                action = tap.plan.pop(0)
            if action == "corrupt":
                message = dataclasses.replace(message, body=message.body[: len(message.body) // 2])
            seen = Seen(
                trio.current_time(),
                "send",
                message.topic,
                message.body,
                dict(message.properties),
                action,
            )
            tap.sent.append(seen)
            if action == "drop":
                return
            for _ in range(5 if action == "x5" else 1):
                await send(transport, message)
            seen.done_at = trio.current_time()

        def record(kind: str, d: RocketMQDelivery) -> RocketMQDelivery:
            seen = Seen(
                trio.current_time(),
                kind,
                d.topic,
                d.body,
                dict(d.properties),
                message_id=d.message_id,
                reconsume_times=d.reconsume_times,
                delivery=d,
            )
            tap.received.append(seen)
            tap._by_delivery[id(d)] = seen
            return d

        async def tapped_receive(transport: RocketMQTransport) -> RocketMQDelivery:
            return record("command", await receive(transport))

        async def tapped_receive_dead(transport: RocketMQTransport) -> RocketMQDelivery:
            return record("dead", await receive_dead(transport))

        def decided(d: RocketMQDelivery, decision: str) -> None:
            seen = tap._by_delivery.get(id(d))
            if seen is not None and seen.decision is None and not d.settled:
                seen.decision = decision

        async def tapped_ack(d: RocketMQDelivery) -> None:
            decided(d, "ack")
            await ack(d)

        async def tapped_reject(d: RocketMQDelivery) -> None:
            decided(d, "reject")
            await reject(d)

        async def tapped_handle(handler: DlqHandler, d: Any) -> Any:
            outcome = await handle(handler, d)
            seen = tap._by_delivery.get(id(d))
            if seen is not None:
                seen.outcome = outcome
            return outcome

        monkeypatch.setattr(RocketMQTransport, "send", tapped_send)
        monkeypatch.setattr(RocketMQTransport, "receive", tapped_receive)
        monkeypatch.setattr(RocketMQTransport, "receive_dead_letter", tapped_receive_dead)
        monkeypatch.setattr(RocketMQDelivery, "ack", tapped_ack)
        monkeypatch.setattr(RocketMQDelivery, "reject", tapped_reject)
        monkeypatch.setattr(DlqHandler, "handle", tapped_handle)

    def sends_for(self, task_id: int | str) -> list[Seen]:
        return [s for s in self.sent if s.properties.get("taskId") == str(task_id)]

    def commands_for(self, event_id: str) -> list[Seen]:
        return [
            s
            for s in self.received
            if s.kind == "command" and s.properties.get("eventId") == event_id
        ]

    def received_for(self, event_id: str) -> list[Seen]:
        return [s for s in self.received if s.properties.get("eventId") == event_id]

    def dead_for(self, event_id: str) -> list[Seen]:
        return [
            s for s in self.received if s.kind == "dead" and s.properties.get("eventId") == event_id
        ]


@pytest.fixture
def tap(monkeypatch: pytest.MonkeyPatch) -> BrokerTap:
    t = BrokerTap()
    t.install(monkeypatch)
    return t


# -- the service ----------------------------------------------------------------------------


def service_settings(broker: Broker, tmp_path: Path, **overrides: Any) -> Any:
    values: dict[str, Any] = {
        "transport": "rocketmq",
        "mq_topic_prefix": broker.topic_prefix,
        "rocketmq_name_server": broker.name_server,
        # off by default with RocketMQ (the operations guide's staged switches)
        "reconciler_enabled": True,
        "publisher_enabled": True,
        "consumer_enabled": True,
        "consumer_concurrency": 2,
        "publisher_poll_ms": 200,
        "reconciler_poll_ms": 300,
        "task_lease_seconds": 3,
        "task_heartbeat_seconds": 1,
        "redispatch_grace_seconds": 0.5,
        "shutdown_grace_seconds": 5,
        # These tests pin the bus path: the slots' own database poll (which would claim a
        # task before its command arrives now and then) stays out of the way.
        "consumer_poll_ms": 600_000,
        "instance_id": f"svc-{uuid.uuid4().hex[:8]}",
    }
    values.update(overrides)
    return make_settings(tmp_path, **values)


ServiceFactory = Callable[..., Awaitable[Runtime]]


@pytest.fixture
async def start_service(
    rocketmq_broker: Broker, tmp_path: Path, tap: BrokerTap
) -> AsyncIterator[ServiceFactory]:
    """``await start_service(**settings_overrides)`` runs the service on the RocketMQ
    transport until the test ends (the tap is installed first), returning once its
    transport is connected."""
    started: list[Runtime] = []
    async with trio.open_nursery() as nursery:

        async def start(**overrides: Any) -> Runtime:
            settings = service_settings(rocketmq_broker, tmp_path, **overrides)
            rt: Runtime = await nursery.start(
                partial(serve, settings, install_signal_handlers=False)
            )
            assert isinstance(rt.transport, RocketMQTransport)
            started.append(rt)
            # connected in the background: these tests start once the bus path is there
            link = rt.link
            assert link is not None
            with trio.fail_after(DELIVERY_TIMEOUT):
                while not link.up:
                    await trio.sleep(0.05)
            return rt

        yield start
        for rt in started:
            rt.request_stop()


# -- helpers ----------------------------------------------------------------------------------


async def eventually(
    probe: Callable[[], Awaitable[T] | T], *, what: str, timeout: float = DELIVERY_TIMEOUT
) -> T:
    """Poll ``probe`` (sync or async) until it returns a truthy value, within ``timeout``
    seconds; fail naming ``what``."""
    last: Any = None
    try:
        with trio.fail_after(timeout):
            while True:
                last = probe()
                if inspect.isawaitable(last):
                    last = await last
                if last:
                    return last
                await trio.sleep(0.05)
    except trio.TooSlowError:
        pytest.fail(f"not within {timeout:g}s: {what} (last probe: {last!r})")


async def create_export(rt: Runtime, rows: int = ROWS, *, user: int = 1001) -> int:
    async with client_for(rt, user=user) as c:
        body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": rows}}
        created = (await c.post(API, json=body)).json()
    assert created["code"] == "200", created
    return int(created["data"]["id"])


async def task_of(rt: Runtime, task_id: int) -> Task:
    task = await rt.store.get_task(task_id)
    assert task is not None
    return task


async def only_outbox_row(rt: Runtime, task_id: int) -> OutboxRow:
    rows = await rt.store.list_outbox(task_id)
    assert len(rows) == 1, rows
    return rows[0]


async def wait_task(rt: Runtime, task_id: int, *statuses: TaskStatus, timeout: float) -> Task:
    async def probe() -> Task | None:
        task = await task_of(rt, task_id)
        return task if task.status in statuses else None

    return await eventually(probe, what=f"task {task_id} in {statuses}", timeout=timeout)


def locating(row: OutboxRow) -> dict[str, str]:
    """The four properties the publisher must put on the row's message (§6.4)."""
    return {
        "eventId": row.event_id,
        "taskId": str(row.task_id),
        "dispatchVersion": str(row.dispatch_version),
        "schemaVersion": "1",
    }


def only_locating(properties: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in properties.items() if k in LOCATING_PROPERTIES}


def counter(metrics: Metrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


def no_claims_except_missing(metrics: Metrics) -> dict[str, float]:
    """``export_consumer_no_claim_total`` by reason, without ``task_missing`` (commands left
    on the shared topic by earlier tests name tasks this service's database never had)."""
    return {
        reason.value: counter(metrics, "export_consumer_no_claim_total", reason=reason.value)
        for reason in NoClaim
        if reason is not NoClaim.TASK_MISSING
    }


def ms(later: datetime | None, earlier: datetime | None) -> float:
    assert later is not None and earlier is not None
    return (later - earlier).total_seconds() * 1000


# -- 1. round trip ----------------------------------------------------------------------------


async def test_round_trip_export_through_the_broker(
    start_service: ServiceFactory, tap: BrokerTap, figures: dict[str, str]
) -> None:
    """HTTP create → outbox → publisher → broker → consumer slot → XLSX → download.

    The message is observed on the delivery side (see the module docstring): the slot's
    delivery was built from the native message the broker pushed, and its body and four
    locating properties equal the outbox row; the send side shows the publisher sent it
    exactly once. Prints publish→claim latency from DB times and from the tap."""
    rt = await start_service()
    task_id = await create_export(rt)
    async with client_for(rt) as c:
        data = await wait_for_status(c, str(task_id), "SUCCEEDED", "FAILED", timeout=90)
        assert data["status"] == "SUCCEEDED", data["failureMessage"]
        assert data["attemptCount"] == 1 and data["dispatchVersion"] == 1
        assert data["processedRows"] == str(ROWS)
        resp = await c.get(f"{API}/{task_id}/download")
    assert resp.status_code == 200 and len(resp.content) == int(data["sizeBytes"])
    rows = list(openpyxl.load_workbook(io.BytesIO(resp.content)).worksheets[0].values)
    assert len(rows) == ROWS + 1  # header + rows

    row = await only_outbox_row(rt, task_id)
    assert row.status == OutboxStatus.SENT and row.attempt_count == 1 and row.last_error is None
    assert row.topic == rt.transport.command_topic
    [sent] = tap.sends_for(task_id)
    assert sent.action == "send" and sent.properties == locating(row)
    [got] = tap.commands_for(row.event_id)
    assert got.topic == rt.transport.command_topic and got.message_id
    assert got.body == row.payload_json
    assert only_locating(got.properties) == locating(row)
    assert got.reconsume_times == 0 and got.decision == "ack"

    task = await task_of(rt, task_id)
    db_sent_to_claim = ms(task.started_at, row.sent_at)
    db_created_to_running = ms(task.started_at, task.requested_at)
    assert sent.done_at is not None
    figures["service publish→claim latency"] = (
        f"DB started_at - outbox sent_at {db_sent_to_claim:.0f} ms; "
        f"DB requested_at → RUNNING {db_created_to_running:.0f} ms; trio clock: send call → "
        f"delivery handed to a slot {(got.at - sent.at) * 1000:.1f} ms, of which the "
        f"service's first native send_sync took {(sent.done_at - sent.at) * 1000:.1f} ms"
    )
    print(figures["service publish→claim latency"])


# -- 2. duplicate delivery -------------------------------------------------------------------


async def test_five_deliveries_of_one_command_run_the_export_once(
    start_service: ServiceFactory, tap: BrokerTap
) -> None:
    """§3 principle 4, at least once: the publisher's message for the row (body +
    properties) goes through the broker five times as five broker messages; the database
    claim lets one run and the other four are acked without a claim."""
    rt = await start_service()
    tap.plan = ["x5"]
    task_id = await create_export(rt, rows=2000)
    task = await wait_task(rt, task_id, TaskStatus.SUCCEEDED, TaskStatus.FAILED, timeout=90)
    assert task.status == TaskStatus.SUCCEEDED, task.failure_message
    row = await only_outbox_row(rt, task_id)

    deliveries = await eventually(
        lambda: d if len(d := tap.commands_for(row.event_id)) >= 5 else None,
        what="five deliveries of the command",
    )
    await eventually(
        lambda: sum(no_claims_except_missing(rt.metrics).values()) >= 4,
        what="four duplicates counted by export_consumer_no_claim_total",
        timeout=10,
    )
    assert [s.action for s in tap.sends_for(task_id)] == ["x5"]
    assert len(deliveries) == 5 and len({d.message_id for d in deliveries}) == 5
    for d in deliveries:
        assert d.body == row.payload_json and only_locating(d.properties) == locating(row)
        assert d.reconsume_times == 0 and d.decision == "ack"
    no_claims = no_claims_except_missing(rt.metrics)
    assert sum(no_claims.values()) == 4, no_claims
    assert set(k for k, v in no_claims.items() if v) <= {
        NoClaim.RUNNING_ELSEWHERE.value,
        NoClaim.TERMINAL.value,
        NoClaim.LOST_RACE.value,
    }, no_claims

    task = await task_of(rt, task_id)
    assert task.status == TaskStatus.SUCCEEDED
    assert task.attempt_count == 1 and task.dispatch_version == 1
    files = list((rt.storage.root / "exports" / str(task_id)).iterdir())
    assert len(files) == 1 and task.object_key == f"exports/{task_id}/{files[0].name}"
    assert row.status == OutboxStatus.SENT and row.attempt_count == 1


# -- 3. poison message ----------------------------------------------------------------------


async def test_poison_command_is_dead_lettered_and_cannot_hold_its_task_back(
    start_service: ServiceFactory, tap: BrokerTap, figures: dict[str, str]
) -> None:
    """§9.4 through the broker: the publisher's message for a real task (row SENT, task
    PENDING) carries a corrupted body with full, correct locating properties. The slot
    rejects it on deliveries 1-3 (the broker redelivers it through its retry topic) and the
    transport moves it to ``%DLQ%<worker group>`` itself, with the application's origin
    properties.

    The command was only the fast path: the slot that rejected it is free and pulls the
    fairest due task from the database — this very task — and runs it. So the dead letter
    reaches the DLQ handler for an attempt that is no longer PENDING: outcome MISMATCH,
    acked, nothing changed (quarantining a still-PENDING task through the DLQ handler is
    ``tests/actors/supervised/test_dlq.py``). The message is never re-sent: one send, three
    deliveries, one dead letter."""
    rt = await start_service(sent_stale_seconds=POISON_SENT_STALE_SECONDS)
    tap.plan = ["corrupt"]
    poison_id = await create_export(rt)
    [poison_send] = await eventually(
        lambda: tap.sends_for(poison_id), what="the poison command sent"
    )
    assert poison_send.action == "corrupt"

    task = await wait_task(
        rt, poison_id, TaskStatus.SUCCEEDED, TaskStatus.FAILED, timeout=DELIVERY_TIMEOUT
    )
    assert task.status == TaskStatus.SUCCEEDED, task.failure_message
    assert task.attempt_count == 1 and task.total_rows == ROWS

    event_id = poison_send.properties["eventId"]
    await eventually(
        lambda: any(d.outcome != "unhandled" for d in tap.dead_for(event_id)),
        what="the DLQ handler handled the dead letter",
    )
    # counted on the native thread once send_sync returns, possibly after the hand-over
    await eventually(lambda: rt.transport.dead_lettered, what="dead_lettered", timeout=10)
    row = await only_outbox_row(rt, poison_id)
    assert row.status == OutboxStatus.SENT and row.attempt_count == 1, row
    assert poison_send.properties == locating(row)
    tries = tap.commands_for(row.event_id)
    assert [t.reconsume_times for t in tries] == [0, 1, 2]
    assert len({t.message_id for t in tries}) == 1
    assert all(t.body == poison_send.body and t.decision == "reject" for t in tries)
    assert all(only_locating(t.properties) == locating(row) for t in tries)
    [dead] = tap.dead_for(row.event_id)
    assert (
        dead.topic
        == rt.transport.dead_letter_topic
        == (f"%DLQ%{rt.settings.topic_prefix}file-export-worker-v1")
    )
    # routed by the application (its dlq* properties), not by the broker's own DLQ branch
    assert dead.properties[PROP_ORIGIN_TOPIC] == rt.transport.command_topic
    assert dead.properties[PROP_ORIGIN_MESSAGE_ID] == tries[0].message_id == dead.message_id
    assert dead.properties[PROP_RECONSUME_TIMES] == "2"
    assert only_locating(dead.properties) == locating(row) and dead.body == poison_send.body
    assert dead.outcome == QuarantineOutcome.MISMATCH and dead.decision == "ack"
    assert rt.transport.dead_lettered == 1
    figures["poison command sent → dead letter handled"] = (
        f"task {poison_id} SUCCEEDED by pull, message {dead.message_id}, deliveries at +"
        + ", +".join(f"{(t.at - poison_send.at) * 1000:.0f}" for t in tries)
        + f" ms, dead letter at +{(dead.at - poison_send.at) * 1000:.0f} ms"
    )
    print(figures["poison command sent → dead letter handled"])

    # acked and finished: past sentStaleSeconds nothing is re-sent or redelivered
    with trio.move_on_after(POISON_SENT_STALE_SECONDS + QUIET_WINDOW):
        while len(tap.sends_for(poison_id)) == 1 and len(tap.received_for(event_id)) == 4:
            await trio.sleep(0.1)
        pytest.fail(
            f"task {poison_id}: sends {tap.sends_for(poison_id)}, "
            f"deliveries {tap.received_for(event_id)}"
        )
    assert (await task_of(rt, poison_id)).status == TaskStatus.SUCCEEDED


# -- 4. DLQ message without locating properties ---------------------------------------------


async def test_dead_letter_without_locating_properties_is_logged_critical_and_acked(
    start_service: ServiceFactory, tap: BrokerTap, caplog: pytest.LogCaptureFixture
) -> None:
    """§9.4.2: the DLQ handler reads only properties. A message on ``%DLQ%<group>`` whose
    body is a real task's valid command but which carries no properties is logged CRITICAL
    and acked (never redelivered); the task — PENDING with its row SENT, exactly the state
    a located message would quarantine — is untouched."""
    rt = await start_service()
    tap.plan = ["drop"]  # the row becomes SENT, nothing reaches the worker
    task_id = await create_export(rt)

    async def sent_row() -> OutboxRow | None:
        row = await only_outbox_row(rt, task_id)
        return row if row.status == OutboxStatus.SENT else None

    row = await eventually(sent_row, what="outbox row SENT")
    before = await task_of(rt, task_id)
    assert before.status == TaskStatus.PENDING
    dlq_before = counter(rt.metrics, "export_dlq_messages_total")

    with caplog.at_level(logging.INFO, logger="actors.supervised.dlq"):
        await rt.transport.send(
            OutgoingMessage(
                rt.transport.dead_letter_topic, "EXPORT_TASK", str(task_id), row.payload_json
            )
        )

        def handled() -> Seen | None:
            for s in tap.received:
                if s.kind == "dead" and s.body == row.payload_json and s.outcome != "unhandled":
                    return s
            return None

        dead = await eventually(handled, what="the DLQ handler ran")
        assert dead.properties == {} and dead.outcome is None and dead.decision == "ack"
        critical = [
            r
            for r in caplog.records
            if r.name == "actors.supervised.dlq"
            and r.levelno == logging.CRITICAL
            and dead.message_id in r.getMessage()
        ]
        assert len(critical) == 1, [r.getMessage() for r in caplog.records]
        assert "lacks locating properties" in critical[0].getMessage()
        assert counter(rt.metrics, "export_dlq_messages_total") == dlq_before + 1

        # acked: the broker does not deliver it again
        with trio.move_on_after(QUIET_WINDOW):
            while not any(
                s.kind == "dead" and s.message_id == dead.message_id and s is not dead
                for s in tap.received
            ):
                await trio.sleep(0.05)
            pytest.fail(f"acked DLQ message {dead.message_id} was delivered again")

    assert await task_of(rt, task_id) == before
    assert await only_outbox_row(rt, task_id) == row
    assert tap.commands_for(row.event_id) == []


# -- 6. SIGTERM during an export (real process) ---------------------------------------------


def process_env(broker: Broker) -> dict[str, str]:
    return {
        "FILE_EXPORT_TRANSPORT": "rocketmq",
        "MQ_TOPIC_PREFIX": broker.topic_prefix,
        "ROCKETMQ_NAME_SERVER": broker.name_server,
        "FILE_EXPORT_RECONCILER_ENABLED": "true",
        "FILE_EXPORT_PUBLISHER_ENABLED": "true",
        "FILE_EXPORT_CONSUMER_ENABLED": "true",
        "FILE_EXPORT_CONSUMER_CONCURRENCY": "1",
        "FILE_EXPORT_TASK_LEASE_SECONDS": "3",
        "FILE_EXPORT_TASK_HEARTBEAT_SECONDS": "1",
        "FILE_EXPORT_RECONCILER_POLL_MS": "300",
        "FILE_EXPORT_PUBLISHER_POLL_MS": "200",
        "FILE_EXPORT_REDISPATCH_GRACE_SECONDS": "0.5",
        "FILE_EXPORT_SHUTDOWN_GRACE_SECONDS": "0.5",
        # a native crash in the interpreter would print "Fatal Python error" to the log
        "PYTHONFAULTHANDLER": "1",
    }


def assert_clean_exit_log(text: str) -> None:
    for bad in ("Traceback", "Segmentation", "Fatal Python error", "abandoned", "not closed"):
        assert bad not in text, f"{bad!r} in the process output:\n{text[-4000:]}"
    assert "RocketMQ transport closed" in text and "stopped" in text


async def test_sigterm_mid_export_exits_cleanly_and_a_restart_finishes_the_task(
    rocketmq_broker: Broker, tmp_path: Path
) -> None:
    """§14 under the RocketMQ transport, as a real process: SIGTERM during an export hands
    the task back (new version, attempt not counted), closes the native clients and exits
    0 with no traceback or native crash report; a second process on the same data
    directory runs the handed-back version to the end."""
    env = process_env(rocketmq_broker)
    data = tmp_path / "data"
    procs: list[ServeProcess] = []
    try:
        first = ServeProcess(data, tmp_path / "first.log", **env)
        procs.append(first)
        url = await first.ready(timeout=60)
        async with process_client(url) as c:
            body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 60_000}}
            created = (await c.post(API, json=body)).json()
        assert created["code"] == "200", created
        task_id = created["data"]["id"]
        await poll_task(url, task_id, {"RUNNING"}, timeout=DELIVERY_TIMEOUT)
        first.proc.send_signal(signal.SIGTERM)
        assert await first.wait(timeout=90) == 0, first.log.read_text()[-4000:]
        log = first.log.read_text()
        assert_clean_exit_log(log)
        assert "transport rocketmq" in log and "handed back as a new version" in log
        with sqlite3.connect(data / "export-center.db") as db:
            state = db.execute(
                "SELECT status, dispatch_version, attempt_count FROM file_export_task WHERE id = ?",
                (int(task_id),),
            ).fetchone()
        assert state == ("PENDING", 2, 0)
        assert not any((data / "files" / "exports").glob("*/*.xlsx"))

        second = ServeProcess(data, tmp_path / "second.log", **env)
        procs.append(second)
        url = await second.ready(timeout=60)
        task = await poll_task(url, task_id, {"SUCCEEDED", "FAILED"}, timeout=120)
        assert task["status"] == "SUCCEEDED", task["failureMessage"]
        assert task["dispatchVersion"] == 2 and task["attemptCount"] == 1
        assert len(list((data / "files" / "exports" / task_id).iterdir())) == 1
        second.proc.send_signal(signal.SIGTERM)
        assert await second.wait(timeout=90) == 0, second.log.read_text()[-4000:]
        assert_clean_exit_log(second.log.read_text())
    finally:
        for p in procs:
            p.close()


# -- 5. broker outage after commit (stops and restarts the shared broker) -------------------


async def broker_sh(command: str, broker: Broker) -> str:
    result = await trio.run_process(
        [str(BROKER_SH), command],
        env={**os.environ, "MQ_TOPIC_PREFIX": broker.topic_prefix},
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    output = (result.stdout + result.stderr).decode(errors="replace")
    assert result.returncode == 0, f"broker.sh {command} failed:\n{output[-4000:]}"
    return output


async def test_broker_outage_after_commit_holds_the_command_and_sends_it_once_back(
    rocketmq_broker: Broker,
    start_service: ServiceFactory,
    tap: BrokerTap,
    figures: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """§7.4 with the consumer off (a staged roll-out step): the task commits while the
    broker is down. The transport link sees it down, so the publisher holds the due row
    (PENDING, no send attempt, nothing backing off for up to 15 minutes); once the broker
    is back the link wakes the publisher and the same row is sent at once, one send in all
    — no manual step. Stops and restarts the shared broker (restarted in ``finally``
    whatever happens)."""
    caplog.set_level(logging.INFO, logger="actors.transport.rocketmq.link")
    rt = await start_service(consumer_enabled=False, transport_check_seconds=0.5)
    assert rt.link is not None
    stopped = False
    try:
        await eventually(lambda: rt.link is not None and rt.link.up, what="transport up")
        stopped = True
        await broker_sh("stop", rocketmq_broker)
        await eventually(lambda: rt.link is not None and not rt.link.up, what="transport down")
        task_id = await create_export(rt)
        checks = rt.link.checks
        await eventually(
            lambda: rt.link is not None and rt.link.checks >= checks + 3, what="checks"
        )
        row = await only_outbox_row(rt, task_id)
        assert row.status == OutboxStatus.PENDING and row.attempt_count == 0, row
        assert tap.sends_for(task_id) == []
        assert counter(rt.metrics, "export_transport_up") == 0

        restart_began_at = datetime.now(UTC)
        await broker_sh("start", rocketmq_broker)
        stopped = False

        async def sent() -> OutboxRow | None:
            row = await only_outbox_row(rt, task_id)
            return row if row.status == OutboxStatus.SENT else None

        row = await eventually(sent, what="the held row sent", timeout=120)
        assert row.attempt_count == 1 and len(tap.sends_for(task_id)) == 1
        assert counter(rt.metrics, "export_transport_up") == 1
        # a line when it went down (and when the reason changed: the NameServer stopped
        # after the broker) and one when it came back, never one per failed check
        lines = [
            (r.levelno, r.getMessage())
            for r in caplog.records
            if r.name == "actors.transport.rocketmq.link"
        ]
        assert lines[0][0] == logging.WARNING and lines[-1][0] == logging.INFO, lines
        assert all(a != b for a, b in zip(lines, lines[1:], strict=False)), lines
        assert rt.link.checks > len(lines)
        figures["outage recovery"] = (
            f"held row sent {ms(row.sent_at, restart_began_at) / 1000:.1f} s after"
            " `broker.sh start` began (provisioning included); 1 send attempt"
        )
        print(figures["outage recovery"])
    finally:
        if stopped:
            with trio.CancelScope(shield=True), trio.move_on_after(900):
                await broker_sh("start", rocketmq_broker)
