"""Helpers shared by the reconciler tests: a reconciler on a fixed file clock, stored files,
outbox rows forced to SENT, the settings of a queue that waits longer than the re-send
interval."""

from __future__ import annotations

from pathlib import Path

import trio
import trio.testing

from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.storage.keys import new_object_key
from actors.storage.local import LocalDirectoryStorage
from actors.supervised.reconciler import Reconciler
from db.store import ExportStore
from tests.helpers import claim, create, exec_sql, make_settings

Clock = trio.testing.MockClock


def queue_settings(tmp_path: Path, slots: int = 1) -> Settings:
    """``slots`` consumer slots, short leases, a re-send after 30 s (a redispatch grace of
    5 s): a queued task waits many re-send intervals in a test."""
    return make_settings(
        tmp_path,
        consumer_concurrency=slots,
        task_lease_seconds=10,
        task_heartbeat_seconds=2,
        max_duration_minutes=60,
        sent_stale_seconds=30,
        redispatch_grace_seconds=5,
    )


def reconciler_for(
    store: ExportStore, storage: LocalDirectoryStorage, settings: Settings, metrics: Metrics
) -> Reconciler:
    return Reconciler(store, storage, settings, metrics, file_clock=lambda: 2_000_000_000.0)


async def write_file(storage: LocalDirectoryStorage, key: str, data: bytes = b"") -> None:
    f = await storage.create(key)
    f.write(data)
    f.close()


async def succeeded_with_file(
    store: ExportStore,
    storage: LocalDirectoryStorage,
    *,
    retention_seconds: float,
    data: bytes = b"",
) -> tuple[int, str]:
    """A SUCCEEDED task and its stored file: (task id, object key)."""
    running = await claim(store, await create(store))
    key = new_object_key(running.id)
    await write_file(storage, key, data)
    assert await store.complete_task(
        running,
        "owner-a",
        file_name="f.xlsx",
        object_key=key,
        content_type="x",
        size_bytes=len(data),
        rows=0,
        retention_seconds=retention_seconds,
    )
    return running.id, key


async def mark_all_sent(store: ExportStore) -> None:
    """Publish every due row through a transport that always succeeds."""
    for row in await store.claim_due_outbox("pub", 60, 100):
        assert await store.mark_outbox_sent(row.id, "pub")


async def force_outbox_sent(store: ExportStore, task_id: int, version: int) -> None:
    """Put an outbox row into SENT as if it had been published (also before it was due)."""
    await exec_sql(
        store,
        (
            "UPDATE file_export_outbox SET status = 'SENT', sent_at = {now} "
            "WHERE task_id = :t AND dispatch_version = :v"
        ),
        {"t": task_id, "v": version},
    )
