"""The reconciler (§8.5, §15): the only re-send path, every 30 s by default.

Each duty is an idempotent conditional update by DB time, safe to run on several
instances at once:

* ``redispatch``: case A (no outbox row for the current version → insert one) and case B
  (SENT too long while the task is PENDING, and no slot saw it → same row back to
  PENDING, once). Never a version bump, never limited by ``max_attempts``, never touching
  QUARANTINED rows, never inside a backoff window (the grace is counted from
  ``next_retry_at``), never re-sending a command a slot acked without a claim (it is not
  lost: its task waits for a slot), nor one it sent again already
  (``actors.core.dispatch.command_state``).
* ``lease_recover``: expired RUNNING leases → new version + new outbox row, or FAILED when
  the attempts are spent. The dead run's partial file is deleted (§9.5).
* ``outbox_release``: CLAIMED rows whose publisher lease expired → PENDING.
* ``expire``: SUCCEEDED files past retention: delete first, mark EXPIRED after.
  A file that cannot be deleted (here, in orphan cleaning or after a lease recovery) is
  counted in ``export_file_delete_failures_total{duty}`` (alert ExportFileDeleteFailing).
* ``orphan_clean``: files under ``exports/`` older than 24 h that no SUCCEEDED (or
  running) task references.
* pruning SENT outbox rows older than 7 days, ≤ 5000 per statement.

Each duty runs on its own: one that fails — a database blip, a folder that another
instance deleted while it was being listed — is logged (a WARNING for a database fault,
a traceback for anything else), counted in ``export_reconciler_errors_total{duty}``, and
the other duties of the pass still run. The next pass tries it again.

A recovered lease gets the message of its real cause when this process's slot noted one
(``LocalClaims``: it could not write its outcome before the lease margin); otherwise the
lease expired without a word from its executor, and the message says so.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable

import trio

from actors.core.errors import StorageUnavailableError, TransientDatabaseError
from actors.core.events import retention_seconds
from actors.core.lease import is_predecessor_lease
from actors.core.log_context import bind_context, task_fields
from actors.core.models import Task
from actors.core.object_keys import task_id_of
from actors.core.orphans import ORPHAN_AGE_SECONDS, is_orphan
from actors.core.outcomes import RetryOutcome
from actors.core.ports.storage import ExportStorage
from actors.core.ports.store import ReconcilerStore
from actors.plumbing.config import Settings, pid_namespace
from actors.plumbing.metrics import Metrics
from actors.supervised.local_claims import LocalClaims

log = logging.getLogger(__name__)

REDISPATCH_LIMIT_A = 50  # §8.5-1 case A
REDISPATCH_LIMIT_B = 20  # §8.5-1 case B
LEASE_RECOVER_LIMIT = 20  # §8.5-2
EXPIRE_LIMIT = 100
OUTBOX_RETENTION_SECONDS = 7 * 86400
LEASE_LOST_MESSAGE = (
    "executor lost (its lease expired: the process stopped, or could not reach the "
    "database); retrying"
)
LEASE_EXHAUSTED_MESSAGE = (
    "executor lost (its lease expired: the process stopped, or could not reach the "
    "database) and max attempts reached"
)


def lease_recovery_messages(cause: str | None) -> tuple[str, str]:
    """The failure messages of a lease recovery: (retrying, attempts exhausted).

    Args:
        cause: why the run ended, as noted by its slot when it could not write the
            outcome itself; ``None`` when nothing is known.
    """
    if cause is None:
        return LEASE_LOST_MESSAGE, LEASE_EXHAUSTED_MESSAGE
    return f"{cause}; retrying", f"{cause}; max attempts reached"


#: Live leases examined at start-up for a dead predecessor's: one per consumer slot of
#: every instance, far fewer than this.
PREDECESSOR_SCAN_LIMIT = 1000


def pid_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists in this PID namespace (signal 0)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, as another user's process
    return True


async def expire_predecessor_leases(
    store: ReconcilerStore,
    settings: Settings,
    *,
    alive: Callable[[int], bool] = pid_alive,
) -> int:
    """At start-up, before this process claims anything: end now the leases of RUNNING
    tasks whose owner is gone (:func:`actors.core.lease.is_predecessor_lease`: this
    instance's own id, or a default id of this host whose process no longer exists), so
    lease recovery re-runs them at its next pass instead of after up to
    ``FILE_EXPORT_TASK_LEASE_SECONDS`` — a restart after a crash or kill -9 resumes the
    work at once. Each lease is ended by one fenced update (version and owner).

    Args:
        store: the reconciler's store.
        settings: ``instance_id``.
        alive: whether a PID of this namespace names a running process.

    Returns:
        The leases ended. A database fault is logged and skipped: the leases then
        expire as they would have.
    """
    host, pid, namespace = socket.gethostname(), os.getpid(), pid_namespace()
    ended = 0
    try:
        for task in await store.live_leases(PREDECESSOR_SCAN_LIMIT):
            if not is_predecessor_lease(
                task.lease_owner,
                instance_id=settings.instance_id,
                host=host,
                pid=pid,
                pid_namespace=namespace,
                alive=alive,
            ):
                continue
            if await store.expire_lease(task):
                ended += 1
                log.warning(
                    "task was running under a process that is gone: its lease ends now and "
                    "the reconciler runs it again",
                    extra=task_fields(task.id, task.dispatch_version, owner=task.lease_owner),
                )
    except TransientDatabaseError as exc:
        log.warning("could not look for a predecessor's leases (they expire as usual): %s", exc)
    return ended


class Reconciler:
    """Runs ``reconcile_once`` every ``FILE_EXPORT_RECONCILER_POLL_MS``.

    Args:
        file_clock: epoch seconds used only to age files for the orphan scan (file mtimes
            are filesystem times, not scheduling decisions; the DB is still asked whether a
            file is referenced before it is deleted).
        local: this process's ``LocalClaims``: causes noted by its slots, and the tasks
            they still hold (whose expired lease is left to them while they settle).
    """

    def __init__(
        self,
        store: ReconcilerStore,
        storage: ExportStorage,
        settings: Settings,
        metrics: Metrics,
        file_clock: Callable[[], float] = time.time,
        local: LocalClaims | None = None,
    ) -> None:
        self.store = store
        self.storage = storage
        self.settings = settings
        self.metrics = metrics
        self.file_clock = file_clock
        self.local = local

    async def run(self) -> None:
        interval = self.settings.reconciler_poll_ms / 1000
        while True:
            await self.reconcile_once()
            await trio.sleep(interval)

    async def reconcile_once(self) -> dict[str, int]:
        """One pass over every duty, each isolated from the others' failures.

        Returns:
            Actions per duty (``redispatch``, ``lease_recover``, ``outbox_release``,
            ``expire``, ``orphan_clean``); 0 for a duty that failed this pass.
        """
        actions = {
            "redispatch": await self._duty("redispatch", self._redispatch),
            "lease_recover": await self._duty("lease_recover", self._recover_leases),
            "outbox_release": await self._duty(
                "outbox_release", self.store.release_expired_outbox_claims
            ),
            "expire": await self._duty("expire", self._expire_files),
            "orphan_clean": await self._duty("orphan_clean", self._clean_orphans),
        }
        pruned = await self._duty(
            "prune", lambda: self.store.prune_sent_outbox(OUTBOX_RETENTION_SECONDS)
        )
        events = await self._duty(
            "prune_events",
            lambda: self.store.prune_task_events(
                retention_seconds(self.settings.event_retention_days)
            ),
        )
        for action, count in actions.items():
            if count:
                self.metrics.reconciler_action.labels(action).inc(count)
                log.info("reconciler %s: %d", action, count)
        if pruned:
            log.info("reconciler pruned %d SENT outbox rows", pruned)
        if events:
            log.info("reconciler pruned %d task history events", events)
        return actions

    async def _duty(self, name: str, duty: Callable[[], Awaitable[int | None]]) -> int:
        """Run one duty; a failure is logged and counted, never raised (see module)."""
        try:
            return await duty() or 0
        except TransientDatabaseError as exc:
            log.warning("reconciler %s skipped this pass: database fault: %s", name, exc)
        except StorageUnavailableError as exc:
            # The storage probe reports it too (health, export_storage_writable): the
            # message says what is wrong; a traceback every pass would say nothing more.
            log.warning("reconciler %s skipped this pass: %s", name, exc)
        except Exception:
            log.exception("reconciler %s failed this pass", name)
        self.metrics.reconciler_errors.labels(name).inc()
        return 0

    async def _redispatch(self) -> int:
        s = self.settings
        return await self.store.redispatch_missing_outbox(
            s.redispatch_grace_seconds, REDISPATCH_LIMIT_A
        ) + await self.store.redispatch_stale_sent(
            s.sent_stale_seconds, s.redispatch_grace_seconds, REDISPATCH_LIMIT_B
        )

    async def _recover_leases(self) -> int:
        recovered = 0
        for task in await self.store.expired_leases(LEASE_RECOVER_LIMIT):
            if self.local is not None and self.local.holds(task.id):
                continue  # its slot here is still settling; it gives up at the lease margin
            with bind_context(
                taskId=str(task.id),
                dispatchVersion=task.dispatch_version,
                exportType=task.export_type,
                tenantId=str(task.tenant_id),
                traceId=task.trace_id,
            ):
                recovered += await self._recover_lease(task)
        return recovered

    async def _recover_lease(self, task: Task) -> int:
        """Recover one expired lease (``1``), or ``0`` when it was renewed meanwhile."""
        cause = self.local.take_note(task.id, task.dispatch_version) if self.local else None
        retrying, exhausted = lease_recovery_messages(cause)
        outcome = await self.store.recover_expired_lease(task, retrying, exhausted)
        if outcome == RetryOutcome.LOST:
            return 0
        if outcome == RetryOutcome.FAILED:
            self.metrics.task_completed.labels(task.export_type, "FAILED").inc()
        log.warning(
            "lease expired",
            extra=task_fields(
                task.id,
                task.dispatch_version,
                owner=task.lease_owner,
                cause=cause or None,
                outcome="retrying as a new version"
                if outcome == RetryOutcome.SCHEDULED
                else "FAILED, max attempts reached",
            ),
        )
        if task.object_key:
            await self._delete_quietly(task.object_key, "lease_recover")
        return 1

    async def _expire_files(self) -> int:
        expired = 0
        for task_id, key in await self.store.expired_files(EXPIRE_LIMIT):
            try:
                if key:
                    await self.storage.delete(key)  # missing already counts as deleted
            except Exception as exc:
                self.metrics.file_delete_failures.labels("expire").inc()
                _delete_failed(f"could not delete expired file {key}; will retry", exc)
                continue  # §15: stays SUCCEEDED until the delete works
            if await self.store.mark_expired(task_id):
                expired += 1
        return expired

    async def _clean_orphans(self) -> int:
        """Delete what no run will finish or serve (``actors/core/orphans.py``): an
        incomplete upload no live lease holds at once (S3: a worker killed or cut off
        mid-upload), an unreferenced file after a day, a probe object a killed probe left;
        the same listing sets ``export_storage_bytes``."""
        now = self.file_clock()
        cleaned = 0
        kept_bytes = 0
        for obj in await self.storage.list_objects():
            kept_bytes += obj.size  # 0 for an incomplete upload (S3)
            task_id = task_id_of(obj.key)
            young = obj.complete and now - obj.mtime < ORPHAN_AGE_SECONDS
            hold = None if task_id is None or young else await self.store.file_hold(task_id)
            if not is_orphan(obj.key, obj.complete, now - obj.mtime, hold):
                continue
            if await self._delete_quietly(obj.key, "orphan_clean"):
                cleaned += 1
                kept_bytes -= obj.size
        self.metrics.storage_bytes.set(kept_bytes)
        return cleaned

    async def _delete_quietly(self, key: str, duty: str) -> bool:
        """Delete ``key``; a failure is logged and counted in
        ``export_file_delete_failures_total{duty}``, never raised (the orphan scan finds
        the file again at a later pass)."""
        try:
            return await self.storage.delete(key)
        except Exception as exc:
            self.metrics.file_delete_failures.labels(duty).inc()
            _delete_failed(f"could not delete {key}; a later pass will", exc)
            return False


def _delete_failed(message: str, exc: Exception) -> None:
    """Log a delete that failed: one line when the storage said why (it is down, a disk
    is full: expected, and retried), the traceback only for what nobody expected."""
    if isinstance(exc, StorageUnavailableError | OSError):
        log.warning("%s: %s", message, exc)
    else:
        log.warning(message, exc_info=exc)
