"""One export run inside the worker process: its requests, its writer thread, its file.

:func:`serve` answers the frames of :mod:`actors.pipeline.worker_protocol` that the parent
(:mod:`actors.pipeline.export_worker`) sends, until the request pipe closes; the process
around it (signals, priority, pipes) is :mod:`actors.pipeline.worker_main`. It holds the
run's writer across batches, so every batch of a run goes to this one process. It never
touches the database or the storage interface: it writes the one file descriptor the
parent passed it (``SCM_RIGHTS`` over a Unix socket, with the Start request).

Write-behind: each batch the main thread has decoded goes to the writer thread at once,
and its :class:`Decoded` reply goes out without waiting for the write, so batch n is
typed, encoded and compressed while the parent checks it and batch n+1 is on the wire —
without a round trip through the parent per batch. The fetch stays in the main thread,
where the total-limit timer of :mod:`actors.pipeline.provider_http` can interrupt it. A
failed write is answered to the next request; a failed fetch waits for the writes before
it, so the earliest failure of the run is the one reported.
"""

from __future__ import annotations

import os
import queue
import socket
import sys
import threading
import time
import traceback
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
    Finish,
    Reply,
    Request,
    Start,
    Started,
    Written,
    read_frame,
    write_frame,
)
from actors.pipeline.xlsx_stream import XlsxStreamWriter


def serve(requests: BinaryIO, replies: BinaryIO, fds: socket.socket) -> None:
    """Answer the parent's requests until it closes the request pipe or goes away.

    Args:
        requests, replies: the frame pipes.
        fds: the Unix socket the output descriptor arrives on.
    """
    session = WorkerSession()
    writer = _WriterThread(session)
    try:
        while (request := read_frame(requests)) is not None:
            write_frame(replies, _answer(session, writer, request, fds))
    except (BrokenPipeError, EOFError):
        pass  # the parent went away: nothing is waiting for an answer
    finally:
        writer.stop()
        session.discard()


class WorkerSession:
    """One run's state in the worker: the output file, the writer, its progress, the
    run's first failure.

    The main thread calls :meth:`start`, :meth:`fetch` and :meth:`close`, which raise;
    the writer thread calls :meth:`write`, which keeps its failure instead. :meth:`fail`
    turns an exception into the :class:`Failed` reply and keeps the first one as
    :attr:`failed`: after it, every request is answered with that same failure.
    """

    def __init__(self) -> None:
        self._start: Start | None = None
        self._out: BinaryIO | None = None
        self._writer: XlsxStreamWriter | None = None
        self._lock = threading.Lock()  # the first failure wins, whichever thread has it
        #: The run's first failure, of a request or of a write.
        self.failed: Failed | None = None
        #: (rows written, data warnings) after the last batch written, replaced whole by
        #: the writer thread, so the main thread reads a consistent pair.
        self.progress: tuple[int, tuple[str, ...]] = (0, ())
        self._pool = new_pool()  # keep-alive across the run's batches
        self._fetch_seconds: float | None = None  # of the Fetch being handled
        self._fetch_size = 0

    def start(self, request: Start, out_fd: int) -> Started:
        """Open the run's output descriptor (``out_fd``, received with the request)."""
        self._start = request
        self._out = os.fdopen(out_fd, "wb")  # no truncation: an fd, not a path
        return Started(os.getpid())

    def fetch(self, request: Fetch) -> ProviderBatch:
        """Make the batch request, decode and check the answer (main thread).

        Raises:
            ExportError: as :func:`fetch_body` and :func:`parse_batch_response`.
        """
        spec = request.spec
        self._fetch_seconds = None
        started = time.monotonic()
        try:
            raw = fetch_body(spec, self._pool)
        finally:
            self._fetch_seconds = time.monotonic() - started
        self._fetch_size = len(raw)
        return parse_batch_response(
            raw, service=spec.service, limit=request.limit, max_columns=request.max_columns
        )

    def decoded(self, batch: ProviderBatch) -> Decoded:
        """The reply to the Fetch of ``batch``: its summary and the progress so far."""
        rows_written, warnings = self.progress
        seconds = self._fetch_seconds or 0.0
        return Decoded(batch.summary(), self._fetch_size, seconds, rows_written, warnings)

    def write(self, number: int, batch: ProviderBatch) -> None:
        """Type and write one decoded batch (writer thread). A failure is kept, and the
        batches still queued after it are dropped."""
        if self.failed is not None:
            return
        try:
            writer = self._writer or self._open_writer(batch)
            writer.write_rows(batch.rows, number)
            self.progress = (writer.rows_written, tuple(writer.warnings.lines()))
        except Exception as exc:
            self.fail(None, exc)

    def close(self, request: Close) -> Closed:
        """Finish, flush and fsync the file (main thread, every write done).

        Raises:
            ExportError: the file cannot be finished (size limit); OSError: the disk.
        """
        writer = self._writer
        if writer is None or self._out is None:
            raise RuntimeError("close before any batch was written")
        size = writer.close()
        self._out.flush()
        os.fsync(self._out.fileno())  # before the parent's commit says the file exists
        if request.note:
            writer.warnings.note(request.note)
        return Closed(size, writer.rows_written, tuple(writer.warnings.lines()))

    def fail(self, request: Request | Reply | None, exc: Exception) -> Failed:
        """The :class:`Failed` reply for ``exc``; the run's first failure is kept and
        returned from then on.

        Args:
            request: the request that failed; ``None`` for a write of the writer thread.
            exc: an :class:`ExportError` (the verdict), an ``OSError`` (the disk: the
                transient storage error) or anything else (a bug, printed on stderr).
        """
        if isinstance(exc, ExportError):
            error, message, internal = type(exc).__name__, str(exc), False
        elif isinstance(exc, OSError):
            # The disk (full, gone): the transient storage error, as the runner's thread
            # calls translated it before the work moved here.
            storage = StorageUnavailableError(f"storage write failed: {exc.strerror or exc}")
            error, message, internal = type(storage).__name__, str(storage), False
        else:
            traceback.print_exception(exc, file=sys.stderr)
            error, message, internal = type(exc).__name__, str(exc), True
        with self._lock:
            if self.failed is None:
                # The writer is idle here (this is its thread, or the main thread after
                # the writes were drained): its figures count the rows of a failed batch.
                writer = self._writer
                rows_written, warnings = (
                    (writer.rows_written, tuple(writer.warnings.lines()))
                    if writer is not None
                    else self.progress
                )
                self.failed = Failed(
                    error=error if internal or error in EXPORT_ERRORS else "ExportError",
                    message=message,
                    internal=internal,
                    rows_written=rows_written,
                    warnings=warnings,
                    seconds=self._fetch_seconds if isinstance(request, Fetch) else None,
                )
            return self.failed

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


class _WriterThread:
    """The thread that writes decoded batches in order while the main thread fetches.

    At most one batch waits for it (:meth:`put` blocks while one does), so a run holds
    at most three batches: one being written, one waiting, one being decoded. Made after
    :mod:`actors.pipeline.worker_main` lowered the process's priority: Linux keeps the
    scheduling policy and nice value per thread, and a thread inherits them when created.
    """

    def __init__(self, session: WorkerSession) -> None:
        self._session = session
        self._queue: queue.Queue[tuple[int, ProviderBatch] | None] = queue.Queue(maxsize=1)
        self._thread = threading.Thread(target=self._run, name="xlsx-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            try:
                self._session.write(*item)
            finally:
                self._queue.task_done()
        self._queue.task_done()

    def put(self, number: int, batch: ProviderBatch) -> None:
        """Queue batch ``number`` for writing; blocks while another batch waits."""
        self._queue.put((number, batch))

    def drain(self) -> None:
        """Wait until every queued batch is written (or dropped after a failure)."""
        self._queue.join()

    def stop(self) -> None:
        """Let the thread end after what is queued."""
        self._queue.put(None)
        self._thread.join()


def _answer(
    session: WorkerSession, writer: _WriterThread, request: Request | Reply, fds: socket.socket
) -> Reply:
    """Carry out one request of the parent (main thread) and return its reply (a reply
    read as a request is an unknown request: a bug, answered as one)."""
    if session.failed is not None:
        return session.failed
    try:
        if isinstance(request, Start):
            # The parent sends the output file's descriptor just before the request.
            _, (out_fd,), _, _ = socket.recv_fds(fds, 1, 1)
            return session.start(request, out_fd)
        if isinstance(request, Fetch):
            try:
                batch = session.fetch(request)
            except Exception:
                writer.drain()  # a write before it may have failed first: that one counts
                raise
            if session.failed is not None:
                return session.failed
            writer.put(request.batch, batch)
            return session.decoded(batch)
        writer.drain()
        if session.failed is not None:
            return session.failed
        if isinstance(request, Finish):
            return Written(*session.progress)
        if isinstance(request, Close):
            return session.close(request)
        raise RuntimeError(f"unknown request {type(request).__name__}")
    except Exception as exc:
        return session.fail(request, exc)
