"""The gauge sampler: the outbox backlog aged from each row's first due time (through
send back-off, not during a retry wait), storage probe, series created at 0, and gauges on
an instance whose reconciler is off."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest
import trio

from actors.core.definitions import ExportDefinition, Registry
from actors.core.health import Component
from actors.core.outcomes import RetryOutcome
from actors.plumbing.metrics import Metrics
from actors.plumbing.registry_source import RegistryHolder
from actors.storage.local import LocalDirectoryStorage
from actors.supervised.sampler import RECONCILER_ACTIONS, SEND_RESULTS, GaugeSampler
from db.store import ExportStore
from tests.helpers import claim, create, exec_sql, make_settings, run_inline, running_service

DEFINITION = ExportDefinition(
    "CUSTOMER_LIST",
    "demo-service",
    "/internal/exports/v1/CUSTOMER_LIST/batches",
    "platform:customer:export",
    "PLATFORM",
)


def sampler(store: ExportStore, storage: LocalDirectoryStorage, metrics: Metrics) -> GaugeSampler:
    registry = RegistryHolder(Registry({"CUSTOMER_LIST": DEFINITION}))
    return GaugeSampler(store, storage, registry, metrics, period=1)


def gauge(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


async def send_fails(store: ExportStore, backoff: float) -> None:
    """One publisher round whose every send fails: each due row backs off ``backoff`` s."""
    for row in await store.claim_due_outbox("pub", 60, 10):
        assert await store.mark_outbox_send_failed(row.id, "pub", backoff, "broker down")


async def test_a_row_whose_sends_keep_failing_ages_from_its_first_due_time(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    metrics: Metrics,
) -> None:
    """Issue 22: the broker is unreachable, every send fails and backs off (5 s, 15 s,
    1 min ...). The row is never due at a scrape between two attempts, so a gauge of due
    rows read ~0 for the whole outage and never paged. It counts the row from when it
    first became due; back-off does not reset that."""
    task = await create(store)
    probe = sampler(store, storage, metrics)
    for backoff in (5, 15, 60, 300):
        await send_fails(store, backoff)
        await trio.sleep(backoff - 1)  # a scrape inside the back-off window
        await probe.sample_once()
        [row] = await store.list_outbox(task.id)
        assert row.next_retry_at > row.updated_at  # still backing off: not due by next_retry_at
        await trio.sleep(1)
    assert gauge(metrics, "export_outbox_pending") == 1
    # due since the create: 4 + 14 + 59 + 299 s of back-off windows and the scrapes' 3 s
    assert gauge(metrics, "export_outbox_oldest_age_seconds") == pytest.approx(379, abs=1)
    assert gauge(metrics, "export_outbox_max_attempt") == 4

    # Sent at last: nothing is late any more.
    for row in await store.claim_due_outbox("pub", 60, 10):
        assert await store.mark_outbox_sent(row.id, "pub")
    await probe.sample_once()
    assert gauge(metrics, "export_outbox_pending") == 0
    assert gauge(metrics, "export_outbox_oldest_age_seconds") == 0


async def test_a_requeued_row_is_due_again_from_the_requeue(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    metrics: Metrics,
) -> None:
    """A row that was SENT and is re-queued for the same version (the reconciler's
    redispatch of a lost command) counts from the re-queue, not from its first write."""
    task = await create(store)
    for row in await store.claim_due_outbox("pub", 60, 10):
        assert await store.mark_outbox_sent(row.id, "pub")
    await trio.sleep(3600)  # the command was lost; an hour later the reconciler sends it again
    assert await store.redispatch_stale_sent(600, 60, 10) == 1
    await trio.sleep(30)
    await sampler(store, storage, metrics).sample_once()
    [row] = await store.list_outbox(task.id)
    assert row.dispatch_version == 1 and row.due_at is not None
    assert gauge(metrics, "export_outbox_pending") == 1
    assert gauge(metrics, "export_outbox_oldest_age_seconds") == pytest.approx(30, abs=1)


async def test_a_retry_wait_is_not_a_backlog(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    metrics: Metrics,
) -> None:
    """The false alert of the operations issue: during a normal 15-minute retry wait the
    outbox age read ~850 s. The retry's command is first due when the retry is: it reads
    0 the whole wait, then ages from the due time."""
    task = await create(store)
    for row in await store.claim_due_outbox("pub", 60, 10):
        assert await store.mark_outbox_sent(row.id, "pub")
    running = await claim(store, task)
    assert await store.schedule_retry(running, "owner-a", "provider 503", 900) == (
        RetryOutcome.SCHEDULED
    )
    probe = sampler(store, storage, metrics)
    await probe.sample_once()
    await trio.sleep(850)
    await probe.sample_once()
    assert gauge(metrics, "export_outbox_pending") == 0
    assert gauge(metrics, "export_outbox_oldest_age_seconds") == 0
    await trio.sleep(60)  # due for 10 s now, and still unsent
    await probe.sample_once()
    assert gauge(metrics, "export_outbox_pending") == 1
    assert gauge(metrics, "export_outbox_oldest_age_seconds") == pytest.approx(10, abs=1)


async def test_a_row_of_an_older_release_without_due_at_is_aged_from_next_retry_at(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    metrics: Metrics,
) -> None:
    """During a rolling upgrade an instance of the release before the column writes rows
    without it: they are read as that release did (due by next_retry_at)."""
    due, waiting = await create(store, user_id=1), await create(store, user_id=2)
    await exec_sql(
        store,
        "UPDATE file_export_outbox SET due_at = NULL, next_retry_at = {now-:s} WHERE task_id = :id",
        {"s": 30, "id": due.id},
    )
    await exec_sql(
        store,
        "UPDATE file_export_outbox SET due_at = NULL, next_retry_at = {now+:s} WHERE task_id = :id",
        {"s": 900, "id": waiting.id},
    )
    await sampler(store, storage, metrics).sample_once()
    assert gauge(metrics, "export_outbox_pending") == 1
    assert gauge(metrics, "export_outbox_oldest_age_seconds") == pytest.approx(30, abs=1)


async def test_the_storage_probe_reports_free_space_and_writability(
    store: ExportStore, tmp_path: Path, metrics: Metrics, caplog: pytest.LogCaptureFixture
) -> None:
    good = LocalDirectoryStorage(tmp_path / "files", offload=run_inline)
    await sampler(store, good, metrics).sample_once()
    assert gauge(metrics, "export_storage_writable") == 1
    assert (gauge(metrics, "export_storage_free_bytes") or 0) > 0
    assert not list((tmp_path / "files" / ".probe").iterdir())  # the probe file is gone

    # A storage root that became a plain file: nothing can be written under it.
    broken_root = tmp_path / "broken"
    broken = LocalDirectoryStorage(broken_root, offload=run_inline)
    broken_root.rmdir()
    broken_root.write_text("not a directory")
    failing = sampler(store, broken, metrics)
    with caplog.at_level(logging.INFO, logger="actors.supervised.sampler"):
        await failing.sample_once()
        await failing.sample_once()
        # /healthz/details names the storage as the degraded component, and why
        seen = failing.health.get(Component.STORAGE)
        assert not seen.up and seen.detail.strip(), seen
        broken_root.unlink()
        broken_root.mkdir()
        await failing.sample_once()
    assert gauge(metrics, "export_storage_writable") == 1
    assert failing.health.get(Component.STORAGE).up
    lines = [r.getMessage() for r in caplog.records if r.name == "actors.supervised.sampler"]
    assert len(lines) == 2, lines  # one when it fails, one when it recovers
    assert lines[0].startswith("storage probe failed: ") and lines[1] == "storage is writable again"


async def test_the_series_alerts_rate_over_exist_at_zero(
    store: ExportStore, storage: LocalDirectoryStorage, metrics: Metrics
) -> None:
    await sampler(store, storage, metrics).sample_once()
    for status in ("SUCCEEDED", "FAILED"):
        labels = {"type": "CUSTOMER_LIST", "status": status}
        assert gauge(metrics, "export_task_completed_total", **labels) == 0
    for action in RECONCILER_ACTIONS:
        assert gauge(metrics, "export_reconciler_action_total", action=action) == 0
    for result in SEND_RESULTS:  # ExportOutboxSendErrors rates over both
        assert gauge(metrics, "export_outbox_send_total", result=result) == 0


async def test_an_instance_without_the_reconciler_reports_the_gauges(tmp_path: Path) -> None:
    """Before, only the reconciler refreshed them: a staged instance read an empty queue."""
    settings = make_settings(
        tmp_path,
        reconciler_enabled=False,
        publisher_enabled=False,  # the outbox row stays unsent: a backlog of one
        metrics_sample_seconds=0.05,
    )
    async with running_service(settings) as rt:
        await create(rt.store)
        async with httpx.AsyncClient(base_url=rt.base_url, timeout=10) as client:
            with trio.fail_after(30):
                while "export_outbox_pending 1.0" not in (await client.get("/metrics")).text:
                    await trio.sleep(0.05)
            text = (await client.get("/metrics")).text
    assert "export_storage_writable 1.0" in text
