"""A database blip never fails a healthy export (issue 13, "Done when").

One real ``export-center serve`` process on its own throwaway MariaDB (never the shared
server on 3307: this test restarts its server). Four exports of 20,000 rows run with
small batches while an admin connection kills the service's MariaDB connections again and
again, and the server is restarted once. The API is polled throughout.

The exports must still be running through ten kills and the restart on any machine: the
Provider (the demo table, served by the test: ``tests/provider_server.py``) holds every
batch past the middle of an export until both have happened, rather than counting on the
exports being slow enough (an earlier 20,000-row version finished before ten kills once
the export workers got faster).

Run with ``-s`` to see the figures.
"""

from __future__ import annotations

import io
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import openpyxl
import pytest
import trio

from tests.helpers import API
from tests.own_mariadb import OwnMariaDB
from tests.processes import ServeProcess
from tests.processes import process_client as client
from tests.provider_server import (
    GATED_SERVICE,
    BatchBody,
    cursor_rows,
    gated_demo_registry,
    gated_demo_table,
    serve_provider,
)

ROWS = 20_000
BATCH = 50
#: the Provider holds the batches from here on until the kills and the restart are done
HOLD_AT = ROWS // 2
KILLS = 10


@pytest.fixture
def own_mariadb() -> Iterator[OwnMariaDB]:
    db = OwnMariaDB("export_center_blips")
    try:
        db.start()
        yield db
    finally:
        db.close()


@pytest.mark.slow
async def test_four_exports_survive_connection_kills_and_a_server_restart(
    tmp_path: Path, own_mariadb: OwnMariaDB, processes: list[ServeProcess]
) -> None:
    registry = tmp_path / "registry.yaml"
    registry.write_text(gated_demo_registry(batch_size=BATCH))
    kills: list[float] = []
    restart: dict[str, float] = {}
    disturbed = trio.Event()  # KILLS kills and the restart are done

    def note_disturbance() -> None:
        if len(kills) >= KILLS and "down" in restart:
            disturbed.set()

    async def gate(body: BatchBody) -> None:
        if cursor_rows(body) >= HOLD_AT:
            await disturbed.wait()

    async with serve_provider(gated_demo_table(gate)) as provider_url:
        await run_the_exports(
            tmp_path,
            registry,
            provider_url,
            own_mariadb,
            processes,
            kills,
            restart,
            note_disturbance,
        )


async def run_the_exports(
    tmp_path: Path,
    registry: Path,
    provider_url: str,
    own_mariadb: OwnMariaDB,
    processes: list[ServeProcess],
    kills: list[float],
    restart: dict[str, float],
    note_disturbance: Callable[[], None],
) -> None:
    env = {
        "FILE_EXPORT_DATABASE_URL": own_mariadb.url,
        "FILE_EXPORT_REGISTRY": str(registry),
        "FILE_EXPORT_PROVIDER_URLS": json.dumps({GATED_SERVICE: provider_url}),
        "INTERNAL_SERVICE_TOKEN": "db-blips-provider-token",
        "FILE_EXPORT_MAX_ACTIVE_TASKS_PER_USER": "10",
        "FILE_EXPORT_MAX_ACTIVE_TASKS_PER_TYPE": "10",
        "FILE_EXPORT_CONSUMER_CONCURRENCY": "4",
        # All four exports belong to one user and must run side by side, so that the
        # server restart hits all of them mid-way: no slot is kept back for other users.
        "FILE_EXPORT_CONSUMER_RESERVED_SLOTS": "0",
        "FILE_EXPORT_TASK_LEASE_SECONDS": "20",
        "FILE_EXPORT_TASK_HEARTBEAT_SECONDS": "2",
        "FILE_EXPORT_RECONCILER_POLL_MS": "1000",
        "FILE_EXPORT_PUBLISHER_POLL_MS": "200",
        # Progress at every batch boundary: the restart waits for a window of it.
        "FILE_EXPORT_PROGRESS_WRITE_SECONDS": "0",
    }
    migrate = await trio.run_process(
        [sys.executable, "-c", "from actors.cli.main import main; main()", "migrate"],
        env={**own_mariadb.env, "FILE_EXPORT_DATA_DIR": str(tmp_path / "data"), **env},
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert migrate.returncode == 0, migrate.stderr.decode()
    service = ServeProcess(tmp_path / "data", tmp_path / "serve.log", **env)
    processes.append(service)
    url = await service.ready()

    ids: list[str] = []
    async with client(url) as c:
        for i in range(4):
            body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": ROWS + i}}
            r = (await c.post(API, json=body)).json()
            assert r["code"] == "200", r
            ids.append(r["data"]["id"])

    statuses: Counter[int] = Counter()  # HTTP status of every poll
    bad: list[str] = []
    tasks: dict[str, dict] = {}
    done = trio.Event()
    rng = random.Random(13)

    async def poll() -> None:
        async with client(url) as c:
            while not done.is_set():
                for path in [f"{API}/{i}" for i in ids] + ["/healthz"]:
                    r = await c.get(path, timeout=30)
                    statuses[r.status_code] += 1
                    body = r.json()
                    if r.status_code == 503 and path != "/healthz":
                        if body.get("code") != "503" or "Retry-After" not in r.headers:
                            bad.append(f"503 without envelope or Retry-After: {body}")
                    elif r.status_code not in (200, 503):
                        bad.append(f"{path}: HTTP {r.status_code} {body}")
                    elif path != "/healthz" and r.status_code == 200:
                        tasks[path.rsplit("/", 1)[1]] = body["data"]
                await trio.sleep(0.2)

    async def kill_connections() -> None:
        while not done.is_set():
            await trio.sleep(rng.uniform(0.2, 0.8))
            victims = await own_mariadb.service_connections()
            if victims:
                await own_mariadb.kill(rng.choice(victims))
                kills.append(trio.current_time())
                note_disturbance()

    async def restart_once() -> None:
        # Restart when the exports are well under way; they cannot be done: the Provider
        # holds their second half until the restart (and the kills) are over.
        while not (
            len(tasks) == 4 and all(ROWS // 10 <= int(t["processedRows"]) for t in tasks.values())
        ):
            await trio.sleep(0.05)
        assert all(int(t["processedRows"]) <= HOLD_AT for t in tasks.values()), tasks
        restart["at_rows"] = min(int(t["processedRows"]) for t in tasks.values())
        restart["down"] = await own_mariadb.restart(down_seconds=3)
        note_disturbance()

    started = trio.current_time()
    with trio.fail_after(600):
        async with trio.open_nursery() as n:
            n.start_soon(poll)
            n.start_soon(kill_connections)
            n.start_soon(restart_once)
            while not (
                len(tasks) == 4
                and all(t["status"] in ("SUCCEEDED", "FAILED") for t in tasks.values())
            ):
                await trio.sleep(0.1)
            done.set()
    elapsed = trio.current_time() - started

    assert bad == []
    assert statuses[500] == 0
    assert "down" in restart, "the server was not restarted"
    assert len(kills) >= KILLS
    final = [tasks[i] for i in ids]
    assert [(t["status"], t["attemptCount"]) for t in final] == [("SUCCEEDED", 1)] * 4, [
        (t["status"], t["attemptCount"], t["dispatchVersion"], t["failureMessage"]) for t in final
    ]
    async with httpx.AsyncClient(base_url=url) as anon:
        metrics = (await anon.get("/metrics")).text
    restarts = re.findall(r"^export_actor_restarts_total\{.*\} (\S+)$", metrics, re.M)
    assert all(float(v) == 0 for v in restarts), restarts
    log = service.log.read_text()
    (tmp_path.parent / "last-db-blips-serve.log").write_text(log)  # for a look after the run
    assert "crashed; restarting" not in log
    async with client(url) as c:
        for task_id in ids:
            resp = await c.get(f"{API}/{task_id}/download")
            assert resp.status_code == 200
            sheet = openpyxl.load_workbook(io.BytesIO(resp.content), read_only=True).active
            assert sheet.max_row == ROWS + ids.index(task_id) + 1  # header + rows

    blips = [float(x) for x in re.findall(r"database reachable again after ([\d.]+)s", log)]
    print(
        f"\n[db blips] 4 × {ROWS} rows in {elapsed:.1f} s; {len(kills)} connections killed, "
        f"server restarted once at ≥{restart['at_rows']:.0f} rows/task "
        f"(down {restart['down']:.1f} s by the test's clock); "
        f"blips seen by the service: {len(blips)}, longest {max(blips, default=0):.2f} s; "
        f"API polls {dict(statuses)}; versions {[t['dispatchVersion'] for t in final]}; "
        f"tracebacks in the log: {log.count('Traceback')}"
    )
