"""One execution attempt: its context (:class:`RunContext`) and its file (:class:`RunFile`),
shared by the executor (``actors/supervised/execution.py``), its lease keeper and the
export runner.

``RunContext`` carries the claimed task, its export file and the abort machinery: a trio
cancel scope for the run; cancelling it kills the run's export worker process.

``RunFile`` is the run's export file, from its name to its fate: the one place that
names, records, creates and deletes it.

The key is recorded on the task row before the first byte, so lease recovery can delete
the file of a run that died (design-rules §9.5, ``actors/supervised/reconciler.py``). The
file is created new, never over another's. Whether it is kept (a committed result) or
deleted is the settlement's decision (``actors/core/settlement.py``, ``FileFate``); the
executor carries it out here. In between, only the run's worker process writes to it,
through the descriptor it was handed (``actors/pipeline/worker/session.py``); a writer
that fails cuts its partial zip back at once (``XlsxStreamWriter.discard``) so no file of
up to max-bytes waits for the delete.

Files that no run holds any more (expired results, a retried task's leftover, orphans)
are deleted through the storage port by the reconciler and the retry use case.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import BinaryIO

import trio

from actors.core.errors import ExportAbortedError, StorageUnavailableError
from actors.core.models import Task
from actors.core.outcomes import AbortReason
from actors.core.ports.storage import ExportStorage, RemoteUpload
from actors.core.ports.store import RunStore
from actors.storage.keys import new_object_key

__all__ = ["RunContext", "RunFile"]

log = logging.getLogger(__name__)


class RunFile:
    """The export file of one execution attempt.

    Args:
        task: the claimed task (its id names the file; its version fences the record).
        owner: this instance's ``lease_owner``.
        store: records the key on the task row, fenced by owner and version.
        storage: where the file lives.
    """

    def __init__(self, task: Task, owner: str, store: RunStore, storage: ExportStorage) -> None:
        self._task = task
        self._owner = owner
        self._store = store
        self._storage = storage
        self._key: str | None = None

    @property
    def key(self) -> str | None:
        """The object key once :meth:`create` recorded it (``exports/{taskId}/{uuid}.xlsx``),
        else ``None``."""
        return self._key

    async def create(self) -> BinaryIO | RemoteUpload:
        """Name the file, record its key on the task, then create it for writing.

        Returns:
            The new file, open for binary writing (the caller closes it), or the upload
            the export worker carries out (an object store).

        Raises:
            ExportAbortedError: the lease was lost before writing (nothing recorded or
                created).
            RuntimeError: called twice for one attempt.
            StorageError: the file could not be created (its key stays recorded: lease
                recovery or :meth:`discard` deletes whatever exists).
            DatabaseError: the key could not be recorded.
        """
        if self._key is not None:
            raise RuntimeError("the run's file was created already")
        key = new_object_key(self._task.id)
        if not await self._store.record_object_key(self._task, self._owner, key):
            raise ExportAbortedError("export aborted: lease lost before writing")
        self._key = key
        return await self._storage.create(key)

    async def discard(self) -> None:
        """Delete the file, if one was named; what the settlement asks of a run whose
        result is not kept. Best effort: a failed delete is a WARNING and the orphan scan
        removes the file later (§9.5). Raises nothing but cancellation."""
        if self._key is None:
            return
        try:
            await self._storage.delete(self._key)
        except (StorageUnavailableError, OSError) as exc:  # expected while a store is down
            log.warning("could not delete %s; the orphan scan will: %s", self._key, exc)
        except Exception:
            log.warning("could not delete %s; the orphan scan will", self._key, exc_info=True)


@dataclass
class RunContext:
    """One execution attempt: the claimed task, its file, and its abort machinery.

    ``abort`` records the first reason and cancels ``scope`` (the run's worker process
    dies with it). ``file`` is the attempt's export file: the pipeline creates it, the
    executor keeps or deletes it as the settlement says (§9.5).
    """

    task: Task
    owner: str
    file: RunFile
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    abort_reason: AbortReason | None = None
    #: Process id of the run's export worker while it runs (tests and diagnostics).
    worker_pid: int | None = None
    #: ``trio.current_time()`` of the claim or of the last lease renewal that landed:
    #: the watchdog and the settle step count the lease margin from it.
    lease_renewed_at: float = 0.0
    #: Set to make the watchdog renew now instead of at its next heartbeat (a cancel of
    #: the task, ``actors.supervised.local_claims.LocalClaims.cancelled``); the watchdog clears it.
    renew_now: trio.Event = field(default_factory=trio.Event)
    #: The run was woken because its task was cancelled: a renewal that then matches 0
    #: rows aborts it as ``AbortReason.CANCELLED``.
    cancel_requested: bool = False

    def wake_for_cancel(self) -> None:
        """The task was cancelled: let the watchdog check the lease now."""
        self.cancel_requested = True
        self.renew_now.set()

    def abort(self, reason: AbortReason) -> None:
        if self.abort_reason is None:
            self.abort_reason = reason
        self.scope.cancel()
