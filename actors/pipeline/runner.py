"""The export body: Provider batches → XLSX → storage, for one claimed attempt.

Called by a consumer slot's executor (``actors/supervised/execution.py``) inside the run's cancel
scope, with the lease watchdog beside it. The run's CPU work — decoding the Provider's
JSON, typing cells, encoding and compressing the XLSX — runs in a worker process of its own
(:mod:`actors.pipeline.worker.handle`), so the event loop keeps renewing leases and
serving HTTP, and concurrent exports use every core. This process keeps the Provider
cursor loop and the cross-batch rules (fed by the batch summaries of the requests the
worker makes), the fenced database writes, progress, Provider metrics and storage. A
cancelled run kills its worker; a worker that dies fails the run as transient.

Definition values that protect downstream services (``provider-*``, ``batch-size``,
``max-rows``) are read from the registry *at execution time* (§10.4), and so is the
Provider's address: each run first brings the Provider map up to date with its file
(:mod:`actors.plumbing.provider_map_source`), and every batch request its worker sends carries the
address in force when the request is built.

Warnings about the Provider's data (truncated cells, invalid values, undeclared fields,
fewer rows than announced) are logged once per run, as one summary line, whether the run
succeeds or fails. Every run ends with one INFO summary line (``outcome``, ``rows``,
``bytes``, ``seconds``, ``batches``, ``warnings``); every Provider request carries the
task's trace id (``traceparent``).

The progress write between batches is for display only. It is made at the first batch
boundary at least ``FILE_EXPORT_PROGRESS_WRITE_SECONDS`` (0.5) after the last one, and once
at the end: the download center's progress stream reads it once a second, and a write per batch
(~100 a second per export) was a fenced database commit per batch for nothing, each on the
run's path from one batch to the next. A database error there is logged (at most once per
``PROGRESS_WARNING_INTERVAL_SECONDS``) and the write skipped, so a database blip never
costs the export an attempt; a later boundary writes a newer figure. It is fenced like
every write of the run, so a write that matches no row (the task was cancelled, or the
lease lost) ends the run at that batch boundary: a cancel by another instance's API is
seen within that interval and a batch.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import datetime
from functools import partial
from typing import BinaryIO

import trio

from actors.core.errors import (
    ExportAbortedError,
    PermanentExportError,
    TransientDatabaseError,
)
from actors.core.log_context import task_fields
from actors.core.object_keys import XLSX_CONTENT_TYPE
from actors.core.outcomes import AbortReason, ExportResult
from actors.core.ports.registry import RegistryView
from actors.core.ports.storage import RemoteUpload
from actors.core.ports.store import RunStore
from actors.core.provider.batch_rules import final_total_rows
from actors.core.text import safe_file_name
from actors.pipeline.attempt import RunContext
from actors.pipeline.provider.client import ProviderClient
from actors.pipeline.provider.cursor_loop import iterate_batches
from actors.pipeline.worker.handle import ExportWorker
from actors.pipeline.worker.pool import WorkerPool, open_export_worker
from actors.plumbing.config import Settings

log = logging.getLogger(__name__)

#: At most one WARNING per run and interval about skipped progress writes, seconds.
PROGRESS_WARNING_INTERVAL_SECONDS = 30.0


def download_file_name(task_name: str, at: datetime) -> str:
    """A user-facing file name: the task name (unsafe characters replaced) plus a
    timestamp from the instance clock, which only labels the file (§8.6)."""
    # Dots, spaces and "_" trimmed together: "../x" becomes "_.._x" then ".._x" one at a
    # time, and a name that still began with a dot would be trimmed again (differently) by
    # the Content-Disposition of the download.
    base = safe_file_name(task_name, default="export").strip(" ._") or "export"
    return f"{base[:100]}_{at:%Y%m%d_%H%M%S}.xlsx"


class ExportRunner:
    """The pipeline callable given to consumer slots: ``await runner(ctx)``."""

    def __init__(
        self,
        store: RunStore,
        provider: ProviderClient,
        registry: RegistryView,
        settings: Settings,
        workers: WorkerPool | None = None,
    ) -> None:
        self.store = store
        self.provider = provider
        self.registry = registry
        self.settings = settings
        #: Where each run's worker process comes from; without a pool given, each run
        #: starts its own.
        self.workers = workers or WorkerPool(
            nice=settings.worker_nice, sched_idle=settings.worker_sched_idle, spares=0
        )

    async def __call__(self, ctx: RunContext) -> ExportResult:
        task = ctx.task
        await self.provider.refresh_endpoints()  # a moved Provider: this run uses its new address
        definition = self.registry.current.get(task.export_type)
        if definition is None:
            raise PermanentExportError(f"export type {task.export_type} is no longer registered")
        out = await ctx.file.create()
        total_estimate: int | None = None
        batches = 0
        progress = _Progress(self.store, ctx, self.settings.progress_write_seconds)
        worker: ExportWorker | None = None
        started = trio.current_time()
        size: int | None = None
        try:
            async with open_export_worker(
                out,
                max_rows=definition.max_rows,
                max_bytes=self.settings.max_file_bytes,
                pool=self.workers,
            ) as worker:
                ctx.worker_pid = worker.pid
                # A rule this process checks fails on a batch whose answer came after
                # every earlier batch was written: the worker writes batch n before it
                # reads n+1's answer, and reports a failed write instead of that answer.
                fetch_one = partial(
                    self.provider.fetch_batch, definition, fetch=worker, trace_id=task.trace_id
                )
                async with contextlib.aclosing(
                    iterate_batches(
                        fetch_one,
                        definition,
                        task_id=task.id,
                        tenant_id=task.tenant_id,
                        app_code=task.app_code,
                        requested_by=task.requested_by,
                        dispatch_version=task.dispatch_version,
                        parameters=task.parameters,
                    )
                ) as stream:
                    async for summary in stream:
                        batches += 1
                        # Providers may send the estimate on the first batch only (§10.2):
                        # keep the last one known rather than blanking the total.
                        if summary.total_rows is not None:
                            total_estimate = summary.total_rows
                        # The worker writes this batch during the next request
                        # (write-behind); the progress is the rows it has confirmed, up
                        # to an earlier batch.
                        if batches > 1 and progress.due():
                            await progress.report(worker.rows_written, total_estimate)
                rows = await worker.finish_writes()
                await progress.report(rows, total_estimate)
                total_rows, shortfall = final_total_rows(total_estimate, rows)
                size = await worker.close(shortfall)
        except BaseException:
            _close(out)  # the worker is gone; the slot deletes the partial file by its key
            raise
        finally:
            if worker is not None and worker.warnings:
                log.warning(
                    "provider data warnings",
                    extra=task_fields(
                        task.id,
                        task.dispatch_version,
                        rows=worker.rows_written,
                        batches=batches,
                        warnings=[w.detail for w in worker.warnings],
                    ),
                )
            _log_summary(task.id, worker, size, batches, trio.current_time() - started)
        _close(out)  # the worker has flushed and fsynced the file, or completed its upload
        assert ctx.file.key is not None  # created above
        return ExportResult(
            object_key=ctx.file.key,
            file_name=download_file_name(task.task_name, datetime.now()),
            content_type=XLSX_CONTENT_TYPE,
            size_bytes=size,
            rows=rows,
            total_rows=total_rows,
            warnings=worker.warnings,
        )


def _close(out: BinaryIO | RemoteUpload) -> None:
    """Close the parent's copy of the run's file (an upload has none)."""
    if not isinstance(out, RemoteUpload):
        out.close()


def _log_summary(
    task_id: int, worker: ExportWorker | None, size: int | None, batches: int, seconds: float
) -> None:
    """The run's one INFO summary line; ``size`` is ``None`` when the file was not
    finished (the run failed or was aborted: the consumer logs why)."""
    rows = worker.rows_written if worker is not None else 0
    warnings = len(worker.warnings) if worker is not None else 0  # kinds of data warning
    outcome = "written" if size is not None else "stopped"
    log.info(
        "run summary",
        extra={
            "taskId": str(task_id),
            "outcome": outcome,
            "rows": rows,
            "bytes": size,
            "seconds": round(seconds, 3),
            "batches": batches,
            "warnings": warnings,
        },
    )


class _Progress:
    """Writes a run's progress, skipping writes the database refuses (display only)."""

    def __init__(self, store: RunStore, ctx: RunContext, interval: float) -> None:
        """``interval``: least seconds between two writes at batch boundaries."""
        self.store = store
        self.ctx = ctx
        self._interval = interval
        self.skipped = 0
        self._warned_at: float | None = None
        self._next_at = float("-inf")  # trio clock: when the next write is due

    def due(self) -> bool:
        """Whether a batch boundary now should write the progress (module docstring)."""
        return trio.current_time() >= self._next_at

    async def report(self, processed_rows: int, total_rows: int | None) -> None:
        """Write the progress now (a due batch boundary, or the end of the run).

        Raises:
            ExportAbortedError: the fenced write matched no row: the task was cancelled
                or the lease lost. This is the batch-boundary check that ends a cancelled
                run on any instance without waiting for the next heartbeat.
        """
        self._next_at = trio.current_time() + self._interval
        try:
            if not await self.store.report_progress(
                self.ctx.task, self.ctx.owner, processed_rows, total_rows
            ):
                # The task is no longer this attempt's (cancelled, or its lease lost): the
                # same structured abort as the watchdog's, recorded on the run's context.
                self.ctx.abort(AbortReason.LEASE_LOST)
                raise ExportAbortedError("export aborted: the task was cancelled or its lease lost")
        except TransientDatabaseError as exc:
            self.skipped += 1
            now = trio.current_time()
            if self._warned_at is None or now - self._warned_at >= (
                PROGRESS_WARNING_INTERVAL_SECONDS
            ):
                self._warned_at = now
                log.warning(
                    "progress write skipped; the export goes on",
                    extra=task_fields(
                        self.ctx.task.id,
                        self.ctx.task.dispatch_version,
                        rows=self.skipped,
                        error=str(exc),
                    ),
                )
