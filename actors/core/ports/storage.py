"""The export file storage's port (``actors/pipeline/storage.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import BinaryIO, Protocol


@dataclass(frozen=True, slots=True)
class StoredObject:
    """A stored file seen by a listing: key, size in bytes, modification time (epoch s)."""

    key: str
    size: int
    mtime: float


@dataclass(frozen=True, slots=True)
class StorageProbe:
    """One health probe of the storage (the ``export_storage_*`` gauges).

    Attributes:
        writable: a probe file could be written, read back and deleted.
        free_bytes: bytes available to this process where files are stored; ``None`` when
            the storage cannot tell.
        error: why it is not writable, for the log; ``None`` when it is.
    """

    writable: bool
    free_bytes: int | None
    error: str | None = None


class ExportStorage(Protocol):
    """Where export files live. Consumers, API and reconciler depend only on this.

    Keys are service-generated ``exports/{taskId}/{uuid}.xlsx`` (see
    ``actors.pipeline.storage``); an implementation refuses any other key.
    """

    async def create(self, key: str) -> BinaryIO:
        """Create the object for writing and return a seekable binary file (sync API, to
        be written from a worker thread). Fails if it exists.

        Raises:
            StorageUnavailableError: the storage cannot be written now.
        """
        ...

    async def size(self, key: str) -> int | None:
        """Size in bytes, or ``None`` if the object does not exist."""
        ...

    def load(self, key: str, start: int = 0, length: int | None = None) -> AsyncIterator[bytes]:
        """Stream the object's bytes: ``length`` bytes from byte ``start`` (0-based), to
        the end when ``length`` is ``None``. Raises FileNotFoundError if it does not exist."""
        ...

    async def delete(self, key: str) -> bool:
        """Delete the object; True if it existed. Deleting a missing object is not an error
        (a retried cleanup must be idempotent)."""
        ...

    async def list_objects(self) -> list[StoredObject]:
        """Every object under ``exports/`` (for the reconciler's orphan scan)."""
        ...

    async def probe(self) -> StorageProbe:
        """Whether a file can be written, read back and deleted now, and the free space.
        Never raises: a failure is the answer (``writable`` False, its reason given)."""
        ...
