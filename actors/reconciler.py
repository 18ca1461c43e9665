"""The reconciler (§8.5, §15): the only re-dispatch path, every 30 s by default.

Each duty is an idempotent conditional update by DB time, safe to run on several
instances at once:

* ``redispatch``: case A (no outbox row for the current version → insert one) and case B
  (SENT too long while the task is PENDING → same row back to PENDING). Never a version
  bump, never limited by ``max_attempts``, never touching QUARANTINED rows, never inside a
  backoff window (the grace is counted from ``next_retry_at``).
* ``lease_recover``: expired RUNNING leases → new version + new outbox row, or FAILED when
  the attempts are spent. The dead run's partial file is deleted (§9.5).
* ``outbox_release``: CLAIMED rows whose publisher lease expired → PENDING.
* ``expire``: SUCCEEDED files past retention: delete first, mark EXPIRED after.
* ``orphan_clean``: files under ``exports/`` older than 24 h that no SUCCEEDED (or
  running) task references.
* pruning SENT outbox rows older than 7 days, ≤ 5000 per statement.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import trio

from actors.config import Settings
from actors.metrics import Metrics
from actors.pipeline.storage import OBJECT_KEY_PATTERN, ExportStorage
from db.store import ExportStore, RetryOutcome

log = logging.getLogger("actors.reconciler")

REDISPATCH_LIMIT_A = 50  # §8.5-1 case A
REDISPATCH_LIMIT_B = 20  # §8.5-1 case B
LEASE_RECOVER_LIMIT = 20  # §8.5-2
EXPIRE_LIMIT = 100
ORPHAN_AGE_SECONDS = 24 * 3600
OUTBOX_RETENTION_SECONDS = 7 * 86400
LEASE_LOST_MESSAGE = "executor lost (lease expired); retrying"
LEASE_EXHAUSTED_MESSAGE = "executor lost and max attempts reached"


class Reconciler:
    """Runs ``reconcile_once`` every ``FILE_EXPORT_RECONCILER_POLL_MS``.

    Args:
        file_clock: epoch seconds used only to age files for the orphan scan (file mtimes
            are filesystem times, not scheduling decisions; the DB is still asked whether a
            file is referenced before it is deleted).
    """

    def __init__(
        self,
        store: ExportStore,
        storage: ExportStorage,
        settings: Settings,
        metrics: Metrics,
        file_clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.storage = storage
        self.settings = settings
        self.metrics = metrics
        self.file_clock = file_clock

    async def run(self) -> None:
        interval = self.settings.reconciler_poll_ms / 1000
        while True:
            await self.reconcile_once()
            await trio.sleep(interval)

    async def reconcile_once(self) -> dict[str, int]:
        """One pass over every duty. Returns the count of actions per duty."""
        s = self.settings
        actions = {
            "redispatch": await self.store.redispatch_missing_outbox(
                s.redispatch_grace_seconds, REDISPATCH_LIMIT_A
            )
            + await self.store.redispatch_stale_sent(
                s.sent_stale_seconds, s.redispatch_grace_seconds, REDISPATCH_LIMIT_B
            ),
            "lease_recover": await self._recover_leases(),
            "outbox_release": await self.store.release_expired_outbox_claims(),
            "expire": await self._expire_files(),
            "orphan_clean": await self._clean_orphans(),
        }
        pruned = await self.store.prune_sent_outbox(OUTBOX_RETENTION_SECONDS)
        for action, count in actions.items():
            if count:
                self.metrics.reconciler_action.labels(action).inc(count)
                log.info("reconciler %s: %d", action, count)
        if pruned:
            log.info("reconciler pruned %d SENT outbox rows", pruned)
        await self._sample_gauges()
        return actions

    async def _recover_leases(self) -> int:
        recovered = 0
        for task in await self.store.expired_leases(LEASE_RECOVER_LIMIT):
            outcome = await self.store.recover_expired_lease(
                task, LEASE_LOST_MESSAGE, LEASE_EXHAUSTED_MESSAGE
            )
            if outcome == RetryOutcome.LOST:
                continue
            recovered += 1
            if outcome == RetryOutcome.FAILED:
                self.metrics.task_completed.labels(task.export_type, "FAILED").inc()
            log.warning(
                "task %s v%d lease expired (owner %s): %s",
                task.id,
                task.dispatch_version,
                task.lease_owner,
                "retrying as a new version"
                if outcome == RetryOutcome.SCHEDULED
                else "FAILED, max attempts reached",
            )
            if task.object_key:
                await self._delete_quietly(task.object_key)
        return recovered

    async def _expire_files(self) -> int:
        expired = 0
        for task_id, key in await self.store.expired_files(EXPIRE_LIMIT):
            try:
                if key:
                    await self.storage.delete(key)  # missing already counts as deleted
            except Exception:
                log.warning("could not delete expired file %s; will retry", key, exc_info=True)
                continue  # §15: stays SUCCEEDED until the delete works
            if await self.store.mark_expired(task_id):
                expired += 1
        return expired

    async def _clean_orphans(self) -> int:
        """Delete old unreferenced files; the same listing sets ``export_storage_bytes``."""
        cutoff = self.file_clock() - ORPHAN_AGE_SECONDS
        cleaned = 0
        kept_bytes = 0
        for obj in await self.storage.list_objects():
            kept_bytes += obj.size
            if obj.mtime > cutoff:
                continue
            match = OBJECT_KEY_PATTERN.match(obj.key)
            if match is None:
                continue
            if await self.store.file_is_referenced(int(match.group(1)), obj.key):
                continue
            if await self._delete_quietly(obj.key):
                cleaned += 1
                kept_bytes -= obj.size
        self.metrics.storage_bytes.set(kept_bytes)
        return cleaned

    async def _delete_quietly(self, key: str) -> bool:
        try:
            return await self.storage.delete(key)
        except Exception:
            log.warning("could not delete %s", key, exc_info=True)
            return False

    async def _sample_gauges(self) -> None:
        sample = await self.store.sample_queues()
        self.metrics.task_queue_age.set(sample.queue_age_seconds)
        self.metrics.outbox_pending.set(sample.outbox_pending)
        self.metrics.outbox_oldest_age.set(sample.outbox_oldest_age_seconds)
        self.metrics.outbox_max_attempt.set(sample.outbox_max_attempt)
