"""What the tests of the whole service on the RocketMQ transport share: the broker tap,
the service's settings (in the test's loop, or as a process's environment), waits and
readers (``test_service_rocketmq*.py``, ``test_two_hosts_s3.py``)."""

from __future__ import annotations

import dataclasses
import inspect
import os
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trio

from actors.core.command_message import LOCATING_PROPERTIES
from actors.core.dispatch import NoClaim
from actors.core.models import OutboxRow, Task, TaskStatus
from actors.core.ports.transport import OutgoingMessage
from actors.plumbing.metrics import Metrics
from actors.runtime import Runtime
from actors.supervised.dlq import DlqHandler
from actors.transport.rocketmq import (
    RocketMQDelivery,
    RocketMQTransport,
)
from tests.helpers import API, client_for, make_settings
from tests.servers import BROKER_SH, Broker

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


def process_env(broker: Broker) -> dict[str, str]:
    """The environment of the service as a process on ``broker`` (``ServeProcess``)."""
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


async def broker_sh(command: str, broker: Broker) -> str:
    """Run ``deploy/rocketmq/broker.sh COMMAND`` for the session's topic prefix; its output."""
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
