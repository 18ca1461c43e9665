"""Export file storage (§11.1) in a local directory: an adapter of the ``ExportStorage``
port (:mod:`actors.core.ports.storage`).

Keys follow the core's rule (:mod:`actors.core.object_keys`): a key that does not match
is refused before it touches the filesystem, so no caller can reach a path outside the
storage root.

Blocking file IO runs in worker threads (``trio.to_thread``) so the event loop keeps
renewing leases and serving HTTP.

Several actors — and several instances sharing one directory — create and delete files
and per-task folders concurrently: a listing tolerates entries that vanish while it walks,
and creating a file tolerates its folder being removed (empty) by another attempt's
delete between making the folder and opening the file.
"""

from __future__ import annotations

import errno
import os
import shutil
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO

import trio

from actors.core.errors import StorageUnavailableError
from actors.core.object_keys import (
    OBJECT_KEY_PATTERN,
    PROBE_PREFIX,
    is_probe_key,
    probe_key,
    validate_object_key,
    validate_stored_key,
)
from actors.core.ports.storage import StorageProbe, StoredObject
from actors.storage.offload import Offload

__all__ = ["LocalDirectoryStorage", "scan_exports"]

_CHUNK = 256 * 1024
#: Times ``create`` makes the task folder again after a concurrent delete removed it.
_CREATE_RACE_RETRIES = 5


class LocalDirectoryStorage:
    """``ExportStorage`` on a local (or shared, §11.1 option B) directory.

    Args:
        root: the storage directory (``FILE_EXPORT_STORAGE_DIR``); created if missing.
        offload: runs a blocking call off the event loop; ``trio.to_thread.run_sync`` by
            default. Mock-clock tests pass an inline runner, because trio's autojump clock
            jumps while a worker thread runs (trio issue 456).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        offload: Offload = trio.to_thread.run_sync,
    ) -> None:
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self._offload = offload

    def path_for(self, key: str, *, probe_ok: bool = False) -> Path:
        """The filesystem path of a validated key (a probe's too when ``probe_ok``)."""
        valid = validate_stored_key(key) if probe_ok else validate_object_key(key)
        path = (self.root / valid).resolve()
        if self.root not in path.parents:
            raise ValueError(f"object key escapes the storage root: {key!r}")
        return path

    async def create(self, key: str) -> BinaryIO:
        path = self.path_for(key)

        def _open() -> BinaryIO:
            for _ in range(_CREATE_RACE_RETRIES):
                path.parent.mkdir(parents=True, exist_ok=True)
                try:
                    return open(path, "xb")  # CREATE_NEW: never overwrite another's file
                except FileNotFoundError:
                    continue  # a delete removed the (empty) folder just now: make it again
            return open(path, "xb")

        try:
            return await self._offload(_open)
        except OSError as exc:
            raise _storage_error("create", key, exc) from exc

    async def size(self, key: str) -> int | None:
        path = self.path_for(key)
        try:
            return (await self._offload(path.stat)).st_size
        except FileNotFoundError:
            return None

    async def load(
        self, key: str, start: int = 0, length: int | None = None
    ) -> AsyncIterator[bytes]:
        path = self.path_for(key)

        def _open() -> BinaryIO:
            f = open(path, "rb")  # noqa: SIM115 - closed below, after the last chunk
            f.seek(start)
            return f

        f = await self._offload(_open)
        left = length
        try:
            while left is None or left > 0:
                chunk = await self._offload(f.read, _CHUNK if left is None else min(_CHUNK, left))
                if not chunk:
                    break
                if left is not None:
                    left -= len(chunk)
                yield chunk
        finally:
            f.close()

    async def delete(self, key: str) -> bool:
        path = self.path_for(key, probe_ok=True)  # the orphan scan removes a probe's leftover

        def _delete() -> bool:
            try:
                path.unlink()
            except FileNotFoundError:
                return False
            try:
                path.parent.rmdir()  # drop the per-task folder once it is empty
            except OSError:
                pass
            return True

        try:
            return await self._offload(_delete)
        except OSError as exc:
            raise _storage_error("delete", key, exc) from exc

    async def download_url(self, key: str, file_name: str, seconds: int) -> None:
        """None: a local file has no URL of its own; the service streams it."""
        self.path_for(key)
        return None

    async def list_objects(self) -> list[StoredObject]:
        """Every object under ``exports/``. A folder or file deleted while the listing
        walks is simply not listed (see the module docstring)."""
        return await self._offload(scan_exports, self.root)

    async def probe(self) -> StorageProbe:
        """Write, fsync, read back and delete a small file under ``.probe/`` (a name of
        this process's own, so instances sharing the directory never collide), and read the
        free space of the filesystem. Never raises (see the port)."""
        path = self.root / probe_key(os.getpid(), uuid.uuid4().hex)
        payload = uuid.uuid4().bytes

        def _probe() -> StorageProbe:
            free: int | None
            try:
                free = shutil.disk_usage(self.root).free
            except OSError:
                free = None
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "xb") as f:
                    f.write(payload)
                    f.flush()
                    os.fsync(f.fileno())
                if path.read_bytes() != payload:
                    return StorageProbe(False, free, "the probe file read back differently")
                return StorageProbe(True, free)
            except OSError as exc:
                reason = "disk full" if exc.errno == errno.ENOSPC else exc.strerror or str(exc)
                return StorageProbe(False, free, reason)
            finally:
                path.unlink(missing_ok=True)

        try:
            return await self._offload(_probe)
        except OSError as exc:  # the unlink of a probe file that could not be removed
            return StorageProbe(False, None, exc.strerror or str(exc))


def _entries(folder: str) -> list[os.DirEntry[str]]:
    """The entries of ``folder``; none if it vanished (or was never a folder)."""
    try:
        with os.scandir(folder) as it:
            return list(it)
    except (FileNotFoundError, NotADirectoryError):
        return []


def scan_exports(root: Path) -> list[StoredObject]:
    """List ``root/exports/{taskId}/{uuid}.xlsx`` files, then the probe files under
    ``root/.probe/`` (a killed probe's leftovers), blocking. Tolerates folders and files
    that disappear between being seen and being read (a concurrent delete)."""
    found: list[StoredObject] = []
    for entry in _entries(os.path.join(root, PROBE_PREFIX)):
        key = PROBE_PREFIX + entry.name
        if is_probe_key(key):
            try:
                found.append(StoredObject(key, entry.stat().st_size, entry.stat().st_mtime))
            except FileNotFoundError:
                continue
    for task_dir in _entries(os.path.join(root, "exports")):
        for entry in _entries(task_dir.path):
            key = f"exports/{task_dir.name}/{entry.name}"
            if not OBJECT_KEY_PATTERN.fullmatch(key):
                continue
            try:
                st = entry.stat()
            except FileNotFoundError:
                continue
            found.append(StoredObject(key, st.st_size, st.st_mtime))
    return found


def _storage_error(op: str, key: str, exc: OSError) -> Exception:
    # A full disk is not going to fix itself within one run, but it is an operational
    # condition, not a property of the export: retry with backoff (§9.1 "存储短暂不可用").
    reason = "disk full" if exc.errno == errno.ENOSPC else exc.strerror or str(exc)
    return StorageUnavailableError(f"storage {op} failed for {key}: {reason}")
