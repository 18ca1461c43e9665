"""The export body (``actors.pipeline.runner.ExportRunner``) on its own, without a slot.

Real parts: the SQLite store, the local storage, the export worker process, the Provider
client; only the Provider is fake (a real HTTP server, ``tests/provider_server.py``,
answering each batch request the worker process sends, in this test's loop). Each test
checks what the runner promises its consumer slot: progress written after each batch, the
object key recorded before the file is written, the file closed and the result's fields
true to the file, errors propagated with the partial file left at ``ctx.file.key`` for
the slot to delete.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import httpx
import openpyxl
import pytest

from actors.core.definitions import Registry
from actors.core.errors import (
    ExportAbortedError,
    LimitExceededError,
    PermanentExportError,
    ProviderContractError,
    ProviderUnavailableError,
)
from actors.core.models import Task
from actors.core.object_keys import XLSX_CONTENT_TYPE
from actors.core.text import content_disposition
from actors.pipeline.attempt import RunContext, RunFile
from actors.pipeline.runner import download_file_name
from actors.plumbing.config import Settings
from actors.storage.local import LocalDirectoryStorage
from db.store import ExportStore
from tests.actors.pipeline.runner_helpers import DEFINITION, ROWS_PER_BATCH, ok, run
from tests.helpers import claim, create

#: the runner starts a real worker process and waits on its pipes: real clock, SQLite
on_sqlite = pytest.mark.parametrize("store", ["sqlite"], indirect=True)

COLUMNS = [
    {"key": "id", "title": "ID", "type": "INTEGER"},
    {"key": "name", "title": "Name", "type": "STRING"},
]


def batch(n: int, batches: int, name: Callable[[int], str] = lambda i: f"row {i}") -> dict:
    """Batch ``n`` (0-based) of ``batches``: rows ``n*50 .. n*50+49``, columns on the first."""
    rows = [{"id": i, "name": name(i)} for i in range(n * ROWS_PER_BATCH, (n + 1) * ROWS_PER_BATCH)]
    return {
        "schemaVersion": 1,
        "schemaHash": "sha256:runner",
        "snapshotToken": "snap",
        "columns": COLUMNS if n == 0 else None,
        "rows": rows,
        "nextCursor": str(n + 1),
        "hasMore": n + 1 < batches,
        "totalRows": batches * ROWS_PER_BATCH,
    }


def run_context(
    task: Task, owner: str, store: ExportStore, storage: LocalDirectoryStorage
) -> RunContext:
    return RunContext(task, owner, RunFile(task, owner, store, storage))


async def claimed(
    store: ExportStore, storage: LocalDirectoryStorage, settings: Settings
) -> RunContext:
    task = await claim(store, await create(store), settings.instance_id)
    return run_context(task, settings.instance_id, store, storage)


def open_in_this_process(path: Path) -> bool:
    """Whether any file descriptor of this process refers to ``path``."""
    fds = Path("/proc/self/fd")
    targets = set()
    for fd in fds.iterdir():
        try:
            targets.add(os.readlink(fd))
        except OSError:  # the descriptor of the listing itself, closed by now
            continue
    return str(path) in targets


@on_sqlite
async def test_a_run_writes_every_batch_reports_progress_and_returns_the_file(
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
) -> None:
    """Six batches of 50 rows, progress written at every batch boundary (no interval).
    When the Provider is asked for a batch, the task row already names the file (recorded
    before the first byte) and the file exists; the progress it shows is the rows the
    worker has confirmed written, whole batches: batch n is requested after the answer to
    n-1 was reported, which counts the batches written by then — n-2 exactly (the worker
    writes batch n-1 while n's request is out). The result describes the file on disk,
    which holds every row, and the runner has closed it."""
    settings = settings.model_copy(update={"progress_write_seconds": 0.0})
    batches = 6
    ctx = await claimed(store, storage, settings)
    seen: list[tuple[int, str | None, bool]] = []

    async def answer(n: int) -> httpx.Response:
        row = await store.get_task(ctx.task.id)
        key = row.object_key
        seen.append((row.processed_rows, key, key is not None and storage.path_for(key).exists()))
        return ok(batch(n, batches))

    before = datetime.now().replace(microsecond=0)
    result = await run(store, settings, answer, ctx)

    key = result.object_key
    assert [s[1:] for s in seen] == [(key, True)] * batches
    assert [s[0] for s in seen] == [max(0, n - 2) * ROWS_PER_BATCH for n in range(1, 7)]
    total = batches * ROWS_PER_BATCH
    after = await store.get_task(ctx.task.id)
    assert (after.processed_rows, after.total_rows, after.object_key) == (total, total, key)
    assert ctx.file.key == key and ctx.worker_pid is not None

    path = storage.path_for(key)
    assert not open_in_this_process(path)
    assert (result.rows, result.total_rows) == (total, total)
    assert result.size_bytes == path.stat().st_size == await storage.size(key)
    assert result.content_type == XLSX_CONTENT_TYPE
    match = re.fullmatch(r"Customers_(\d{8}_\d{6})\.xlsx", result.file_name)
    assert match, result.file_name
    assert before <= datetime.strptime(match.group(1), "%Y%m%d_%H%M%S") <= datetime.now()
    book = openpyxl.load_workbook(path, read_only=True)
    values = list(book.active.values)
    book.close()
    assert values[0] == ("ID", "Name")
    assert values[1:] == [(i, f"row {i}") for i in range(total)]


@on_sqlite
async def test_progress_is_written_at_most_once_per_interval_and_at_the_end(
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
) -> None:
    """Display-only progress is not a commit per batch: after the first write (at the
    third request, the first with a batch confirmed written) the next is due only after
    FILE_EXPORT_PROGRESS_WRITE_SECONDS — here longer than the run — so the row keeps that
    figure until the run's final write, which is always made."""
    settings = settings.model_copy(update={"progress_write_seconds": 60.0})
    batches = 6
    ctx = await claimed(store, storage, settings)
    seen: list[int] = []

    async def answer(n: int) -> httpx.Response:
        seen.append((await store.get_task(ctx.task.id)).processed_rows)
        return ok(batch(n, batches))

    result = await run(store, settings, answer, ctx)

    assert seen == [0, 0] + [ROWS_PER_BATCH] * 4
    after = await store.get_task(ctx.task.id)
    assert after.processed_rows == result.rows == batches * ROWS_PER_BATCH


@on_sqlite
async def test_fewer_rows_than_announced_keep_the_announced_total(
    store: ExportStore, storage: LocalDirectoryStorage, settings: Settings
) -> None:
    """The Provider announces 1,000 rows and sends 100: the result counts the rows written
    and keeps the announced total (the shortfall is a data warning, not an error)."""
    ctx = await claimed(store, storage, settings)

    async def answer(n: int) -> httpx.Response:
        return ok({**batch(n, 2), "totalRows": 1000})

    result = await run(store, settings, answer, ctx)
    assert (result.rows, result.total_rows) == (100, 1000)


@on_sqlite
async def test_data_warnings_are_logged_once_per_run(
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Three batches, each with one cell over the XLSX limit of 32,767 characters: the
    run succeeds with the cells truncated and logs one summary line, not one per cell."""
    ctx = await claimed(store, storage, settings)

    async def answer(n: int) -> httpx.Response:
        return ok(batch(n, 3, name=lambda i: "x" * 40_000 if i % 50 == 0 else f"row {i}"))

    with caplog.at_level(logging.WARNING, logger="actors.pipeline.runner"):
        result = await run(store, settings, answer, ctx)
    assert result.rows == 150
    [line] = [r for r in caplog.records if r.getMessage() == "provider data warnings"]
    assert (line.taskId, line.dispatchVersion) == (str(ctx.task.id), 1)  # type: ignore[attr-defined]
    assert (line.rows, line.batches) == (150, 3)  # type: ignore[attr-defined]
    assert line.warnings and all(isinstance(w, str) for w in line.warnings)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("response", "error", "message"),
    [
        (httpx.Response(503, text="busy"), ProviderUnavailableError, "503"),
        (
            httpx.Response(200, json={"code": "500", "message": "boom", "data": None}),
            ProviderContractError,
            "boom",
        ),
    ],
    ids=["transient", "permanent"],
)
@on_sqlite
async def test_a_provider_error_propagates_and_leaves_the_partial_file_for_the_slot(
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    response: httpx.Response,
    error: type[Exception],
    message: str,
) -> None:
    """The Provider fails on the third batch: its error reaches the caller unchanged (the
    slot settles by its class), the worker is gone, the file is closed and left in place
    at ``ctx.file.key`` (the slot deletes it by that key), and the task row still names
    it."""
    ctx = await claimed(store, storage, settings)

    async def answer(n: int) -> httpx.Response:
        return response if n == 2 else ok(batch(n, 5))

    with pytest.raises(error, match=message):
        await run(store, settings, answer, ctx)
    assert ctx.file.key is not None
    path = storage.path_for(ctx.file.key)
    assert path.exists() and not open_in_this_process(path)
    assert ctx.worker_pid is not None and not Path(f"/proc/{ctx.worker_pid}").exists()
    assert (await store.get_task(ctx.task.id)).object_key == ctx.file.key
    assert [o.key for o in await storage.list_objects()] == [ctx.file.key]


@on_sqlite
async def test_a_failed_write_outranks_a_later_batchs_failed_check(
    store: ExportStore, storage: LocalDirectoryStorage, settings: Settings
) -> None:
    """Write-behind: batch 1's write hits max-rows after the worker answered it, and
    batch 2 breaks a rule this process checks (a cursor that does not advance). The run
    fails with the earlier failure — permanent max-rows, not a transient cursor error that
    would be retried: the worker writes batch 1 before it reads batch 2's answer and
    reports the failed write instead."""
    ctx = await claimed(store, storage, settings)
    slow = "&" * 20_000  # escaped character by character: batch 1 takes a while to write

    async def answer(n: int) -> httpx.Response:
        data = batch(n, 5, name=lambda i: slow)
        data["totalRows"] = None
        if n == 1:
            data["nextCursor"] = ""
        return ok(data)

    registry = Registry({"CUSTOMER_LIST": replace(DEFINITION, max_rows=40)})
    with pytest.raises(LimitExceededError, match="max-rows 40"):
        await run(store, settings, answer, ctx, registry)


@on_sqlite
async def test_a_lost_lease_stops_the_run_before_any_file_exists(
    store: ExportStore, storage: LocalDirectoryStorage, settings: Settings
) -> None:
    """Recording the object key is fenced by the lease owner: another owner's attempt is
    aborted before a file is created or the Provider is asked."""
    task = await create(store)
    await claim(store, task, "other-instance")
    ctx = run_context(await store.get_task(task.id), settings.instance_id, store, storage)

    async def answer(n: int) -> httpx.Response:
        raise AssertionError("the Provider must not be asked")

    with pytest.raises(ExportAbortedError, match="lease lost before writing"):
        await run(store, settings, answer, ctx)
    assert ctx.file.key is None and await storage.list_objects() == []
    assert (await store.get_task(task.id)).object_key is None


@on_sqlite
async def test_an_export_type_no_longer_registered_fails_permanently_before_writing(
    store: ExportStore, storage: LocalDirectoryStorage, settings: Settings
) -> None:
    """The registry is read at execution time: a type removed since the task was created
    fails it for good, with nothing recorded and no file."""
    ctx = await claimed(store, storage, settings)

    async def answer(n: int) -> httpx.Response:
        raise AssertionError("the Provider must not be asked")

    with pytest.raises(PermanentExportError, match="CUSTOMER_LIST is no longer registered"):
        await run(store, settings, answer, ctx, registry=Registry({}))
    assert await storage.list_objects() == []
    assert (await store.get_task(ctx.task.id)).object_key is None


@pytest.mark.parametrize(
    ("task_name", "expected"),
    [
        ("Customers", "Customers_20270115_080000.xlsx"),
        ("客户列表", "客户列表_20270115_080000.xlsx"),
        ("a/b:c*d", "a_b_c_d_20270115_080000.xlsx"),
        ("..hidden. ", "hidden_20270115_080000.xlsx"),
        ("", "export_20270115_080000.xlsx"),
        ("///", "export_20270115_080000.xlsx"),
        ("n" * 150, "n" * 100 + "_20270115_080000.xlsx"),
        ("../../etc/passwd", "etc_passwd_20270115_080000.xlsx"),
        ("_. _.x", "x_20270115_080000.xlsx"),
    ],
)
def test_download_file_name(task_name: str, expected: str) -> None:
    """The task name made safe (unsafe characters become ``_``), at most 100 characters,
    ``export`` when nothing is left, then the instance's local time. The download's
    ``Content-Disposition`` names the same file (its cleaning changes nothing more)."""
    name = download_file_name(task_name, datetime(2027, 1, 15, 8, 0, 0))
    assert name == expected
    assert f'filename="{name}"' in content_disposition(name) or not name.isascii()
