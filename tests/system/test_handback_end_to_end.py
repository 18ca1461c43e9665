"""Hand-backs are bounded, end to end (issue 22 item 3): the real ``export-center serve``
process is SIGTERMed during the same export again and again. Each stop hands the task back
(docs/operations.md, "Drain and restart an instance"); past FILE_EXPORT_MAX_HANDBACKS in a
row each hand-back counts as an attempt, and the task ends FAILED, saying why, instead of
running forever.

The Provider is served by this test, slow by a parameter (``BATCH_DELAY_SECONDS`` a batch
of ``BATCH_ROWS`` rows, without end), so the export is still running at every SIGTERM;
the grace period is short, so each stop interrupts it. Nothing waits by sleeping for a
state: every step waits on a condition (the process's log, the Provider's requests, the
task's status).
"""

from __future__ import annotations

import json
import signal
import sqlite3
from pathlib import Path

import httpx
import trio

from tests.helpers import API
from tests.processes import ServeProcess, poll_task, process_client
from tests.provider_server import serve_provider

TOKEN = "slow-provider-token"
#: The slowness of the Provider: each batch answers after this many seconds.
BATCH_DELAY_SECONDS = 0.2
BATCH_ROWS = 50
MAX_ATTEMPTS = 2
MAX_HANDBACKS = 1
REGISTRY = f"""definitions:
  SLOW:
    provider-service: slow-service
    provider-path: /internal/exports/v1/SLOW/batches
    required-permission: platform:customer:export
    app-scope: PLATFORM
    max-rows: 500000
    max-attempts: {MAX_ATTEMPTS}
    batch-size: {BATCH_ROWS}
"""
COLUMNS = [
    {"key": "id", "title": "ID", "type": "INTEGER"},
    {"key": "name", "title": "Name", "type": "STRING"},
]
TERMINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}


class SlowProvider:
    """An endless table, one batch per ``BATCH_DELAY_SECONDS``; counts its requests."""

    def __init__(self) -> None:
        self.requests = 0
        self.requested = trio.Event()

    async def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        self.requested.set()
        body = json.loads(request.content)
        n = int(body.get("cursor") or 0)
        await trio.sleep(BATCH_DELAY_SECONDS)
        rows = [{"id": n * BATCH_ROWS + i, "name": f"row {i}"} for i in range(BATCH_ROWS)]
        data = {
            "schemaVersion": 1,
            "schemaHash": "sha256:slow",
            "snapshotToken": "snap",
            "columns": COLUMNS if n == 0 else None,
            "rows": rows,
            "nextCursor": str(n + 1),
            "hasMore": True,
            "totalRows": 500_000,
        }
        return httpx.Response(200, json={"code": "200", "message": "ok", "data": data})

    async def next_request(self) -> None:
        """Wait for the Provider's next request (an export running)."""
        self.requested = trio.Event()
        await self.requested.wait()


def task_row(data: Path, task_id: str) -> tuple[str, int, int, int, str | None]:
    with sqlite3.connect(data / "export-center.db") as db:
        row = db.execute(
            "SELECT status, dispatch_version, attempt_count, handback_count, failure_message"
            " FROM file_export_task WHERE id = ?",
            (int(task_id),),
        ).fetchone()
    assert row is not None
    return row  # type: ignore[no-any-return]


async def test_an_export_sigtermed_again_and_again_ends_failed_saying_why(
    tmp_path: Path, processes: list[ServeProcess]
) -> None:
    data = tmp_path / "data"
    registry = tmp_path / "registry.yaml"
    registry.write_text(REGISTRY)
    provider = SlowProvider()
    async with serve_provider(provider.handle) as provider_url:
        env = {
            "FILE_EXPORT_DEMO_PROVIDER": "false",
            "FILE_EXPORT_REGISTRY": str(registry),
            "FILE_EXPORT_PROVIDER_URLS": json.dumps({"slow-service": provider_url}),
            "INTERNAL_SERVICE_TOKEN": TOKEN,
            "FILE_EXPORT_MAX_HANDBACKS": str(MAX_HANDBACKS),
            "FILE_EXPORT_SHUTDOWN_GRACE_SECONDS": "0.3",
            "FILE_EXPORT_TASK_LEASE_SECONDS": "10",
            "FILE_EXPORT_TASK_HEARTBEAT_SECONDS": "1",
            "FILE_EXPORT_PUBLISHER_POLL_MS": "100",
            "FILE_EXPORT_RECONCILER_POLL_MS": "300",
            "FILE_EXPORT_CONSUMER_CONCURRENCY": "1",
        }
        task_id = ""
        seen = []
        for run in range(1, MAX_HANDBACKS + MAX_ATTEMPTS + 2):  # one more than it takes
            proc = ServeProcess(data, tmp_path / f"run{run}.log", **env)
            processes.append(proc)
            with trio.fail_after(60):
                requested = trio.Event()

                async def watch(done: trio.Event = requested) -> None:
                    await provider.next_request()
                    done.set()

                async with trio.open_nursery() as n:
                    n.start_soon(watch)
                    url = await proc.ready()
                    if not task_id:
                        async with process_client(url) as c:
                            body = {"exportType": "SLOW", "parameters": {}}
                            answer = (await c.post(API, json=body)).json()
                            assert answer["code"] == "200", answer
                            task_id = answer["data"]["id"]
                    # The export runs in this process: its worker asked the Provider.
                    await requested.wait()
                    running = await poll_task(url, task_id, {"RUNNING"} | TERMINAL)
                    assert running["status"] == "RUNNING", running
            proc.proc.send_signal(signal.SIGTERM)
            assert await proc.wait() == 0
            log = proc.log.read_text()
            assert "interrupted by shutdown" in log and "Traceback" not in log
            status, version, attempts, handbacks, message = task_row(data, task_id)
            seen.append((status, version, attempts, handbacks))
            if status in TERMINAL:
                break

        # One free hand-back, then each one counts: attempt 1 of 2, then 2 of 2 ends it.
        assert seen == [
            ("PENDING", 2, 0, 1),
            ("PENDING", 3, 1, 2),
            ("FAILED", 3, 2, 3),
        ]
        expected = (
            "handed back 3 times in a row (shutdown) without finishing; counted as attempt 2 of 2"
        )
        assert message == expected
        failed = [
            line
            for line in map(json.loads, log.splitlines())
            if line.get("message") == "task failed"
        ]
        assert [(f["taskId"], f["error"]) for f in failed] == [(task_id, expected)]
        assert not any((data / "files" / "exports").glob("*/*.xlsx"))  # every partial deleted

        # What the user sees, from a fresh start: the task FAILED with that message, and
        # its history with each hand-back and its cause.
        last = ServeProcess(data, tmp_path / "last.log", **env)
        processes.append(last)
        url = await last.ready()
        async with process_client(url) as c:
            task = (await c.get(f"{API}/{task_id}")).json()["data"]
            events = (await c.get(f"{API}/{task_id}/events")).json()["data"]
        assert (task["status"], task["failureMessage"]) == ("FAILED", expected)
        items = events["items"] if isinstance(events, dict) else events
        handed = [e["detail"] for e in items if e["kind"] == "handed_back"]
        assert [(d["cause"], d["inARow"]) for d in handed] == [
            ("shutdown", 1),
            ("shutdown", 2),
            ("shutdown", 3),
        ]
        last.proc.send_signal(signal.SIGTERM)
        assert await last.wait() == 0
