"""The parent's handle on one run's worker process: the run's CPU work, off the event loop.

Decoding the Provider's JSON, typing cells and encoding and compressing the XLSX take a
core each; in threads of the event-loop process they share its GIL with the API and the
lease watchdog, and the whole service used one core. So each run gets a child process
(:mod:`actors.pipeline.worker.main`) that does that work and the run's Provider requests
(their HTTP cost the event loop 5 ms of CPU per 1,000-row batch), while the parent keeps
the cursor loop and cross-batch rules, the fenced database writes, progress, metrics and
storage.

The process is started, kept ready and stopped by :mod:`actors.pipeline.worker.pool`; this
module speaks to it (:mod:`actors.pipeline.worker.protocol`) for one run.

A worker that dies on its own (SIGKILL by the OOM killer, a segfault, ``os._exit``) shows
as the end of its reply pipe: the run fails with :class:`ExportWorkerDiedError`
(transient), naming the signal or exit status and what the worker was doing, e.g.
"export worker process died (SIGKILL) while fetching batch 4 (batch 3 being written)".
"""

from __future__ import annotations

import signal
from collections import deque

import trio

from actors.core.data_warning import DataWarning
from actors.core.errors import ExportWorkerDiedError
from actors.core.ports.storage import RemoteUpload
from actors.pipeline.provider.fetch import FetchedBatch, FetchSpec
from actors.pipeline.worker.protocol import (
    EXPORT_ERRORS,
    HEADER,
    Close,
    Closed,
    Decoded,
    Failed,
    Fetch,
    Finish,
    Reply,
    Request,
    Start,
    Written,
    decode_payload,
    encode_frame,
    frame_length,
)

_READ_CHUNK = 64 * 1024


class ExportWorker:
    """The parent's handle on one run's worker process. Made by
    :func:`~actors.pipeline.worker.pool.open_export_worker`.

    The worker writes each batch it fetched behind its answer; :attr:`rows_written` and
    :attr:`warnings` follow the writes as each reply reports them, and
    :meth:`finish_writes` waits for the last one. Use it from one task at a time.

    Attributes:
        pid: the worker's process id.
        rows_written: data rows the worker has confirmed written.
        warnings: the run's data warnings as last reported, each with its kind (empty
            when none).
    """

    def __init__(self, process: trio.Process) -> None:
        self._process = process
        self.pid: int = process.pid
        self.rows_written = 0
        self.warnings: tuple[DataWarning, ...] = ()
        self._waiting: deque[str] = deque()  # what each unanswered request asks for
        self._batches_sent = 0
        self._buffer = bytearray()
        self.last_request_seconds: float | None = None

    async def start(self, max_rows: int, max_bytes: int, upload: RemoteUpload | None) -> None:
        """Send the run's ``Start`` (its reply is read by the first call that waits, so the
        process finishes starting while the first Provider request is on its way).

        Args:
            max_rows: registry ``max-rows`` of the export.
            max_bytes: largest file, bytes.
            upload: the object the worker uploads, or ``None``: it writes into the
                descriptor it was sent.
        """
        await self._send(Start(max_rows, max_bytes, upload), "starting")

    async def fetch(self, spec: FetchSpec, *, limit: int, max_columns: int) -> FetchedBatch:
        """Have the worker make one batch request, decode and check the answer; it writes
        the rows after those of the batches before (without being asked).

        The signature matches the ``fetch`` hook of
        :meth:`actors.pipeline.provider.client.ProviderClient.fetch_batch`. After a
        failure, :attr:`last_request_seconds` says how long the request took, or ``None``
        when none was sent (an earlier write failed).

        Returns:
            The batch's summary, its body size and the request's duration.

        Raises:
            ProviderUnavailableError, ProviderContractError, LimitExceededError: as
                :func:`actors.pipeline.provider.http.fetch_body` and
                :func:`actors.pipeline.provider.decode.parse_batch_response`; or an error
                of writing an earlier batch, reported first (e.g. ``LimitExceededError``
                for max-rows).
            ExportWorkerDiedError: the worker died (the message names the batch fetched
                and the one being written).
        """
        self._batches_sent += 1
        batch = self._batches_sent
        self.last_request_seconds = None
        doing = f"fetching batch {batch}"
        if batch > 1:
            doing += f" (batch {batch - 1} being written)"
        await self._send(Fetch(batch, spec, limit, max_columns), doing)
        while True:  # the Start's reply comes first, on the first call
            reply = await self._reply()
            if isinstance(reply, Decoded):
                self.last_request_seconds = reply.seconds
                return FetchedBatch(reply.summary, reply.size, reply.seconds)

    async def finish_writes(self) -> int:
        """Wait until every batch fetched is written; return the data rows written.

        Raises:
            ExportError: a write failed (e.g. ``LimitExceededError`` for max-rows or the
                file size, ``ProviderContractError`` for a value no cell can hold).
            ExportWorkerDiedError: the worker died.
        """
        await self._send(Finish(), f"writing batch {self._batches_sent}")
        while self._waiting:
            await self._reply()
        return self.rows_written

    async def close(self, note: DataWarning | None) -> int:
        """Finish, flush and fsync the file; return its size in bytes.

        Args:
            note: a run-level warning for the summary (e.g. fewer rows than announced).

        Raises:
            ExportError: the file could not be finished (size limit, disk).
            ExportWorkerDiedError: the worker died.
        """
        await self._send(Close(note), "finishing the file")
        while True:
            reply = await self._reply()
            if isinstance(reply, Closed):
                return reply.size

    async def _send(self, request: Request, doing: str) -> None:
        self._waiting.append(doing)
        try:
            await self._process.stdin.send_all(encode_frame(request))  # type: ignore[union-attr]
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            # The worker is gone. If it failed a request first, its reply says why.
            while True:
                await self._reply()

    async def _reply(self) -> Reply:
        """Read the next reply and account for it; raise a reported failure."""
        header = await self._receive_exactly(HEADER.size)
        reply = decode_payload(await self._receive_exactly(frame_length(header)))
        self._waiting.popleft()
        if isinstance(reply, Decoded | Written | Closed | Failed):
            self.rows_written = reply.rows_written
            self.warnings = reply.warnings
        if isinstance(reply, Failed):
            self.last_request_seconds = reply.seconds
            if reply.internal:
                raise RuntimeError(f"export worker failed: {reply.error}: {reply.message}")
            raise EXPORT_ERRORS[reply.error](reply.message)
        return reply  # type: ignore[return-value]

    async def _receive_exactly(self, size: int) -> bytes:
        stream = self._process.stdout
        assert stream is not None
        while len(self._buffer) < size:
            try:
                chunk = await stream.receive_some(max(_READ_CHUNK, size - len(self._buffer)))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                chunk = b""
            if not chunk:
                raise await self._death()
            self._buffer += chunk
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    async def _death(self) -> ExportWorkerDiedError:
        """The error for a worker whose reply pipe ended: how it died, and doing what."""
        with trio.move_on_after(1.0):
            await self._process.wait()
        code = self._process.returncode
        if code is None:
            how = "closed its reply pipe"
        elif code < 0:
            how = _signal_name(-code)
        else:
            how = f"exit status {code}"
        doing = self._waiting[0] if self._waiting else "between requests"
        return ExportWorkerDiedError(f"export worker process died ({how}) while {doing}")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


__all__ = ["ExportWorker"]
