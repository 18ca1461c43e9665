"""The real ``export-center serve`` process: SIGTERM, graceful stop, recovery on restart."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import sys
from pathlib import Path

import trio

from tests.helpers import API
from tests.processes import ServeProcess, poll_task
from tests.processes import process_client as client
from tests.provider_server import (
    GATED_SERVICE,
    BatchBody,
    cursor_rows,
    gated_demo_registry,
    gated_demo_table,
    row_count,
    serve_provider,
)

#: rows of the export the SIGTERM interrupts (and of the one queued behind it)
LONG, SHORT = 5_000, 500


async def test_sigterm_mid_export_exits_cleanly_and_restart_finishes_the_task(
    tmp_path: Path, processes: list[ServeProcess]
) -> None:
    """§14: SIGTERM stops taking commands, waits the grace, interrupts the run, hands the
    task back (new version, attempt not counted, partial file deleted) and exits 0. A second
    task still queued in the in-process bus is sent again at the next start, so both finish
    right after the restart — long before the 600 s SENT-stale redispatch.

    The first export is mid-way at the SIGTERM on any machine: the Provider (the demo
    table, served by the test) answers only its first batch until the first process has
    exited, so the run is interrupted, not finished, however fast the machine."""
    registry = tmp_path / "registry.yaml"
    registry.write_text(gated_demo_registry(batch_size=1000))
    first_stopped = trio.Event()

    async def gate(body: BatchBody) -> None:
        if row_count(body) == LONG and cursor_rows(body) > 0:
            await first_stopped.wait()

    async with serve_provider(gated_demo_table(gate)) as provider_url:
        await sigterm_then_restart(tmp_path, processes, provider_url, first_stopped)


async def sigterm_then_restart(
    tmp_path: Path, processes: list[ServeProcess], provider_url: str, first_stopped: trio.Event
) -> None:
    timings = {
        "FILE_EXPORT_TASK_LEASE_SECONDS": "3",
        "FILE_EXPORT_TASK_HEARTBEAT_SECONDS": "1",
        "FILE_EXPORT_RECONCILER_POLL_MS": "300",
        "FILE_EXPORT_PUBLISHER_POLL_MS": "200",
        "FILE_EXPORT_SHUTDOWN_GRACE_SECONDS": "0.5",
        "FILE_EXPORT_CONSUMER_CONCURRENCY": "1",
        "FILE_EXPORT_REGISTRY": str(tmp_path / "registry.yaml"),
        "FILE_EXPORT_PROVIDER_URLS": json.dumps({GATED_SERVICE: provider_url}),
        "INTERNAL_SERVICE_TOKEN": "process-test-provider-token",
    }
    first = ServeProcess(tmp_path / "data", tmp_path / "first.log", **timings)
    processes.append(first)
    url = await first.ready()
    ids = []
    async with client(url) as c:
        for rows in (LONG, SHORT):
            body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": rows}}
            ids.append((await c.post(API, json=body)).json()["data"]["id"])
    await poll_task(url, ids[0], {"RUNNING"})
    first.proc.send_signal(signal.SIGTERM)
    assert await first.wait() == 0
    first_stopped.set()
    log = first.log.read_text()
    assert "grace period over" in log and "handed back" in log and "stopped" in log
    assert "Traceback" not in log
    with sqlite3.connect(tmp_path / "data" / "export-center.db") as db:
        rows = dict(
            db.execute(
                "SELECT id, status || ' v' || dispatch_version || ' a' || "
                "attempt_count FROM file_export_task"
            ).fetchall()
        )
    assert rows == {int(ids[0]): "PENDING v2 a0", int(ids[1]): "PENDING v1 a0"}
    assert not any((tmp_path / "data" / "files" / "exports").glob("*/*.xlsx"))

    second = ServeProcess(tmp_path / "data", tmp_path / "second.log", **timings)
    processes.append(second)
    url = await second.ready()
    for task_id, version in zip(ids, (2, 1), strict=True):
        task = await poll_task(url, task_id, {"SUCCEEDED", "FAILED"}, timeout=120)
        assert task["status"] == "SUCCEEDED", task["failureMessage"]
        assert task["dispatchVersion"] == version and task["attemptCount"] == 1
        files = list((tmp_path / "data" / "files" / "exports" / task_id).iterdir())
        assert len(files) == 1
    # The second task's command was in the dead bus; the first task's new command (v2,
    # written by the hand-back) is in it too when the publisher sent it before the stop
    # cancelled the publisher (a race of the shutdown order, either way correct).
    assert re.search(r"requeued [12] commands", second.log.read_text())
    second.proc.send_signal(signal.SIGTERM)
    assert await second.wait() == 0


async def test_invalid_configuration_stops_start_up_naming_the_variable(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "FILE_EXPORT_DATA_DIR": str(tmp_path),
        "FILE_EXPORT_CONSUMER_CONCURRENCY": "abc",
    }
    result = await trio.run_process(
        [sys.executable, "-m", "actors"], env=env, capture_stderr=True, check=False
    )
    err = result.stderr.decode()
    assert result.returncode != 0
    assert "FILE_EXPORT_CONSUMER_CONCURRENCY" in err and "Traceback" not in err
