"""Local storage (``actors.storage.local.LocalDirectoryStorage``): what it promises.

Create, size, load, delete and list on a real directory; only service-generated keys
reach the filesystem, and none that leads outside the root; a file is never overwritten;
OS errors become ``StorageUnavailableError`` naming the operation, the key and the
reason (a full disk as "disk full"). Files become visible under their final name at
create (there is no write-then-rename step; a partial file is deleted by its key).

And under concurrent deletes (issue 13 item 5): the reconciler's orphan scan lists
folders that the same or another instance is deleting, and an attempt creates its file
in a per-task folder that another attempt's cleanup may remove at that moment."""

from __future__ import annotations

import builtins
import errno
import os
import shutil
from pathlib import Path

import pytest

from actors.core.errors import StorageUnavailableError, TransientExportError
from actors.core.object_keys import validate_object_key
from actors.storage import local as storage_module
from actors.storage.keys import new_object_key
from actors.storage.local import LocalDirectoryStorage
from tests.helpers import run_inline


async def stored(storage: LocalDirectoryStorage, task_id: int) -> str:
    key = new_object_key(task_id)
    f = await storage.create(key)
    f.write(b"x" * task_id)
    f.close()
    return key


async def test_listing_skips_folders_and_files_that_vanish_while_it_walks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three task folders. While the listing walks, the folder of task 2 is deleted just
    before it is opened, and the file of task 3 just before it is stat'ed (as a
    concurrent expiry or orphan delete would): the listing returns task 1 and does not
    raise FileNotFoundError."""
    storage = LocalDirectoryStorage(tmp_path, offload=run_inline)
    keys = {task: await stored(storage, task) for task in (1, 2, 3)}
    real_scandir = os.scandir

    def racing_scandir(path: str | os.PathLike[str] | int) -> object:
        if isinstance(path, int):  # shutil.rmtree's own walk, by file descriptor
            return real_scandir(path)
        name = os.path.basename(os.fspath(path))
        if name == "2":
            shutil.rmtree(path)  # the whole folder went between listing and opening it
        it = real_scandir(path)
        if name == "3":
            os.unlink(tmp_path / keys[3])  # listed, then deleted before its stat
        return it

    monkeypatch.setattr(os, "scandir", racing_scandir)
    objects = await storage.list_objects()
    assert [(o.key, o.size) for o in objects] == [(keys[1], 1)]


async def test_listing_of_a_storage_without_exports_is_empty(tmp_path: Path) -> None:
    assert await LocalDirectoryStorage(tmp_path, offload=run_inline).list_objects() == []


async def test_create_survives_its_folder_being_removed_between_mkdir_and_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another attempt of the same task deletes its own file and removes the (then
    empty) per-task folder right after this attempt made it: the create makes the
    folder again instead of failing the export with a storage error."""
    storage = LocalDirectoryStorage(tmp_path, offload=run_inline)
    key = new_object_key(7)
    real_mkdir = Path.mkdir
    raced: list[Path] = []

    def mkdir_then_raced(self: Path, *args: object, **kwargs: object) -> None:
        real_mkdir(self, *args, **kwargs)  # type: ignore[arg-type]
        if self.name == "7" and not raced:
            raced.append(self)
            self.rmdir()  # the concurrent cleanup's rmdir of the empty folder

    monkeypatch.setattr(Path, "mkdir", mkdir_then_raced)
    f = await storage.create(key)
    f.write(b"ok")
    f.close()
    assert raced and await storage.size(key) == 2


def test_listing_is_a_plain_function_of_the_root(tmp_path: Path) -> None:
    """The scan takes no storage object (so a worker thread can run it) and ignores
    names that are not service-generated keys."""
    (tmp_path / "exports" / "12").mkdir(parents=True)
    (tmp_path / "exports" / "12" / "notes.txt").write_text("not an export")
    (tmp_path / "exports" / "stray-file").write_text("")
    assert storage_module.scan_exports(tmp_path) == []


# --- the basic operations --------------------------------------------------------------


async def read_back(storage: LocalDirectoryStorage, key: str) -> bytes:
    return b"".join([chunk async for chunk in storage.load(key)])


async def test_create_size_load_list_delete_round_trip(tmp_path: Path) -> None:
    """A file written through ``create`` is listed with its size, read back whole in
    chunks (larger than one read), and gone after ``delete``, its per-task folder with it;
    a second delete reports that nothing was there."""
    storage = LocalDirectoryStorage(tmp_path / "root", offload=run_inline)
    key = new_object_key(42)
    data = os.urandom(600 * 1024)  # over two 256 KiB reads
    f = await storage.create(key)
    f.write(data)
    f.close()
    assert storage.path_for(key) == (tmp_path / "root" / key).resolve()
    assert await storage.size(key) == len(data)
    assert await read_back(storage, key) == data
    [listed] = await storage.list_objects()
    assert (listed.key, listed.size) == (key, len(data)) and listed.mtime > 0
    assert await storage.delete(key) is True
    assert await storage.size(key) is None and await storage.list_objects() == []
    assert not (tmp_path / "root" / "exports" / "42").exists()
    assert await storage.delete(key) is False


async def test_the_task_folder_stays_while_another_attempt_has_a_file_in_it(
    tmp_path: Path,
) -> None:
    storage = LocalDirectoryStorage(tmp_path, offload=run_inline)
    first, second = await stored(storage, 9), await stored(storage, 9)
    assert await storage.delete(first)
    assert [o.key for o in await storage.list_objects()] == [second]
    assert await storage.size(second) == 9


async def test_the_root_is_created_when_missing(tmp_path: Path) -> None:
    root = tmp_path / "a" / "b"
    LocalDirectoryStorage(root, offload=run_inline)
    assert root.is_dir()


async def test_create_never_overwrites_an_existing_file(tmp_path: Path) -> None:
    """Each attempt has a key of its own; a clash (a reused key) must not destroy the
    file already there: the create fails as a storage error and the content stays."""
    storage = LocalDirectoryStorage(tmp_path, offload=run_inline)
    key = await stored(storage, 3)
    with pytest.raises(StorageUnavailableError, match=f"storage create failed for {key}"):
        await storage.create(key)
    assert await read_back(storage, key) == b"xxx"


async def test_the_default_offload_runs_in_a_worker_thread(tmp_path: Path) -> None:
    """Without ``offload`` the blocking calls go to ``trio.to_thread`` (real clock here)."""
    storage = LocalDirectoryStorage(tmp_path)
    key = await stored(storage, 5)
    assert await storage.size(key) == 5 and await read_back(storage, key) == b"xxxxx"
    assert await storage.delete(key)


# --- keys --------------------------------------------------------------------------------

HEX = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize(
    "key",
    [
        "../escape.xlsx",
        f"exports/1/../../{HEX}.xlsx",
        f"exports/../../1/{HEX}.xlsx",
        f"/etc/{HEX}.xlsx",
        f"/exports/1/{HEX}.xlsx",
        f"exports/1/{HEX}.xlsx/../x",
        f"exports/1/{HEX.upper()}.xlsx",
        f"exports/x/{HEX}.xlsx",
        f"exports/1/{HEX}.csv",
        f"exports/1/{HEX}.xlsx\n",  # a final newline ("$" with match() took it)
        f"exports/1//{HEX}.xlsx",
        f"exports/1/sub/{HEX}.xlsx",
        "",
    ],
)
async def test_a_key_that_is_not_service_generated_never_reaches_the_filesystem(
    tmp_path: Path, key: str
) -> None:
    """Every operation refuses it with ``ValueError`` before any IO."""
    storage = LocalDirectoryStorage(tmp_path / "root", offload=run_inline)
    with pytest.raises(ValueError, match="invalid object key"):
        validate_object_key(key)
    for call in (storage.create, storage.size, storage.delete):
        with pytest.raises(ValueError):
            await call(key)
    with pytest.raises(ValueError):
        await read_back(storage, key)
    assert list(tmp_path.rglob("*")) == [tmp_path / "root"]


async def test_a_key_that_resolves_outside_the_root_is_refused(tmp_path: Path) -> None:
    """A valid-looking key whose task folder is a symbolic link out of the root (planted
    on a shared directory) is refused, and nothing is written where the link points."""
    outside = tmp_path / "outside"
    outside.mkdir()
    storage = LocalDirectoryStorage(tmp_path / "root", offload=run_inline)
    (tmp_path / "root" / "exports").mkdir()
    (tmp_path / "root" / "exports" / "13").symlink_to(outside)
    key = new_object_key(13)
    with pytest.raises(ValueError, match="escapes the storage root"):
        await storage.create(key)
    with pytest.raises(ValueError, match="escapes the storage root"):
        await storage.delete(key)
    assert list(outside.iterdir()) == []


# --- OS errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (errno.ENOSPC, "disk full"),
        (errno.EACCES, os.strerror(errno.EACCES)),
        (errno.EROFS, os.strerror(errno.EROFS)),
        (errno.EDQUOT, os.strerror(errno.EDQUOT)),
    ],
)
async def test_create_errors_become_transient_storage_errors_naming_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, reason: str
) -> None:
    """The export is retried with backoff (a storage outage is not a property of the
    export); the message names the operation, the key and the reason. (The tests run as
    root, which permissions do not stop, so the OS error is injected at ``open``.)"""
    storage = LocalDirectoryStorage(tmp_path, offload=run_inline)
    key = new_object_key(8)

    def failing_open(path: object, mode: str = "r", *args: object, **kwargs: object) -> object:
        if mode == "xb":
            raise OSError(code, os.strerror(code), str(path))
        return builtins.open(path, mode, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(storage_module, "open", failing_open, raising=False)
    with pytest.raises(StorageUnavailableError) as caught:
        await storage.create(key)
    assert isinstance(caught.value, TransientExportError)
    assert str(caught.value) == f"storage create failed for {key}: {reason}"


async def test_a_delete_error_becomes_a_storage_error_and_the_file_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = LocalDirectoryStorage(tmp_path, offload=run_inline)
    key = await stored(storage, 4)
    real_unlink = Path.unlink

    def refused_unlink(self: Path, missing_ok: bool = False) -> None:
        if self.suffix == ".xlsx":
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM), str(self))
        real_unlink(self, missing_ok)

    monkeypatch.setattr(Path, "unlink", refused_unlink)
    with pytest.raises(
        StorageUnavailableError,
        match=f"storage delete failed for {key}: {os.strerror(errno.EPERM)}",
    ):
        await storage.delete(key)
    monkeypatch.undo()
    assert await storage.size(key) == 4
