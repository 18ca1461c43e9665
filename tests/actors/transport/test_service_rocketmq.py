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
redelivery delay. The broker outage test (``test_service_rocketmq_restarts.py``) stops
the shared broker and restarts it in ``finally`` (``broker.sh start`` waits until the broker
is registered and the session's topics are routed again); every test that uses the broker
first waits until it serves the session's topics (``conftest.py``), so the tests run in
any order.
"""

from __future__ import annotations

import io
import logging

import openpyxl
import pytest
import trio

from actors.core.dispatch import NoClaim
from actors.core.models import OutboxRow, OutboxStatus, TaskStatus
from actors.core.outcomes import QuarantineOutcome
from actors.core.ports.transport import OutgoingMessage
from actors.transport.rocketmq import (
    PROP_ORIGIN_MESSAGE_ID,
    PROP_ORIGIN_TOPIC,
    PROP_RECONSUME_TIMES,
)
from tests.actors.transport.service_rocketmq_helpers import (
    DELIVERY_TIMEOUT,
    POISON_SENT_STALE_SECONDS,
    QUIET_WINDOW,
    ROWS,
    BrokerTap,
    Seen,
    ServiceFactory,
    counter,
    create_export,
    eventually,
    locating,
    ms,
    no_claims_except_missing,
    only_locating,
    only_outbox_row,
    task_of,
    wait_task,
)
from tests.helpers import API, client_for, wait_for_status

pytestmark = pytest.mark.rocketmq


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
            and getattr(r, "messageId", None) == dead.message_id
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
