"""The export file storage's port and its values, implemented by the adapters of
``actors/storage/`` (a local directory, an S3 bucket).

One exception to "nothing above a port knows the implementation": an object store's file
is written by the export worker itself (:class:`RemoteUpload` names the object and
:class:`ObjectStoreConfig` the bucket), so the worker process imports the S3 part
uploader (``actors/pipeline/worker/session.py``); a new remote adapter needs a writer
there too."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import BinaryIO, Literal, Protocol


@dataclass(frozen=True, slots=True)
class StoredObject:
    """A stored file seen by a listing: key, size in bytes, modification time (epoch s).

    ``complete`` is False for an upload that was started and neither completed nor aborted
    (an S3 multipart upload; its size is 0, its time when it started): the reconciler
    aborts it like an orphan file once no task holds its key.
    """

    key: str
    size: int
    mtime: float
    complete: bool = True


@dataclass(frozen=True, slots=True)
class ObjectStoreConfig:
    """How to reach an S3-compatible bucket (``FILE_EXPORT_S3_*``, docs/operations.md).

    Attributes:
        bucket: the bucket; it must exist (the service never creates it).
        endpoint: ``https://host[:port]`` of the service; ``None`` for AWS S3 itself.
        region: the signing region (``us-east-1`` where the server does not care).
        access_key_id, secret_access_key: static credentials; ``None`` for the SDK's own
            chain (environment, instance role).
        addressing: ``path`` (``endpoint/bucket/key``: MinIO, Ceph, SeaweedFS, S3Proxy),
            ``virtual`` (``bucket.endpoint/key``: Aliyun OSS, AWS) or ``auto``.
        ca_bundle: a PEM file of CAs for a private endpoint's certificate; ``None``: the
            system's.
        part_size: bytes of one multipart part, at least 5 MiB (S3's minimum for every
            part but the last); a worker holds about two of them.
        public_endpoint: the address browsers reach the store by, for presigned download
            URLs, where it differs from ``endpoint`` (an internal name); ``None``: the same.
    """

    bucket: str
    endpoint: str | None = None
    region: str = "us-east-1"
    access_key_id: str | None = None
    secret_access_key: str | None = field(default=None, repr=False)
    addressing: Literal["path", "virtual", "auto"] = "path"
    ca_bundle: str | None = None
    part_size: int = 8 * 1024 * 1024
    public_endpoint: str | None = None


@dataclass(frozen=True, slots=True)
class RemoteUpload:
    """A run's file that the export worker uploads itself (S3 multipart) rather than
    writing a descriptor it was handed: the bucket and the object key."""

    config: ObjectStoreConfig
    key: str
    content_type: str


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
    ``actors.storage.local``); an implementation refuses any other key.
    """

    async def create(self, key: str) -> BinaryIO | RemoteUpload:
        """Create the object for writing. A local storage returns a seekable binary file
        (its descriptor goes to the export worker) and fails if it exists; an object store
        returns the :class:`RemoteUpload` the worker carries out (the key is new: a UUID).

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
        """Every object under ``exports/`` (for the reconciler's orphan scan), and the
        uploads under it that were started and not finished (``complete`` False)."""
        ...

    async def download_url(self, key: str, file_name: str, seconds: int) -> str | None:
        """A URL a browser can fetch the object from for ``seconds``, naming the file
        ``file_name`` (``response-content-disposition``); ``None`` where the storage has
        no such URL (a local directory: the service streams the file)."""
        ...

    async def probe(self) -> StorageProbe:
        """Whether a file can be written, read back and deleted now, and the free space.
        Never raises: a failure is the answer (``writable`` False, its reason given)."""
        ...
