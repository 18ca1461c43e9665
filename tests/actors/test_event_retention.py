"""The reconciler prunes task history older than FILE_EXPORT_EVENT_RETENTION_DAYS."""

from __future__ import annotations

import trio
import trio.testing

from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.storage.local import LocalDirectoryStorage
from actors.supervised.reconciler import Reconciler
from db.store import ExportStore
from tests.helpers import create


async def test_the_reconciler_prunes_old_history(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    assert settings.event_retention_days == 30  # the default
    old = await create(store)
    await trio.sleep(31 * 86400)
    new = await create(store, user_id=8)
    await Reconciler(store, storage, settings, metrics).reconcile_once()
    assert await store.list_task_events(old.id) == []
    assert [e.kind.value for e in await store.list_task_events(new.id)] == ["created"]
