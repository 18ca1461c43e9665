"""The export body: Provider batches → XLSX → storage, for one claimed attempt.

Called by a consumer slot inside the run's cancel scope, with the lease watchdog beside
it. XLSX encoding is CPU-bound and runs in a worker thread (DESIGN §7), one batch per
call, so the event loop keeps renewing leases and serving HTTP; the thread sees an abort
through ``RunContext.abort_flag`` at its next write.

Definition values that protect downstream services (``provider-*``, ``batch-size``,
``max-rows``) are read from the registry *at execution time* (§10.4).

Warnings about the Provider's data (truncated cells, invalid values, undeclared fields,
fewer rows than announced) are logged once per run, as one summary line, whether the run
succeeds or fails.

The progress write after each batch is for display only: a database error there is
logged (at most once per ``PROGRESS_WARNING_INTERVAL_SECONDS``) and the write skipped, so
a database blip never costs the export an attempt; the next batch writes a newer figure.
"""

from __future__ import annotations

import logging
import os
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

import trio

from actors.config import Settings
from actors.core.batch_rules import final_total_rows
from actors.core.errors import (
    ExportAbortedError,
    PermanentExportError,
    StorageUnavailableError,
    sole_exception,
)
from actors.core.models import ProviderBatch
from actors.core.text import safe_file_name
from actors.pipeline.context import ExportResult, RunContext
from actors.pipeline.provider_client import ProviderClient, iterate_batches
from actors.pipeline.storage import XLSX_CONTENT_TYPE, ExportStorage, new_object_key
from actors.pipeline.xlsx_stream import XlsxStreamWriter
from actors.registry_source import RegistryHolder
from db.database import TransientDatabaseError
from db.store import ExportStore

log = logging.getLogger("actors.pipeline.runner")

#: At most one WARNING per run and interval about skipped progress writes, seconds.
PROGRESS_WARNING_INTERVAL_SECONDS = 30.0


def download_file_name(task_name: str, at: datetime) -> str:
    """A user-facing file name: the task name (unsafe characters replaced) plus a
    timestamp from the instance clock, which only labels the file (§8.6)."""
    base = safe_file_name(task_name, default="export").strip("_") or "export"
    return f"{base[:100]}_{at:%Y%m%d_%H%M%S}.xlsx"


class ExportRunner:
    """The pipeline callable given to consumer slots: ``await runner(ctx)``."""

    def __init__(
        self,
        store: ExportStore,
        storage: ExportStorage,
        provider: ProviderClient,
        registry: RegistryHolder,
        settings: Settings,
        spool_dir: Path | None = None,
    ) -> None:
        self.store = store
        self.storage = storage
        self.provider = provider
        self.registry = registry
        self.settings = settings
        self.spool_dir = spool_dir

    async def __call__(self, ctx: RunContext) -> ExportResult:
        task = ctx.task
        definition = self.registry.current.get(task.export_type)
        if definition is None:
            raise PermanentExportError(f"export type {task.export_type} is no longer registered")
        key = new_object_key(task.id)
        if not await self.store.record_object_key(task, ctx.owner, key):
            raise ExportAbortedError("export aborted: lease lost before writing")
        out: BinaryIO = await self.storage.create(key)
        ctx.object_key = key
        writer: XlsxStreamWriter | None = None
        total_estimate: int | None = None
        batches = 0
        progress = _Progress(self.store, ctx)
        # One batch of read-ahead: the next Provider request runs while this batch is
        # encoded, so Provider latency and XLSX encoding overlap.
        send, recv = trio.open_memory_channel[ProviderBatch](1)

        async def fetch() -> None:
            async with send:
                async for batch in iterate_batches(
                    self.provider,
                    definition,
                    task_id=task.id,
                    tenant_id=task.tenant_id,
                    app_code=task.app_code,
                    requested_by=task.requested_by,
                    dispatch_version=task.dispatch_version,
                    parameters=task.parameters,
                ):
                    await send.send(batch)

        try:
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(fetch)
                    async with recv:
                        async for batch in recv:
                            batches += 1
                            if writer is None:
                                assert batch.columns is not None  # first batch has them
                                writer = XlsxStreamWriter(
                                    out,
                                    batch.columns,
                                    max_rows=definition.max_rows,
                                    max_bytes=self.settings.max_file_bytes,
                                    abort=ctx.abort_flag,
                                    tmpdir=str(self.spool_dir) if self.spool_dir else None,
                                )
                            await _in_thread(writer.write_rows, batch.rows, batches)
                            # Providers may send the estimate on the first batch only (§10.2):
                            # keep the last one known rather than blanking the total.
                            if batch.total_rows is not None:
                                total_estimate = batch.total_rows
                            await progress.report(writer.rows_written, total_estimate)
            except BaseExceptionGroup as group:
                raise sole_exception(group) from None
            assert writer is not None
            size = await _in_thread(writer.close)
            await _in_thread(_close_durably, out)
            total_rows, shortfall = final_total_rows(total_estimate, writer.rows_written)
            if shortfall is not None:
                writer.warnings.note(shortfall)
        except BaseException:
            if writer is not None:
                writer.discard()
            out.close()
            raise
        finally:
            if writer is not None and writer.warnings:
                log.warning(
                    "task %s v%d: provider data warnings after %d rows in %d batches: %s",
                    task.id,
                    task.dispatch_version,
                    writer.rows_written,
                    batches,
                    writer.warnings.summary(),
                )
        return ExportResult(
            object_key=key,
            file_name=download_file_name(task.task_name, datetime.now()),
            content_type=XLSX_CONTENT_TYPE,
            size_bytes=size,
            rows=writer.rows_written,
            total_rows=total_rows,
        )


class _Progress:
    """Writes a run's progress, skipping writes the database refuses (display only)."""

    def __init__(self, store: ExportStore, ctx: RunContext) -> None:
        self.store = store
        self.ctx = ctx
        self.skipped = 0
        self._warned_at: float | None = None

    async def report(self, processed_rows: int, total_rows: int | None) -> None:
        try:
            await self.store.report_progress(
                self.ctx.task, self.ctx.owner, processed_rows, total_rows
            )
        except TransientDatabaseError as exc:
            self.skipped += 1
            now = trio.current_time()
            if self._warned_at is None or now - self._warned_at >= (
                PROGRESS_WARNING_INTERVAL_SECONDS
            ):
                self._warned_at = now
                log.warning(
                    "task %s: progress write skipped (%d so far; the export goes on): %s",
                    self.ctx.task.id,
                    self.skipped,
                    exc,
                )


def _close_durably(out: BinaryIO) -> None:
    """Flush and fsync before the commit says the file exists."""
    out.flush()
    os.fsync(out.fileno())
    out.close()


async def _in_thread(fn, *args):  # type: ignore[no-untyped-def]
    """Run blocking writer work in a thread; translate OS errors (disk full …) into the
    transient storage error of §9.1."""
    try:
        return await trio.to_thread.run_sync(fn, *args)
    except OSError as exc:
        raise StorageUnavailableError(f"storage write failed: {exc.strerror or exc}") from exc
