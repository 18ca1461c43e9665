"""Database blips never fail a healthy export (issue 13): a run's settling writes retry
through an outage and record the real outcome, a database error escaping the run hands the
task back uncounted, and failed progress writes are skipped. That blips never crash an
actor is ``test_db_blips_actors.py``'s.

The database "goes down" through ``tests.faults.FaultyDatabase`` (every transaction
refused while ``down``), around the real SQLite or MariaDB store. Timing tests run on
pytest-trio's autojump mock clock with the DB clock following it; the outage is switched
by a sibling task at exact mock times. Settings: lease 10 s, heartbeat 2 s, so a run's
settling writes keep retrying until 8 s after the last renewal that landed.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx
import openpyxl
import pytest
import trio

from actors.core.definitions import Registry
from actors.core.errors import LimitExceededError, ProviderUnavailableError
from actors.core.models import Task, TaskStatus
from actors.core.outcomes import ExportResult
from actors.pipeline.attempt import RunContext
from actors.pipeline.provider.client import ProviderClient
from actors.pipeline.runner import ExportRunner
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.plumbing.registry_source import RegistryHolder
from actors.storage.local import LocalDirectoryStorage
from actors.supervised.local_claims import LocalClaims
from actors.supervised.reconciler import Reconciler
from db.database import DatabaseUnavailableError
from db.store import ExportStore
from tests.actors.db_blips_helpers import Clock, on_faulty, outage, write_file
from tests.actors.pipeline.runner_helpers import DEFINITION, SERVICE
from tests.helpers import claim, create, make_executor
from tests.provider_server import serve_provider


async def claimed(store: ExportStore, settings: Settings, **kw: Any) -> Task:
    return await claim(
        store,
        await create(store, **kw),
        settings.instance_id,
        lease=settings.task_lease_seconds,
        max_duration=settings.max_duration_minutes * 60,
    )


# --- item 3: settling rides out a blip ----------------------------------------------------


@pytest.mark.parametrize("ending", ["success", "transient", "permanent"])
async def test_settling_retries_through_an_outage_and_records_the_real_outcome(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
    ending: str,
) -> None:
    """The database goes down just as the run ends (success, a Provider 503, a limit hit)
    and comes back 6 s later, within the lease margin: the outcome is recorded as if
    nothing happened — SUCCEEDED with its file, a retry with the Provider's message, or
    FAILED with the limit — the slot returns normally, and no attempt is added. The
    store gives up after 1 s: the slot's own retries carry it through."""
    fs, faulty = on_faulty(store, budget=1)
    task = await claimed(fs, settings)

    async def pipeline(ctx: RunContext) -> ExportResult:
        key = await write_file(ctx)
        faulty.down = True
        if ending == "transient":
            raise ProviderUnavailableError("provider answered HTTP 503")
        if ending == "permanent":
            raise LimitExceededError("export exceeds max-rows 10")
        return ExportResult(key, "f.xlsx", "x", 10, 1)

    async with trio.open_nursery() as n:
        n.start_soon(outage, faulty, 0, trio.current_time() + 6)
        await make_executor(fs, storage, settings, metrics, pipeline).execute(task)
    after = await store.get_task(task.id)
    assert after.attempt_count == 1
    if ending == "success":
        assert after.status == TaskStatus.SUCCEEDED and await storage.size(after.object_key) == 10
    elif ending == "transient":
        assert (after.status, after.dispatch_version, after.failure_message) == (
            TaskStatus.PENDING,
            2,
            "provider answered HTTP 503",
        )
    else:
        assert (after.status, after.failure_message) == (
            TaskStatus.FAILED,
            "export exceeds max-rows 10",
        )
    assert fs.health.faulty_since is None and fs.health.blips  # seen, and over


@pytest.mark.parametrize("ending", ["success", "transient"])
async def test_an_outage_past_the_lease_margin_leaves_the_real_cause_to_the_reconciler(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
    ending: str,
) -> None:
    """The database stays down for 40 s, past the 10 s lease: the slot stops retrying at
    the lease margin without raising, keeps a finished file (its commit might have
    landed), and notes why the run ended. When the database is back, the reconciler of
    the same process recovers the lease with that cause — not "executor lost" — and, the
    attempts being spent, the user sees it in the FAILED task."""
    fs, faulty = on_faulty(store, budget=1)
    local = LocalClaims()
    task = await claimed(fs, settings, max_attempts=1)
    keys: list[str] = []

    async def pipeline(ctx: RunContext) -> ExportResult:
        keys.append(await write_file(ctx))
        faulty.down = True
        if ending == "transient":
            raise ProviderUnavailableError("provider answered HTTP 503")
        return ExportResult(keys[0], "f.xlsx", "x", 10, 20000)

    started = trio.current_time()
    async with trio.open_nursery() as n:
        n.start_soon(outage, faulty, 0, started + 40)
        await make_executor(fs, storage, settings, metrics, pipeline, local=local).execute(task)
        assert trio.current_time() - started < settings.task_lease_seconds
        assert (await storage.size(keys[0]) is not None) == (ending == "success")
    reconciler = Reconciler(fs, storage, settings, metrics, local=local)
    assert (await reconciler.reconcile_once())["lease_recover"] == 1
    after = await store.get_task(task.id)
    assert after.status == TaskStatus.FAILED
    expected = (
        "the export finished (20000 rows) but its result was not saved"
        if ending == "success"
        else "provider answered HTTP 503"
    )
    assert after.failure_message.startswith(expected), after.failure_message
    assert "max attempts reached" in after.failure_message
    assert "executor lost" not in after.failure_message
    assert await storage.list_objects() == []  # the recovery deleted the kept file


async def test_a_database_error_escaping_the_run_hands_the_task_back_uncounted(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """A write the run needed failed past the store's budget: that is the database's
    fault, not the export's — the task goes back to PENDING at a new version with the
    attempt not counted, and its partial file is deleted."""
    task = await claimed(store, settings)

    async def pipeline(ctx: RunContext) -> ExportResult:
        await write_file(ctx)
        raise DatabaseUnavailableError("cannot connect to MySQL: (2003, ...)")

    await make_executor(store, storage, settings, metrics, pipeline).execute(task)
    after = await store.get_task(task.id)
    assert (after.status, after.dispatch_version, after.attempt_count) == (
        TaskStatus.PENDING,
        2,
        0,
    )
    assert await storage.list_objects() == []


async def test_a_watchdog_outage_hands_the_task_back_if_the_database_returns_in_time(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """Renewals fail from t=1 s; the watchdog aborts the run one heartbeat before the
    lease would run out (t≈8 s) and the database returns at t=9 s, before the lease does:
    the task is handed back at a new version with the attempt not counted."""
    fs, faulty = on_faulty(store)
    task = await claimed(fs, settings)
    t0 = trio.current_time()

    async def pipeline(ctx: RunContext) -> ExportResult:
        await write_file(ctx)
        await trio.sleep(1000)
        raise AssertionError("only the abort ends this")

    async with trio.open_nursery() as n:
        n.start_soon(outage, faulty, t0 + 1, t0 + 9)
        await make_executor(fs, storage, settings, metrics, pipeline).execute(task)
    after = await store.get_task(task.id)
    assert (after.status, after.dispatch_version, after.attempt_count) == (
        TaskStatus.PENDING,
        2,
        0,
    )
    assert await storage.list_objects() == []


# --- item 2: progress writes -------------------------------------------------------------

COLUMNS = [
    {"key": "id", "title": "ID", "type": "INTEGER"},
    {"key": "name", "title": "Name", "type": "STRING"},
]


async def test_failed_progress_writes_are_skipped_and_cost_no_attempt(
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The real runner, a Provider of 8 batches: the database is down while batches 3 to 6
    are written (the outage switched by the Provider itself, at batch boundaries). Every
    progress write in between (one per boundary here) fails and is skipped with one
    WARNING; the export goes on, ends SUCCEEDED on its first attempt with all 400 rows, and
    the final progress is exact."""
    settings = settings.model_copy(update={"progress_write_seconds": 0.0})
    fs, faulty = on_faulty(store)
    batches = 8

    def provider(request: httpx.Request) -> httpx.Response:
        import json

        body = json.loads(request.content)
        n = int(body.get("cursor") or 0)
        faulty.down = 3 <= n + 1 <= 6
        rows = [{"id": n * 50 + i, "name": f"row {n * 50 + i}"} for i in range(50)]
        data = {
            "schemaVersion": 1,
            "schemaHash": "sha256:blip",
            "snapshotToken": "snap",
            "columns": COLUMNS if n == 0 else None,
            "rows": rows,
            "nextCursor": str(n + 1),
            "hasMore": n + 1 < batches,
            "totalRows": batches * 50,
        }
        return httpx.Response(200, json={"code": "200", "message": "ok", "data": data})

    async with serve_provider(provider) as url:
        client = ProviderClient({SERVICE: url}, "token")
        runner = ExportRunner(
            fs,
            client,
            RegistryHolder(Registry({"CUSTOMER_LIST": DEFINITION})),
            settings,
        )
        task = await claimed(fs, settings)
        with caplog.at_level(logging.WARNING, logger="actors.pipeline.runner"):
            await make_executor(fs, storage, settings, metrics, runner).execute(task)
    after = await store.get_task(task.id)
    assert (after.status, after.attempt_count, after.dispatch_version) == (
        TaskStatus.SUCCEEDED,
        1,
        1,
    )
    assert (after.processed_rows, after.total_rows) == (400, 400)
    skipped = [r for r in caplog.records if "progress write skipped" in r.getMessage()]
    assert len(skipped) == 1
    sheet = openpyxl.load_workbook(storage.path_for(after.object_key), read_only=True).active
    assert sheet.max_row == 401  # header + 400 rows
