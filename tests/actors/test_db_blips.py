"""Database blips never fail a healthy export and never crash an actor (issue 13).

The database "goes down" through ``tests.faults.FaultyDatabase`` (every transaction
refused while ``down``), around the real SQLite or MariaDB store. Timing tests run on
pytest-trio's autojump mock clock with the DB clock following it; the outage is switched
by a sibling task at exact mock times. Settings: lease 10 s, heartbeat 2 s, so a run's
settling writes keep retrying until 8 s after the last renewal that landed.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import httpx
import openpyxl
import pytest
import trio
import trio.testing

from actors.core.db_retry import DbRetryPolicy
from actors.core.definitions import ExportDefinition, Registry
from actors.core.errors import LimitExceededError, ProviderUnavailableError
from actors.core.models import Task, TaskStatus
from actors.core.outcomes import ExportResult
from actors.core.ports.storage import StoredObject
from actors.core.principal import AppCode
from actors.pipeline.attempt import RunContext
from actors.pipeline.provider.client import ProviderClient
from actors.pipeline.runner import ExportRunner
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.plumbing.registry_source import RegistryHolder
from actors.plumbing.supervisor import supervise
from actors.plumbing.wakeup import Wakeup
from actors.storage.local import LocalDirectoryStorage
from actors.supervised.dlq import DlqHandler
from actors.supervised.local_claims import LocalClaims
from actors.supervised.publisher import Publisher
from actors.supervised.reconciler import Reconciler
from actors.transport.embedded import EmbeddedBus
from db.database import DatabaseUnavailableError
from db.store import ExportStore
from tests.faults import FaultyDatabase
from tests.helpers import TOPIC, claim, create, exec_sql, make_executor, make_slot
from tests.provider_server import serve_provider
from tests.servers import RecordingDelivery

Clock = trio.testing.MockClock


def on_faulty(store: ExportStore, budget: float = 30) -> tuple[ExportStore, FaultyDatabase]:
    """The store over a ``FaultyDatabase``; ``budget``: the store's own retry budget, s
    (short, so that an outage outlasts it and the actor's own handling is what counts)."""
    faulty = FaultyDatabase(store.db)
    policy = DbRetryPolicy(budget_seconds=budget)
    return ExportStore(faulty, store.ids, topic=TOPIC, retry_policy=policy), faulty  # type: ignore[arg-type]


async def claimed(store: ExportStore, settings: Settings, **kw: Any) -> Task:
    return await claim(
        store,
        await create(store, **kw),
        settings.instance_id,
        lease=settings.task_lease_seconds,
        max_duration=settings.max_duration_minutes * 60,
    )


async def write_file(ctx: RunContext) -> str:
    """What a run does with its file, in short: recorded, created and written."""
    with await ctx.file.create() as f:
        f.write(b"xlsx bytes")
    assert ctx.file.key is not None
    return ctx.file.key


async def outage(faulty: FaultyDatabase, start: float, end: float) -> None:
    """The database is down from ``start`` to ``end`` (trio time)."""
    await trio.sleep_until(start)
    faulty.down = True
    await trio.sleep_until(end)
    faulty.down = False


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

SERVICE = "blip-provider"
DEFINITION = ExportDefinition(
    "CUSTOMER_LIST",
    SERVICE,
    "/internal/exports/v1/CUSTOMER_LIST/batches",
    "platform:customer:export",
    AppCode.PLATFORM,
    batch_size=50,
)
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


# --- no actor crashes ----------------------------------------------------------------------


async def test_publisher_and_reconciler_ride_out_an_outage_without_a_restart(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The database is down for 30 s while the publisher and the reconciler loop under
    their supervisors: neither crashes (``export_actor_restarts_total`` stays 0), no
    traceback is logged, and once the database is back the pending command is sent."""
    fs, faulty = on_faulty(store, budget=1)
    task = await create(store)
    bus = EmbeddedBus()
    publisher = Publisher(fs, bus, settings, metrics, Wakeup())
    reconciler = Reconciler(fs, storage, settings, metrics)
    faulty.down = True
    with caplog.at_level(logging.WARNING):
        async with trio.open_nursery() as n:
            n.start_soon(supervise, "publisher", publisher.run, metrics)
            n.start_soon(supervise, "reconciler", reconciler.run, metrics)
            await trio.sleep(30)
            assert bus.sent == []
            faulty.down = False
            with trio.fail_after(30):
                while not bus.sent:
                    await trio.sleep(0.1)
            n.cancel_scope.cancel()
    assert [m.key for m in bus.sent] == [str(task.id)]
    restarts = metrics.registry.get_sample_value(
        "export_actor_restarts_total", {"actor": "publisher"}
    )
    assert restarts is None or restarts == 0
    assert metrics.registry.get_sample_value(
        "export_actor_restarts_total", {"actor": "reconciler"}
    ) in (None, 0)
    assert not [r for r in caplog.records if r.exc_info]
    assert metrics.registry.get_sample_value(
        "export_reconciler_errors_total", {"duty": "redispatch"}
    )


async def test_dlq_handler_retries_a_quarantine_through_an_outage(
    autojump_clock: Clock,
    store: ExportStore,
    metrics: Metrics,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A poison command arrives while the database is down for 20 s, far longer than the
    store's own retries (1 s): the handler keeps trying (WARNING lines, no traceback) and
    quarantines it once the database is back."""

    fs, faulty = on_faulty(store, budget=1)
    task = await create(store)
    [row] = await store.claim_due_outbox("pub", 60, 10)
    assert await store.mark_outbox_sent(row.id, "pub")
    delivery = RecordingDelivery(
        "{broken",
        properties={"eventId": row.event_id, "taskId": str(task.id), "dispatchVersion": "1"},
    )
    faulty.down = True
    with caplog.at_level(logging.WARNING):
        async with trio.open_nursery() as n:
            n.start_soon(outage, faulty, 0, trio.current_time() + 20)
            outcome = await DlqHandler(fs, EmbeddedBus(), metrics).handle(delivery)
    assert outcome == "quarantined" and delivery.events == ["ack"]
    assert (await store.get_task(task.id)).status == TaskStatus.FAILED
    assert not [r for r in caplog.records if r.exc_info]


# --- item 5: one duty's failure never skips the others -------------------------------------


async def test_a_failing_duty_is_counted_and_the_other_duties_still_run(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The orphan scan raises (a folder vanished under it) and the expiry duty hits a
    database fault: both are counted in ``export_reconciler_errors_total{duty}``, and the
    lease recovery of the same pass still happens (the gauges are the sampler's:
    tests/actors/supervised/test_sampler.py)."""
    running = await claim(store, await create(store))
    await exec_sql(
        store, "UPDATE file_export_task SET lease_until = {now} WHERE id = :id", {"id": running.id}
    )

    async def vanished() -> list[StoredObject]:
        raise FileNotFoundError(2, "No such file or directory", "exports/123")

    async def db_fault(limit: int) -> list[tuple[int, str | None]]:
        raise DatabaseUnavailableError("simulated")

    monkeypatch.setattr(storage, "list_objects", vanished)
    monkeypatch.setattr(store, "expired_files", db_fault)
    actions = await Reconciler(store, storage, settings, metrics).reconcile_once()
    assert actions["lease_recover"] == 1 and actions["orphan_clean"] == 0
    errors = {
        duty: metrics.registry.get_sample_value("export_reconciler_errors_total", {"duty": duty})
        for duty in ("orphan_clean", "expire", "lease_recover")
    }
    assert errors == {"orphan_clean": 1.0, "expire": 1.0, "lease_recover": None}


async def test_a_second_delivery_of_a_task_held_by_another_slot_is_acked_without_a_claim(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """Two slots of one process share ``LocalClaims``: while slot A claims and runs a
    task, a duplicate command for it reaching slot B is acked at once and never reaches
    the database — so a claim of A whose answer was lost can only be A's own."""
    from actors.core.command_message import Command

    local = LocalClaims()
    fs, faulty = on_faulty(store)
    task = await create(store)
    body = Command.new(task.id, task.export_type, 1, "t", rand=os.urandom).to_json()
    running = trio.Event()
    release = trio.Event()

    async def pipeline(ctx: RunContext) -> ExportResult:
        key = await write_file(ctx)
        running.set()
        await release.wait()
        return ExportResult(key, "f.xlsx", "x", 10, 1)

    first, second = RecordingDelivery(body), RecordingDelivery(body)
    a = make_slot(fs, storage, settings, metrics, pipeline, local=local)
    b = make_slot(fs, storage, settings, metrics, pipeline, local=local)
    async with trio.open_nursery() as n:
        n.start_soon(a.handle, first)
        await running.wait()
        before = faulty.transactions
        await b.handle(second)
        assert second.events == ["ack"] and faulty.transactions == before
        release.set()
    assert first.events == ["ack"] and not local.holds(task.id)
    assert (await store.get_task(task.id)).status == TaskStatus.SUCCEEDED
    assert (
        metrics.registry.get_sample_value(
            "export_consumer_no_claim_total", {"reason": "running_elsewhere"}
        )
        == 1.0
    )
