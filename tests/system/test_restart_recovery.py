"""A service killed with SIGKILL mid-export and started again on the same data directory:
the new process ends its predecessor's lease at start-up, and the export runs again at
once instead of after the lease (300 s by default) — with the default instance id
(``host:pid/pid-namespace``, a new PID after the restart) and with a stable explicit
``FILE_EXPORT_INSTANCE_ID``. Real processes, SQLite, the demo Provider, wall-clock time.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import trio

from tests.helpers import API
from tests.processes import ServeProcess
from tests.processes import process_client as client

ENV = {
    # The default lease: recovery must not wait for it.
    "FILE_EXPORT_TASK_LEASE_SECONDS": "300",
    "FILE_EXPORT_RECONCILER_POLL_MS": "500",
    "FILE_EXPORT_PUBLISHER_POLL_MS": "200",
    "FILE_EXPORT_WORKER_NICE": "0",
    "FILE_EXPORT_WORKER_SCHED_IDLE": "false",
}


@pytest.mark.parametrize("instance_id", [None, "exporter-0"], ids=["default-id", "same-id"])
async def test_a_restart_after_sigkill_runs_the_killed_export_again_at_once(
    tmp_path: Path, instance_id: str | None
) -> None:
    data = tmp_path / "data"
    env = {**ENV, "FILE_EXPORT_INSTANCE_ID": instance_id}
    first = ServeProcess(data, tmp_path / "first.log", **env)
    try:
        url = await first.ready()
        async with client(url) as c:
            body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 200_000}}
            created = (await c.post(API, json=body)).json()
            assert created["code"] == "200", created
            task_id = created["data"]["id"]
            with trio.fail_after(60):
                while True:  # running, some rows written, far from done
                    task = (await c.get(f"{API}/{task_id}")).json()["data"]
                    if task["status"] == "RUNNING" and int(task["processedRows"]) > 0:
                        break
                    assert task["status"] in ("PENDING", "RUNNING"), task["failureMessage"]
                    await trio.sleep(0.02)
        first.proc.send_signal(signal.SIGKILL)
        assert await first.wait() == -signal.SIGKILL
    finally:
        first.close()

    second = ServeProcess(data, tmp_path / "second.log", **env)
    try:
        url = await second.ready()
        started = trio.current_time()
        async with client(url) as c:
            with trio.fail_after(120):  # far below the 300 s lease
                while True:
                    task = (await c.get(f"{API}/{task_id}")).json()["data"]
                    if task["status"] in ("SUCCEEDED", "FAILED", "CANCELLED"):
                        break
                    await trio.sleep(0.1)
        seconds = trio.current_time() - started
    finally:
        second.close()
    assert task["status"] == "SUCCEEDED", task
    assert task["attemptCount"] == 2 and task["processedRows"] == "200000", task
    log = (tmp_path / "second.log").read_text()
    assert "a process that is gone: its lease ends now" in log, log[-3000:]
    print(f"\nkilled mid-export, restarted: SUCCEEDED {seconds:.1f} s after the restart")
