"""One export run inside the worker process: its requests, its file, in one thread.

:func:`serve` answers the frames of :mod:`actors.pipeline.worker.protocol` that the parent
(:mod:`actors.pipeline.worker.handle`) sends, until the request pipe closes; the process
around it (signals, priority, pipes) is :mod:`actors.pipeline.worker.main`. It holds the
run's writer across batches, so every batch of a run goes to this one process. It never
touches the database or the storage interface: it writes the one file descriptor the
parent passed it (``SCM_RIGHTS`` over a Unix socket, with the Start request), or uploads
the file to the object store the Start request names
(:mod:`actors.storage.multipart_output`), parts going up while it is written.

Write-behind, one thread: a decoded batch is written during the *next* request. A Fetch
sends its Provider request, then types, encodes and compresses the batch before it, then
reads the answer, which the Provider prepared meanwhile
(:class:`~actors.pipeline.provider.http.ProviderConnection`); a Finish writes the last
batch. So the Provider's time overlaps the worker's writing without a second thread —
two threads of one process share its GIL, and with two exports on two cores they turned
out ~20 % fewer rows per CPU-second than one (README, "Benchmarks"). At most two batches
are held: the one waiting to be written and the one being read and decoded. A failed write
is the answer to the request it happened in, before anything about that request's own
batch: the earliest failure of the run is the one reported.
"""

from __future__ import annotations

import os
import socket
import sys
import time
import traceback
from typing import BinaryIO

from actors.core.batch import ProviderBatch
from actors.core.data_warning import DataWarning
from actors.core.errors import ExportError, StorageUnavailableError
from actors.core.ports.storage import RemoteUpload
from actors.pipeline.provider.decode import parse_batch_response
from actors.pipeline.provider.http import ProviderConnection
from actors.pipeline.worker.protocol import (
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
from actors.pipeline.writer.xlsx_stream import XlsxStreamWriter
from actors.storage.multipart_output import MultipartOutput


def serve(requests: BinaryIO, replies: BinaryIO, fds: socket.socket) -> None:
    """Answer the parent's requests until it closes the request pipe or goes away.

    Args:
        requests, replies: the frame pipes.
        fds: the Unix socket the output descriptor arrives on.
    """
    session = WorkerSession()
    try:
        while (request := read_frame(requests)) is not None:
            write_frame(replies, session.answer(request, fds))
    except (BrokenPipeError, EOFError):
        pass  # the parent went away: nothing is waiting for an answer
    finally:
        session.discard()


def open_upload(upload: RemoteUpload) -> MultipartOutput:
    """The output that uploads ``upload`` in parts while the XLSX is written (boto3 is
    imported here, in a worker of a service that stores files in S3)."""
    from actors.storage.s3_client import S3PartUploader, open_client

    config = upload.config
    uploader = S3PartUploader(open_client(config), config.bucket, upload.key, upload.content_type)
    return MultipartOutput(uploader, config.part_size)


class WorkerSession:
    """One run's state in the worker: the output file, the writer, the batch waiting to be
    written, the Provider connection, the run's first failure.

    :meth:`answer` carries out one request. The first failure — of a request or of a
    write — is kept as :attr:`failed`; every later request is answered with it.
    """

    def __init__(self) -> None:
        self._start: Start | None = None
        self._out: BinaryIO | MultipartOutput | None = None
        self._writer: XlsxStreamWriter | None = None
        #: The decoded batch not yet written, with its 1-based number.
        self._pending: tuple[int, ProviderBatch] | None = None
        self._connection = ProviderConnection()  # keep-alive across the run's batches
        self._fetch_seconds: float | None = None  # of the Fetch being handled, once read
        #: The run's first failure, of a request or of a write.
        self.failed: Failed | None = None

    @property
    def progress(self) -> tuple[int, tuple[DataWarning, ...]]:
        """(rows written, data warnings) of the batches written so far."""
        writer = self._writer
        if writer is None:
            return 0, ()
        return writer.rows_written, tuple(writer.warnings.lines())

    def answer(self, request: Request | Reply, fds: socket.socket) -> Reply:
        """Carry out one request of the parent and return its reply (a reply read as a
        request is an unknown request: a bug, answered as one).

        Args:
            request: the frame read.
            fds: the Unix socket the Start request's descriptor arrives on.
        """
        if self.failed is not None:
            return self.failed
        try:
            if isinstance(request, Start):
                if request.upload is not None:
                    return self.start(request, None)
                # The parent sends the output file's descriptor just before the request.
                _, (out_fd,), _, _ = socket.recv_fds(fds, 1, 1)
                return self.start(request, out_fd)
            if isinstance(request, Fetch):
                return self.fetch(request)
            if failed := self._write_pending():
                return failed
            if isinstance(request, Finish):
                return Written(*self.progress)
            if isinstance(request, Close):
                return self.close(request)
            raise RuntimeError(f"unknown request {type(request).__name__}")
        except Exception as exc:
            return self.fail(request, exc)

    def start(self, request: Start, out_fd: int | None) -> Started:
        """Open the run's output: the descriptor ``out_fd`` received with the request,
        or the upload the request names (``out_fd`` ``None``)."""
        self._start = request
        if request.upload is None:
            assert out_fd is not None
            self._out = os.fdopen(out_fd, "wb")  # no truncation: an fd, not a path
        else:
            self._out = open_upload(request.upload)
        return Started(os.getpid())

    def fetch(self, request: Fetch) -> Reply:
        """Send the batch request, write the batch before it, then read, decode and check
        the answer; the batch waits to be written during the next request.

        Returns:
            :class:`Decoded`, or the :class:`Failed` of the earlier batch's write.

        Raises:
            ExportError: as :class:`ProviderConnection` and :func:`parse_batch_response`.
        """
        spec = request.spec
        self._fetch_seconds = None
        started = time.monotonic()
        try:
            self._connection.send(spec)
        except Exception:
            seconds = time.monotonic() - started
            if failed := self._write_pending():  # the earlier batch's failure comes first
                return failed
            self._fetch_seconds = seconds
            raise
        if failed := self._write_pending():
            self._connection.close()  # its answer stays unread
            return failed
        try:
            raw = self._connection.receive()
        finally:
            # From sending to the last byte, the earlier batch's write included: the
            # answer may have waited in the socket meanwhile.
            self._fetch_seconds = time.monotonic() - started
        batch = parse_batch_response(
            raw, service=spec.service, limit=request.limit, max_columns=request.max_columns
        )
        self._pending = (request.batch, batch)
        rows_written, warnings = self.progress
        return Decoded(batch.summary(), len(raw), self._fetch_seconds, rows_written, warnings)

    def _write_pending(self) -> Failed | None:
        """Type and write the batch waiting, if any; its failure (kept as :attr:`failed`)
        when the write failed, else ``None``."""
        if self._pending is None:
            return None
        number, batch = self._pending
        self._pending = None
        try:
            writer = self._writer or self._open_writer(batch)
            writer.write_rows(batch.rows, number)
        except Exception as exc:
            return self.fail(None, exc)
        return None

    def close(self, request: Close) -> Closed:
        """Finish, flush and fsync the file (every batch written).

        Raises:
            ExportError: the file cannot be finished (size limit); OSError: the disk.
        """
        writer = self._writer
        if writer is None or self._out is None:
            raise RuntimeError("close before any batch was written")
        size = writer.close()
        if isinstance(self._out, MultipartOutput):
            self._out.commit()  # before the parent's commit says the file exists
        else:
            self._out.flush()
            os.fsync(self._out.fileno())  # before the parent's commit says the file exists
        if request.note:
            writer.warnings.note(request.note)
        return Closed(size, writer.rows_written, tuple(writer.warnings.lines()))

    def fail(self, request: Request | Reply | None, exc: Exception) -> Failed:
        """The :class:`Failed` reply for ``exc``; the run's first failure is kept and
        returned from then on.

        Args:
            request: the request that failed; ``None`` for the write of a batch.
            exc: an :class:`ExportError` (the verdict), an ``OSError`` (the disk: the
                transient storage error) or anything else (a bug, printed on stderr).
        """
        if self.failed is not None:
            return self.failed
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
        # The writer's figures count the rows of a failed batch written before the error.
        rows_written, warnings = self.progress
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
        """Drop an unfinished file and the Provider connection (best effort)."""
        self._connection.close()
        if self._writer is not None:
            self._writer.discard()
        if isinstance(self._out, MultipartOutput):
            try:
                self._out.abort()  # no parts left behind (the writer may never have opened)
            except Exception:
                pass  # the reconciler aborts it by the run's key
            return
        if self._out is not None:
            try:
                self._out.close()
            except OSError:
                pass
