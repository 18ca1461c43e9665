"""Database blips never crash an actor (issue 13): the publisher, the reconciler and the
DLQ handler ride out an outage without a restart, one reconciler duty's failure never
skips the others, and a consumer slot never claims a task another slot of its process
holds. That blips never fail a healthy export is ``test_db_blips.py``'s.

The database "goes down" through ``tests.faults.FaultyDatabase`` (every transaction
refused while ``down``), around the real SQLite or MariaDB store, on pytest-trio's
autojump mock clock with the DB clock following it.
"""

from __future__ import annotations

import logging
import os

import pytest
import trio

from actors.core.models import TaskStatus
from actors.core.outcomes import ExportResult
from actors.core.ports.storage import StoredObject
from actors.pipeline.attempt import RunContext
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
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
from tests.actors.db_blips_helpers import Clock, on_faulty, outage, write_file
from tests.helpers import claim, create, exec_sql, make_slot
from tests.servers import RecordingDelivery

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
