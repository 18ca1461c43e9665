"""Local storage under concurrent deletes (issue 13 item 5): the reconciler's orphan scan
lists folders that the same or another instance is deleting, and an attempt creates its
file in a per-task folder that another attempt's cleanup may remove at that moment."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from actors.pipeline import storage as storage_module
from actors.pipeline.storage import LocalDirectoryStorage, new_object_key
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
