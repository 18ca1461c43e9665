"""Export runs that store their file in an S3 bucket: the real export worker process
uploads the XLSX in parts while it writes it, to the real S3-compatible server of the
test command (S3Proxy), from a real Provider HTTP server.

What must hold: every row arrives, in a file whose size the result and the bucket agree
on, with no local copy; a run that fails or goes past the size limit leaves neither an
object nor an incomplete upload once the slot discards its file (by key, as it does).
"""

from __future__ import annotations

import io
import random
import string
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import httpx
import openpyxl
import pytest
import trio

from actors.core.definitions import Registry
from actors.core.errors import LimitExceededError, ProviderUnavailableError
from actors.pipeline.attempt import RunContext, RunFile
from actors.plumbing.config import Settings
from actors.storage.s3 import S3Storage
from db.store import ExportStore
from tests.actors.pipeline.runner_helpers import DEFINITION, ok, run
from tests.helpers import claim, create
from tests.s3_helpers import (
    drop_bucket,
    incomplete_uploads,
    new_bucket,
    object_keys,
    s3_config,
)

on_sqlite = pytest.mark.parametrize("store", ["sqlite"], indirect=True)
ROWS = 400  # per batch
#: 3,000 random letters a row (~2.3 KB compressed): 14 batches make three 5 MiB parts
TEXT = 3000
COLUMNS = [
    {"key": "id", "title": "ID", "type": "INTEGER"},
    {"key": "name", "title": "Name", "type": "STRING"},
]
BIG = replace(DEFINITION, batch_size=ROWS)


def text(i: int) -> str:
    rnd = random.Random(i)
    return "".join(rnd.choices(string.ascii_letters + string.digits, k=TEXT))


def batch(n: int, batches: int) -> dict[str, Any]:
    ids = range(n * ROWS, (n + 1) * ROWS)
    return {
        "schemaVersion": 1,
        "schemaHash": "sha256:s3",
        "snapshotToken": "snap",
        "columns": COLUMNS if n == 0 else None,
        "rows": [{"id": i, "name": text(i)} for i in ids],
        "nextCursor": str(n + 1),
        "hasMore": n + 1 < batches,
        "totalRows": batches * ROWS,
    }


@pytest.fixture
async def s3(settings: Settings) -> AsyncIterator[S3Storage]:
    bucket = await trio.to_thread.run_sync(new_bucket)
    try:
        yield S3Storage(s3_config(bucket))
    finally:
        await trio.to_thread.run_sync(drop_bucket, bucket)


async def claimed(store: ExportStore, storage: S3Storage, settings: Settings) -> RunContext:
    task = await claim(store, await create(store), settings.instance_id)
    owner = settings.instance_id
    return RunContext(task, owner, RunFile(task, owner, store, storage))


async def run_s3(store: ExportStore, settings: Settings, answer: Any, ctx: RunContext) -> Any:
    return await run(store, settings, answer, ctx, Registry({"CUSTOMER_LIST": BIG}))


@on_sqlite
async def test_a_run_uploads_every_row_in_parts_and_no_local_file(
    store: ExportStore, s3: S3Storage, settings: Settings
) -> None:
    batches = 14
    ctx = await claimed(store, s3, settings)

    async def answer(n: int) -> httpx.Response:
        return ok(batch(n, batches))

    result = await run_s3(store, settings, answer, ctx)
    bucket = s3.config.bucket
    assert await s3.size(result.object_key) == result.size_bytes
    assert result.size_bytes > 2 * s3.config.part_size  # several parts went up
    assert await trio.to_thread.run_sync(object_keys, bucket) == [result.object_key]
    assert await trio.to_thread.run_sync(incomplete_uploads, bucket) == []
    assert not settings.resolved_storage_dir.exists() or not any(
        settings.resolved_storage_dir.rglob("*.xlsx")
    )
    body = b"".join([chunk async for chunk in s3.load(result.object_key)])
    book = openpyxl.load_workbook(io.BytesIO(body), read_only=True)
    values = list(book.active.values)
    book.close()
    assert values[0] == ("ID", "Name")
    assert len(values) - 1 == result.rows == batches * ROWS
    assert values[1] == (0, text(0)) and values[-1] == (
        batches * ROWS - 1,
        text(batches * ROWS - 1),
    )


@on_sqlite
async def test_a_failed_run_leaves_nothing_once_the_slot_discards_its_file(
    store: ExportStore, s3: S3Storage, settings: Settings
) -> None:
    """The Provider fails after parts went up: the worker is killed (SIGKILL), so its
    upload stays incomplete until the slot deletes the run's key, which aborts it."""
    ctx = await claimed(store, s3, settings)

    async def answer(n: int) -> httpx.Response:
        if n == 13:  # ~11.5 MB written: part 2 went up (part 1 waits for the sheet's end)
            return httpx.Response(503, text="down")
        return ok(batch(n, 14))

    with pytest.raises(ProviderUnavailableError):
        await run_s3(store, settings, answer, ctx)
    bucket = s3.config.bucket
    assert ctx.file.key is not None
    assert await trio.to_thread.run_sync(incomplete_uploads, bucket) == [ctx.file.key]
    await ctx.file.discard()
    assert await trio.to_thread.run_sync(incomplete_uploads, bucket) == []
    assert await trio.to_thread.run_sync(object_keys, bucket) == []


@on_sqlite
async def test_the_size_limit_stops_the_upload_during_the_write(
    store: ExportStore, s3: S3Storage, settings: Settings
) -> None:
    settings = settings.model_copy(update={"max_file_size_mb": 7})
    ctx = await claimed(store, s3, settings)
    asked: list[int] = []

    async def answer(n: int) -> httpx.Response:
        asked.append(n)
        return ok(batch(n, 30))

    with pytest.raises(LimitExceededError, match="maximum file size of 7 MB"):
        await run_s3(store, settings, answer, ctx)
    assert max(asked) < 29  # stopped while writing, not at the end
    await ctx.file.discard()
    bucket = s3.config.bucket
    assert await trio.to_thread.run_sync(incomplete_uploads, bucket) == []
    assert await trio.to_thread.run_sync(object_keys, bucket) == []
