"""A run's export file, from its name to its fate: the one place that names, records,
creates and deletes it.

The key is recorded on the task row before the first byte, so lease recovery can delete
the file of a run that died (design-rules §9.5, ``actors/supervised/reconciler.py``). The
file is created new, never over another's. Whether it is kept (a committed result) or
deleted is the settlement's decision (``actors/core/settlement.py``, ``FileFate``); the
executor carries it out here. In between, only the run's worker process writes to it,
through the descriptor it was handed (``actors/pipeline/worker_session.py``); a writer
that fails cuts its partial zip back at once (``XlsxStreamWriter.discard``) so no file of
up to max-bytes waits for the delete.

Files that no run holds any more (expired results, a retried task's leftover, orphans)
are deleted through the storage port by the reconciler and the retry use case.
"""

from __future__ import annotations

import logging
from typing import BinaryIO

from actors.core.errors import ExportAbortedError
from actors.core.models import Task
from actors.core.ports.storage import ExportStorage, RemoteUpload
from actors.core.ports.store import RunStore
from actors.pipeline.storage import new_object_key

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
        except Exception:
            log.warning("could not delete %s; the orphan scan will", self._key, exc_info=True)
