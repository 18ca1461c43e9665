"""The export worker process: fetches and decodes one run's Provider batches, writes its XLSX.

Started by :func:`actors.pipeline.export_worker.open_export_worker` as
``python -m actors.pipeline.worker_main``, one process per export run, and spoken to with
the frames of :mod:`actors.pipeline.worker_protocol` over its stdin/stdout. It holds the
run's writer across batches, so every batch of a run goes to this one process. It never
touches the database, the network or the storage interface: it writes the one file
descriptor it was given.

At start it

* ignores SIGINT and SIGTERM: a Ctrl-C or a service manager's SIGTERM to the process
  group is meant for the parent, whose drain decides when this run ends (it hands the task
  back, then kills the worker). The parent ends the worker by closing its stdin (clean) or
  with SIGKILL (cancel);
* lowers its own scheduling priority (``nice`` +10, ``FILE_EXPORT_WORKER_NICE``, and on
  Linux the ``SCHED_IDLE`` policy, ``FILE_EXPORT_WORKER_SCHED_IDLE``) on the parent's
  first request, so when every core is busy encoding the parent's event loop — the API,
  lease renewals — still gets the CPU first, at once;
* moves the frame pipe off file descriptor 1 and points 1 at stderr, so a stray print from
  a library cannot corrupt a frame.

It imports only urllib3, the decoder, the writer and the pure core (not trio, httpx or the
web stack), which keeps its start fast and its memory small.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from concurrent.futures import Future, ThreadPoolExecutor
from typing import BinaryIO

from actors.core.errors import ExportError, StorageUnavailableError
from actors.core.models import ProviderBatch
from actors.pipeline.provider_decode import parse_batch_response
from actors.pipeline.provider_http import fetch_body, new_pool
from actors.pipeline.worker_protocol import (
    EXPORT_ERRORS,
    Close,
    Closed,
    Decoded,
    Failed,
    Fetch,
    Reply,
    Request,
    Start,
    Started,
    Write,
    Written,
    read_frame,
    write_frame,
)
from actors.pipeline.xlsx_stream import XlsxStreamWriter


class WorkerSession:
    """One run's state in the worker: the output file, the writer, the batch decoded last.

    :meth:`handle` answers one request; it never raises for a failure of the export (that
    becomes a :class:`Failed` reply), and after the first failure it answers every request
    with that same failure.
    """

    def __init__(self) -> None:
        self._start: Start | None = None
        self._out: BinaryIO | None = None
        self._writer: XlsxStreamWriter | None = None
        self._pending: ProviderBatch | None = None
        self._failed: Failed | None = None
        self._pool = new_pool()  # keep-alive across the run's batches
        self._fetch_seconds: float | None = None  # of the Fetch being handled

    def take_pending(self) -> ProviderBatch | None:
        """The batch fetched last, for the :class:`Write` that follows it (main thread)."""
        batch, self._pending = self._pending, None
        return batch

    def handle(self, request: Request, batch: ProviderBatch | None = None) -> Reply:
        """Carry out one request and return its reply.

        Args:
            request: the request.
            batch: for a :class:`Write`, the batch it writes (:meth:`take_pending`, taken
                when the request arrived: the write may run in the writer thread while
                the next batch is fetched).
        """
        if self._failed is not None:
            return self._failed
        try:
            return self._handle(request, batch)
        except ExportError as exc:
            failed = self._failure(request, type(exc).__name__, str(exc), internal=False)
        except OSError as exc:
            # The disk (full, gone): the transient storage error, as the runner's thread
            # calls translated it before the work moved here.
            error = StorageUnavailableError(f"storage write failed: {exc.strerror or exc}")
            failed = self._failure(request, type(error).__name__, str(error), internal=False)
        except Exception as exc:  # a bug: report it, and show where on stderr
            traceback.print_exc(file=sys.stderr)
            failed = self._failure(request, type(exc).__name__, str(exc), internal=True)
        self._failed = failed
        return failed

    def _handle(self, request: Request, batch: ProviderBatch | None) -> Reply:
        if isinstance(request, Start):
            self._start = request
            _lower_priority(request.nice, idle=request.sched_idle)
            self._out = os.fdopen(request.out_fd, "wb")  # no truncation: an fd, not a path
            return Started(os.getpid())
        if isinstance(request, Fetch):
            spec = request.spec
            self._fetch_seconds = None
            started = time.monotonic()
            try:
                raw = fetch_body(spec, self._pool)
            finally:
                self._fetch_seconds = time.monotonic() - started
            seconds = self._fetch_seconds
            self._pending = parse_batch_response(
                raw, service=spec.service, limit=request.limit, max_columns=request.max_columns
            )
            return Decoded(self._pending.summary(), len(raw), seconds)
        if isinstance(request, Write):
            if batch is None:
                raise RuntimeError(f"write of batch {request.batch} without a decoded batch")
            writer = self._writer or self._open_writer(batch)
            writer.write_rows(batch.rows, request.batch)
            return Written(writer.rows_written, tuple(writer.warnings.lines()))
        if isinstance(request, Close):
            open_writer = self._writer
            if open_writer is None or self._out is None:
                raise RuntimeError("close before any batch was written")
            writer = open_writer
            size = writer.close()
            self._out.flush()
            os.fsync(self._out.fileno())  # before the parent's commit says the file exists
            if request.note:
                writer.warnings.note(request.note)
            return Closed(size, writer.rows_written, tuple(writer.warnings.lines()))
        raise RuntimeError(f"unknown request {type(request).__name__}")

    def _open_writer(self, first: ProviderBatch) -> XlsxStreamWriter:
        start = self._start
        if start is None or self._out is None:
            raise RuntimeError("write before start")
        if not first.columns:
            raise RuntimeError("the first batch written carries no columns")
        # No abort event: the parent stops this process instead (SIGKILL on cancel).
        self._writer = XlsxStreamWriter(
            self._out,
            first.columns,
            max_rows=start.max_rows,
            max_bytes=start.max_bytes,
        )
        return self._writer

    def _failure(self, request: Request, error: str, message: str, *, internal: bool) -> Failed:
        writer = self._writer
        return Failed(
            error=error if internal or error in EXPORT_ERRORS else "ExportError",
            message=message,
            internal=internal,
            rows_written=writer.rows_written if writer else 0,
            warnings=tuple(writer.warnings.lines()) if writer else (),
            seconds=self._fetch_seconds if isinstance(request, Fetch) else None,
        )

    def discard(self) -> None:
        """Drop an unfinished file and the writer's temporary files (best effort)."""
        self._pool.clear()
        if self._writer is not None:
            self._writer.discard()
        if self._out is not None:
            try:
                self._out.close()
            except OSError:
                pass


def _lower_priority(increment: int, *, idle: bool) -> None:
    """``nice`` +``increment`` and, when ``idle``, the ``SCHED_IDLE`` policy, before the
    first batch (the parent's Start request). The writer thread, started later, inherits
    both (Linux keeps them per thread)."""
    if idle and hasattr(os, "SCHED_IDLE"):  # Linux; elsewhere nice is all there is
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except OSError:  # refused (a seccomp profile): nice alone, rather than not at all
            pass
    if increment <= 0:
        return
    try:
        os.nice(increment)
    except OSError:  # not permitted here: run at the parent's priority rather than not at all
        pass


def _prepare_process() -> tuple[BinaryIO, BinaryIO]:
    """Signals, priority and the frame pipes (module docstring); returns (requests, replies)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return requests, replies


def main() -> int:
    """Serve one run until the parent closes the request pipe; exit status 0.

    Read-ahead: a :class:`Write` runs in a writer thread while this (main) thread serves
    the next request — the next batch's :class:`Fetch`, which the parent sends right after
    — so batch n is encoded while batch n+1 is on the wire. Replies still go out in request
    order: the write's before the fetch's. The fetch stays in the main thread, where the
    total-limit timer of :mod:`actors.pipeline.provider_http` can interrupt it.
    """
    requests, replies = _prepare_process()
    session = WorkerSession()
    writing: Future[None] | None = None  # the Write in the writer thread, with its reply

    def write(request: Write, batch: ProviderBatch | None) -> None:
        # Answered as soon as done, so a worker that dies later is found dying while
        # fetching the next batch; the main thread sends nothing until this is done.
        write_frame(replies, session.handle(request, batch))

    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="xlsx-writer") as writer:
            while (request := read_frame(requests)) is not None:
                if isinstance(request, Write):
                    if writing is not None:  # not sent by the parent; keep the order anyway
                        writing.result()
                    writing = writer.submit(write, request, session.take_pending())
                    continue
                reply = session.handle(request) if isinstance(request, Fetch) else None
                if writing is not None:
                    writing.result()  # its reply is out, or it raised BrokenPipeError
                    writing = None
                if reply is None:
                    reply = session.handle(request)  # type: ignore[arg-type]
                write_frame(replies, reply)
            if writing is not None:
                writing.result()
    except (BrokenPipeError, EOFError):
        pass  # the parent went away: nothing is waiting for an answer
    finally:
        session.discard()
    return 0


if __name__ == "__main__":
    sys.exit(main())
