"""What an export run and its worker process say to each other, and how it is framed.

The parent (:mod:`actors.pipeline.worker.handle`) writes requests to the worker's stdin;
the worker (:mod:`actors.pipeline.worker.main`) answers each request with exactly one
reply on its stdout, in request order. A frame is a 4-byte big-endian length followed by
that many bytes of a pickled message: one of the small frozen dataclasses below, nothing
else. Both ends are this package, started together, over private pipes, so pickle carries
no outside input — the worker fetches the Provider's answers itself (:class:`Fetch`) and
only ever decodes them as JSON. (Pickle rather than JSON or msgpack: Provider text can hold lone
surrogates, which those formats cannot carry and pickle can.)

Requests::

    Start(max_rows, max_bytes)              ->  Started(pid)
    Fetch(batch, spec, limit, max_columns)  ->  Decoded(summary, size, seconds,
                                                        rows_written, warnings)
    Finish()                                ->  Written(rows_written, warnings)
    Close(note)                             ->  Closed(size, rows_written, warnings)

A fetched batch is written by the worker during the next request (write-behind): the
next Fetch sends its Provider request, writes the batch, then reads the answer; the
parent's :class:`Decoded` carries the progress of the writes before it, :class:`Finish`
writes the last one. Any request may instead be answered by :class:`Failed` — a failed
write by the reply of the request it happened in. After a failure the worker answers
every later request with the same :class:`Failed`; the parent stops at the first one.

This module is imported by the worker process, so it imports neither trio nor httpx.
"""

from __future__ import annotations

import pickle
import struct
from dataclasses import dataclass
from typing import BinaryIO

from actors.core.batch import BatchSummary
from actors.core.data_warning import DataWarning
from actors.core.errors import ExportError, export_error_classes
from actors.core.ports.storage import RemoteUpload
from actors.pipeline.provider.fetch import FetchSpec

#: Frame header: payload length in bytes, unsigned 32-bit big-endian.
HEADER = struct.Struct(">I")
#: Largest frame either side accepts, bytes. A request carries at most one Provider request
#: body; a reply at most one batch's columns.
MAX_FRAME_BYTES = 256 * 1024 * 1024

#: The export errors a worker may report, by class name: ``ExportError`` and every
#: subclass. Anything else a worker reports is an internal error of the worker (a bug),
#: not a verdict on the export.
EXPORT_ERRORS: dict[str, type[ExportError]] = export_error_classes()


@dataclass(frozen=True, slots=True)
class Start:
    """Open the run. Without ``upload``, the output file's descriptor comes with it on
    the worker's Unix socket (``SCM_RIGHTS``): the XLSX is written from its current
    position, flushed and fsynced by :class:`Close`. With ``upload``, the worker uploads
    the XLSX to the object store while it writes it, and :class:`Close` completes it.

    Attributes:
        max_rows: data rows the whole export may have (registry ``max-rows``).
        max_bytes: largest XLSX file, bytes.
        upload: the object to upload, or ``None`` for a descriptor.
    """

    max_rows: int
    max_bytes: int
    upload: RemoteUpload | None = None


@dataclass(frozen=True, slots=True)
class Fetch:
    """Request one Provider batch, write the batch before it meanwhile, then decode and
    check the answer; its rows are written during the next request.

    Attributes:
        batch: 1-based batch number in the run.
        spec: the HTTP request (URL, body, headers, timeouts, body limit).
        limit: rows requested (``batch-size``).
        max_columns: column limit.
    """

    batch: int
    spec: FetchSpec
    limit: int
    max_columns: int


@dataclass(frozen=True, slots=True)
class Finish:
    """Write the last fetched batch; answered by :class:`Written`."""


@dataclass(frozen=True, slots=True)
class Close:
    """Finish the file. ``note`` is a run-level warning to add to the run's warnings, if
    any (fewer rows than announced)."""

    note: DataWarning | None


@dataclass(frozen=True, slots=True)
class Started:
    """The worker is ready; ``pid`` is its process id."""

    pid: int


@dataclass(frozen=True, slots=True)
class Decoded:
    """The batch passed every check of one answer; here is what the parent needs.

    Attributes:
        summary: the batch without its rows.
        size: body bytes received (after Content-Encoding).
        seconds: from sending the request to the last byte of the body, measured by the
            worker (``time.monotonic``); decoding is not counted. The worker writes the
            previous batch in between, so an answer that came sooner counts that write.
        rows_written: data rows in the file so far (the batches before this one that
            the writer has finished).
        warnings: the run's data warnings so far, as in :class:`Written`.
    """

    summary: BatchSummary
    size: int
    seconds: float
    rows_written: int
    warnings: tuple[DataWarning, ...]


@dataclass(frozen=True, slots=True)
class Written:
    """Every batch fetched is written. ``warnings`` are the run's data warnings so far
    (:meth:`~actors.core.xlsx.warning_counts.WarningCounts.lines`, empty when none);
    ``rows_written`` counts data rows in the file so far."""

    rows_written: int
    warnings: tuple[DataWarning, ...]


@dataclass(frozen=True, slots=True)
class Closed:
    """The file is complete and durable (fsynced, or its upload completed): ``size``
    bytes."""

    size: int
    rows_written: int
    warnings: tuple[DataWarning, ...]


@dataclass(frozen=True, slots=True)
class Failed:
    """The request failed.

    Attributes:
        error: class name of the :class:`ExportError` raised (a key of
            :data:`EXPORT_ERRORS`), or of any other exception when ``internal``.
        message: its message (already escaped by :class:`ExportError`).
        internal: a bug in the worker rather than a verdict on the export.
        rows_written: data rows written before the failure.
        warnings: data warnings before the failure, empty when none.
        seconds: for a failed :class:`Fetch` whose request was sent, its duration up to
            the error (the Provider metrics); ``None`` otherwise.
    """

    error: str
    message: str
    internal: bool
    rows_written: int
    warnings: tuple[DataWarning, ...]
    seconds: float | None = None


Request = Start | Fetch | Finish | Close
Reply = Started | Decoded | Written | Closed | Failed


def encode_frame(message: Request | Reply) -> bytes:
    """One frame: header and pickled message.

    Raises:
        ValueError: the message is larger than :data:`MAX_FRAME_BYTES`.
    """
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    if len(payload) > MAX_FRAME_BYTES:
        raise ValueError(f"frame of {len(payload)} bytes exceeds {MAX_FRAME_BYTES}")
    return HEADER.pack(len(payload)) + payload


def frame_length(header: bytes) -> int:
    """The payload length a header announces.

    Raises:
        ValueError: it is larger than :data:`MAX_FRAME_BYTES` (a corrupt stream).
    """
    (length,) = HEADER.unpack(header)
    if length > MAX_FRAME_BYTES:
        raise ValueError(f"frame header announces {length} bytes (corrupt stream)")
    return int(length)


def decode_payload(payload: bytes) -> Request | Reply:
    """The message of one frame payload."""
    message: Request | Reply = pickle.loads(payload)
    return message


def read_frame(stream: BinaryIO) -> Request | Reply | None:
    """Blocking read of one frame (the worker's side); ``None`` at a clean end of stream.

    Raises:
        EOFError: the stream ended inside a frame.
        ValueError: a corrupt header.
    """
    header = stream.read(HEADER.size)
    if not header:
        return None
    if len(header) < HEADER.size:
        raise EOFError("stream ended inside a frame header")
    length = frame_length(header)
    payload = stream.read(length)
    if len(payload) < length:
        raise EOFError("stream ended inside a frame")
    return decode_payload(payload)


def write_frame(stream: BinaryIO, message: Request | Reply) -> None:
    """Blocking write of one frame, flushed (the worker's side)."""
    stream.write(encode_frame(message))
    stream.flush()
