"""Reconciler (§8.5, §15) on the mock clock: the files it deletes (expired, orphans) and the
deletions that fail.

Docstrings name the §19.1 bullet each test covers.
"""

from __future__ import annotations

import os
from pathlib import Path

import trio
import trio.testing

from actors.core.models import TaskStatus
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.storage.keys import new_object_key
from actors.storage.local import LocalDirectoryStorage
from db.store import ExportStore
from tests.actors.supervised.reconciler_helpers import (
    Clock,
    reconciler_for,
    succeeded_with_file,
    write_file,
)
from tests.helpers import claim, create


async def test_expired_files_are_deleted_before_the_task_is_marked_expired(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    task_id, key = await succeeded_with_file(store, storage, retention_seconds=3600)
    rec = reconciler_for(store, storage, settings, metrics)
    assert (await rec.reconcile_once())["expire"] == 0
    await trio.sleep(3600)
    assert (await rec.reconcile_once())["expire"] == 1
    assert await storage.size(key) is None
    assert (await store.get_task(task_id)).status == TaskStatus.EXPIRED


async def test_orphan_files_older_than_a_day_without_a_succeeded_task_are_deleted(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
    tmp_path: Path,
) -> None:
    task_id, kept = await succeeded_with_file(
        store, storage, retention_seconds=10**7, data=b"k" * 700
    )
    orphan = new_object_key(task_id)
    young = new_object_key(424242)
    for key in (orphan, young):
        await write_file(storage, key, b"o" * 50)
    now = 2_000_000_000.0
    for key, age in ((kept, 90_000), (orphan, 90_000), (young, 3_600)):
        os.utime(storage.path_for(key), (now - age, now - age))
    assert (await reconciler_for(store, storage, settings, metrics).reconcile_once())[
        "orphan_clean"
    ] == 1
    assert await storage.size(orphan) is None
    assert await storage.size(kept) is not None and await storage.size(young) is not None
    left = [o.size for o in await storage.list_objects()]
    assert sorted(left) == [50, 700] and metrics.storage_bytes._value.get() == 750


class UndeletableStorage(LocalDirectoryStorage):
    """A storage directory whose files cannot be deleted (a read-only remount, a lost
    permission): every delete raises."""

    async def delete(self, key: str) -> bool:
        raise PermissionError(13, "Permission denied", key)


def delete_failures(metrics: Metrics, duty: str) -> float:
    value = metrics.registry.get_sample_value("export_file_delete_failures_total", {"duty": duty})
    assert value is not None, f"no series for duty {duty}"
    return value


async def test_files_that_fail_to_delete_at_expiry_are_counted_every_pass_and_kept(
    autojump_clock: Clock,
    store: ExportStore,
    settings: Settings,
    metrics: Metrics,
    tmp_path: Path,
) -> None:
    """issue 22 item 5: an expired file the storage refuses to delete stays SUCCEEDED (it
    is retried every pass) and is counted in export_file_delete_failures_total{duty=expire},
    which the ExportFileDeleteFailing alert watches; the other duties' series exist at 0."""
    storage = UndeletableStorage(tmp_path / "undeletable")
    task_id, key = await succeeded_with_file(store, storage, retention_seconds=60)
    rec = reconciler_for(store, storage, settings, metrics)
    assert delete_failures(metrics, "expire") == 0
    await trio.sleep(61)

    for _ in range(3):
        assert (await rec.reconcile_once())["expire"] == 0

    assert delete_failures(metrics, "expire") == 3
    assert (await store.get_task(task_id)).status == TaskStatus.SUCCEEDED
    assert await storage.size(key) is not None
    assert delete_failures(metrics, "lease_recover") == 0


async def test_orphan_and_partial_files_that_fail_to_delete_are_counted_by_duty(
    autojump_clock: Clock,
    store: ExportStore,
    settings: Settings,
    metrics: Metrics,
    tmp_path: Path,
) -> None:
    storage = UndeletableStorage(tmp_path / "undeletable")
    orphan = new_object_key(515151)
    await write_file(storage, orphan, b"o")
    os.utime(storage.path_for(orphan), (1_000_000_000.0, 1_000_000_000.0))
    running = await claim(store, await create(store), lease=10)
    partial = new_object_key(running.id)
    assert await store.record_object_key(running, "owner-a", partial)
    (await storage.create(partial)).close()
    os.utime(storage.path_for(partial), (2_000_000_000.0, 2_000_000_000.0))  # young: no orphan
    await trio.sleep(11)

    actions = await reconciler_for(store, storage, settings, metrics).reconcile_once()

    assert actions["lease_recover"] == 1 and actions["orphan_clean"] == 0
    assert delete_failures(metrics, "lease_recover") == 1
    assert delete_failures(metrics, "orphan_clean") == 1
    assert delete_failures(metrics, "expire") == 0
