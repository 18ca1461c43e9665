"""The whole service on the RocketMQ transport as a real process and across a broker outage:
a SIGTERM mid-export and a restart, and a command held while the broker is down and sent
once when it is back (the shared tap and helpers: ``service_rocketmq_helpers.py``)."""

from __future__ import annotations

import logging
import signal
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
import trio

from actors.core.models import OutboxRow, OutboxStatus
from tests.actors.transport.service_rocketmq_helpers import (
    DELIVERY_TIMEOUT,
    BrokerTap,
    ServiceFactory,
    broker_sh,
    counter,
    create_export,
    eventually,
    ms,
    only_outbox_row,
    process_env,
)
from tests.helpers import API
from tests.processes import ServeProcess, poll_task, process_client
from tests.servers import Broker

pytestmark = pytest.mark.rocketmq


# -- 6. SIGTERM during an export (real process) ---------------------------------------------


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
