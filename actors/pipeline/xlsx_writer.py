"""Streaming XLSX writer for one export run (§11 "通用 XLSX Writer").

Synchronous and CPU-bound on purpose: the pipeline runs it in a worker thread through
``trio.to_thread.run_sync`` so lease renewals and the API never wait on encoding
(DESIGN §7). One writer per run::

    writer = XlsxExportWriter(out, columns, max_rows=..., max_bytes=..., abort=event)
    try:
        for batch in batches:
            writer.write_rows(batch.rows)
        size = writer.close()
    except BaseException:
        writer.discard()
        raise

Two gates keep the disk bounded (§11): ``max_rows`` bounds xlsxwriter's temporary row
files while rows arrive, and a counting stream around ``out`` stops the final zip the
moment it would pass ``max_bytes``, so the file on disk never exceeds the limit.
Disk errors (``OSError``, xlsxwriter's ``FileCreateError``) leave as
``StorageUnavailableError`` so the caller decides from the error class alone. A value that
no cell can represent, or that makes the conversion raise at all, leaves as a permanent
``ProviderContractError`` naming the batch, row and column — never as a bare Python error
that the consumer would retry as transient.

The writer logs nothing about the data: truncated cells, invalid values and undeclared
fields are counted in :attr:`XlsxExportWriter.warnings` (a few examples each) and the run
logs one summary line (§11 "记 WARN", without one line per cell or key).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, BinaryIO

import xlsxwriter
from xlsxwriter.exceptions import FileCreateError

from actors.core.cells import text_cell, to_cell
from actors.core.data_warnings import DataWarnings, cell_location
from actors.core.errors import (
    ExportAbortedError,
    LimitExceededError,
    ProviderContractError,
    StorageUnavailableError,
)
from actors.core.models import ColumnDef
from actors.core.text import quote_outside

#: Data rows one worksheet can hold: Excel's 1048576 rows minus the header (§11).
EXCEL_MAX_DATA_ROWS = 1_048_575
EXCEL_MAX_COLUMNS = 16_384
EXCEL_MAX_SHEET_NAME = 31
DEFAULT_COLUMN_WIDTH = 16
DATE_FORMAT = "yyyy-mm-dd"
DATETIME_FORMAT = "yyyy-mm-dd hh:mm:ss"
#: Rows between two checks of the abort event; the counting stream checks on every write.
ABORT_CHECK_EVERY = 1000
_MB = 1024 * 1024
#: Errors that converting or writing one Provider value may raise besides ours: Python's
#: int/str digit limit, a float overflow, deep nesting, an unencodable character.
_VALUE_ERRORS = (ValueError, TypeError, OverflowError, RecursionError, UnicodeError)


def format_megabytes(limit_bytes: int) -> str:
    """``52428800`` -> ``"50 MB"``; a limit that is not whole MB also names the bytes."""
    if limit_bytes % _MB == 0:
        return f"{limit_bytes // _MB} MB"
    return f"{limit_bytes / _MB:.2f} MB ({limit_bytes} bytes)"


class _CountingStream:
    """Write-side wrapper around ``out`` that enforces the file-size limit as bytes flow.

    zipfile seeks back to patch local headers, so the size is the high-water mark of the
    position, not the sum of writes. A write that would pass the limit is refused before
    it reaches ``out``. After the first refusal, abort or write error the stream is *dead*:
    further writes and seeks are accepted but go nowhere, so zipfile's cleanup code (and
    its ``__del__``) cannot raise a second error over the first or touch ``out`` again.
    """

    def __init__(self, out: BinaryIO, max_bytes: int, abort: threading.Event | None) -> None:
        self._out = out
        self._max_bytes = max_bytes
        self._abort = abort
        self.start = out.tell()  # position of ``out`` where the XLSX begins
        self._pos = self._high = self.start
        self.failure: BaseException | None = None

    @property
    def size(self) -> int:
        """Bytes of output so far: the high-water mark relative to the start position."""
        return self._high - self.start

    def write(self, data: bytes) -> int:
        length = len(data)
        if self.failure is not None:
            self._pos += length
            return length
        if self._abort is not None and self._abort.is_set():
            self._fail(ExportAbortedError("export aborted: lease lost"))
        if self._pos + length - self.start > self._max_bytes:
            self._fail(
                LimitExceededError(
                    f"file exceeds the maximum file size of {format_megabytes(self._max_bytes)}"
                )
            )
        try:
            self._pos += self._out.write(data)
        except BaseException as exc:  # e.g. disk full: go dead too, keep the first error
            self.failure = exc
            raise
        self._high = max(self._high, self._pos)
        return length

    def _fail(self, error: BaseException) -> None:
        self.failure = error
        raise error

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if self.failure is not None:
            if whence == os.SEEK_SET:
                self._pos = offset
            elif whence == os.SEEK_CUR:
                self._pos += offset
            else:
                self._pos = self._high + offset
            return self._pos
        self._pos = self._out.seek(offset, whence)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def flush(self) -> None:
        if self.failure is None:
            self._out.flush()


class XlsxExportWriter:
    """Writes declared columns of Provider rows into one typed, streamed XLSX (§11).

    xlsxwriter runs in ``constant_memory`` mode (one row in memory, rows spooled to a
    private temporary directory) with every string-to-formula/url/number conversion off,
    and only the typed ``write_*`` calls are used (DESIGN §7), so hostile text stays text.
    """

    def __init__(
        self,
        out: BinaryIO,
        columns: Sequence[ColumnDef],
        *,
        max_rows: int,
        max_bytes: int,
        abort: threading.Event | None = None,
        rows_per_sheet: int = EXCEL_MAX_DATA_ROWS,
        sheet_name: str = "Export",
        tmpdir: str | None = None,
    ) -> None:
        """Open the workbook and write the header of the first sheet.

        Args:
            out: seekable binary file opened by the caller; the XLSX is written from its
                current position during :meth:`close`. The caller closes and deletes it.
            columns: the declared columns, in sheet order; keys must be unique.
            max_rows: data rows allowed in the whole export (registry ``max-rows``).
            max_bytes: maximum size of the XLSX file in bytes (e.g. 50 MB, §11).
            abort: set by the lease watchdog when the lease is lost; checked every
                :data:`ABORT_CHECK_EVERY` rows and on every write to ``out``.
            rows_per_sheet: data rows per worksheet (1..1048575) before the next sheet.
            sheet_name: name of the first sheet; later ones are "<name> 2", "<name> 3", ….
            tmpdir: directory for temporary files; a private subdirectory is made there.

        Raises:
            ValueError: no columns, duplicate keys, or a limit argument out of range.
            LimitExceededError: more columns than Excel allows.
            StorageUnavailableError: the temporary directory cannot be created.
        """
        if not columns:
            raise ValueError("at least one column is required")
        keys = [column.key for column in columns]
        if len(set(keys)) != len(keys):
            raise ValueError("column keys must be unique")
        if len(columns) > EXCEL_MAX_COLUMNS:
            raise LimitExceededError(
                f"export exceeds the maximum of {EXCEL_MAX_COLUMNS} columns per sheet"
            )
        if max_rows < 0 or max_bytes <= 0:
            raise ValueError("max_rows must be >= 0 and max_bytes > 0")
        if not 1 <= rows_per_sheet <= EXCEL_MAX_DATA_ROWS:
            raise ValueError(f"rows_per_sheet must be in 1..{EXCEL_MAX_DATA_ROWS}")
        if not sheet_name or len(sheet_name) > EXCEL_MAX_SHEET_NAME:
            raise ValueError(f"sheet_name must have 1..{EXCEL_MAX_SHEET_NAME} characters")

        self._columns = tuple(columns)
        self._keys = frozenset(keys)
        self._max_rows = max_rows
        self._max_bytes = max_bytes
        self._abort = abort
        self._rows_per_sheet = rows_per_sheet
        self._sheet_name = sheet_name
        self._out = out

        self._rows_written = 0
        self._sheet_rows = 0
        self._sheet_count = 0
        self._warnings = DataWarnings()
        self._state = "open"  # open -> closed | discarded; "broken" after a failed write
        self._size: int | None = None

        # A private directory, so discard() can remove every temp file xlsxwriter made,
        # including packager files left behind when close() is interrupted.
        try:
            self._tmpdir = tempfile.mkdtemp(prefix="xlsx-export-", dir=tmpdir)
        except OSError as exc:
            raise StorageUnavailableError(f"cannot create xlsx temp directory: {exc}") from exc
        try:
            self._stream = _CountingStream(out, max_bytes, abort)
            self._workbook = xlsxwriter.Workbook(
                self._stream,
                {
                    "constant_memory": True,
                    "strings_to_formulas": False,
                    "strings_to_urls": False,
                    "strings_to_numbers": False,
                    "tmpdir": self._tmpdir,
                },
            )
            self._bold = self._workbook.add_format({"bold": True})
            self._date_format = self._workbook.add_format({"num_format": DATE_FORMAT})
            self._datetime_format = self._workbook.add_format({"num_format": DATETIME_FORMAT})
            self._widths = tuple(
                DEFAULT_COLUMN_WIDTH if c.width is None else min(max(c.width, 1), 255)
                for c in self._columns
            )
            self._headers = tuple(text_cell(column.title).value for column in self._columns)
            self._sheet = self._new_sheet()
        except BaseException:
            self._release()
            raise

    @property
    def rows_written(self) -> int:
        """Data rows written so far (headers excluded)."""
        return self._rows_written

    @property
    def warnings(self) -> DataWarnings:
        """The warning counters so far (live; the run logs their summary once)."""
        return self._warnings

    def write_rows(self, rows: Iterable[Mapping[str, Any]], batch: int | None = None) -> None:
        """Append rows; only declared columns are written, in declared order.

        Args:
            rows: mappings from column key to raw JSON value; missing keys are blank,
                undeclared keys are ignored and counted (§11).
            batch: 1-based number of the Provider batch these rows came in, named in
                warnings and errors; ``None`` when the caller does not batch.

        Raises:
            LimitExceededError: the row would be number ``max_rows + 1``, or a cell falls
                outside Excel's grid.
            ProviderContractError: a value cannot be represented in a cell (an integer
                longer than a cell, nesting too deep …); the message names the batch, the
                row within it and the column key.
            ExportAbortedError: the abort event is set.
            StorageUnavailableError: a temporary row file could not be written.
            RuntimeError: the writer is closed, discarded or broken by an earlier error.
        """
        if self._state != "open":
            raise RuntimeError(f"writer is {self._state}")
        try:
            self._write_rows(rows, batch)
        except BaseException as exc:
            self._state = "broken"
            if isinstance(exc, OSError):
                raise StorageUnavailableError(f"writing xlsx rows failed: {exc}") from exc
            raise

    def _write_rows(self, rows: Iterable[Mapping[str, Any]], batch: int | None) -> None:
        columns = tuple(enumerate(self._columns))
        keys = self._keys
        abort = self._abort
        warnings = self._warnings
        for index, row in enumerate(rows, 1):
            if self._rows_written >= self._max_rows:
                raise LimitExceededError(f"export exceeds max-rows {self._max_rows}")
            if abort is not None and self._rows_written % ABORT_CHECK_EVERY == 0:
                if abort.is_set():
                    raise ExportAbortedError("export aborted: lease lost")
            if self._sheet_rows == self._rows_per_sheet:
                self._sheet = self._new_sheet()
            if not row.keys() <= keys:
                warnings.undeclared_fields(row.keys() - keys)
            sheet = self._sheet
            r = self._sheet_rows + 1
            # Row number in messages: within the batch when there is one, else in the export.
            label = index if batch is not None else self._rows_written + 1
            column = self._columns[0]
            try:
                for c, column in columns:
                    cell = to_cell(column, row.get(column.key))
                    kind = cell.kind
                    if kind == "string":
                        rc = sheet.write_string(r, c, cell.value)
                    elif kind == "number":
                        rc = sheet.write_number(r, c, cell.value)
                    elif kind == "datetime":
                        fmt = self._date_format if cell.is_date_only else self._datetime_format
                        rc = sheet.write_datetime(r, c, cell.value, fmt)
                    elif kind == "boolean":
                        rc = sheet.write_boolean(r, c, cell.value)
                    else:
                        rc = sheet.write_blank(r, c, None)
                    if rc:
                        self._check_rc(rc, r, c, batch, label)
                    if cell.warning is not None:
                        if cell.truncated:
                            warnings.truncated_cell(batch, label, column.key)
                        if cell.invalid:
                            warnings.invalid_value(batch, label, column.key)
            except ProviderContractError as exc:
                where = cell_location(batch, label, column.key)
                raise ProviderContractError(f"{where}: {exc}") from None
            except _VALUE_ERRORS as exc:
                # Whatever else a hostile value makes Python raise is the same class of
                # fault: the Provider sent something we cannot write. Permanent, located.
                where = cell_location(batch, label, column.key)
                raise ProviderContractError(
                    f"{where}: value cannot be written "
                    f"({type(exc).__name__}: {quote_outside(str(exc), 120)})"
                ) from None
            self._sheet_rows += 1
            self._rows_written += 1

    def close(self) -> int:
        """Finish the XLSX into ``out`` and release the temporary files.

        The size limit and the abort event are checked on every write to ``out``, so an
        over-limit file stops growing at ``max_bytes``.

        Returns:
            The size of the XLSX in bytes. A second call returns the same size.

        Raises:
            LimitExceededError: the file would exceed ``max_bytes``.
            ExportAbortedError: the abort event was set while writing.
            StorageUnavailableError: ``out`` or a temporary file could not be written.
            RuntimeError: the writer was discarded or broken by an earlier error.
        """
        if self._state == "closed":
            assert self._size is not None
            return self._size
        if self._state != "open":
            raise RuntimeError(f"writer is {self._state}")
        self._state = "broken"  # until the workbook is really out; discard() then cleans up
        try:
            self._workbook.close()
            self._stream.flush()
        except BaseException as exc:
            # Whatever xlsxwriter or zipfile made of it, the first failure is what escapes.
            failure = self._stream.failure or exc
            if isinstance(failure, (OSError, FileCreateError)):
                raise StorageUnavailableError(f"writing the xlsx failed: {failure}") from exc
            if failure is not exc:
                raise failure from exc
            raise
        if self._stream.failure is not None:
            raise self._stream.failure  # swallowed somewhere inside: still fail the run
        self._size = self._stream.size
        self._state = "closed"
        self._release()
        return self._size

    def discard(self) -> None:
        """Give up: close xlsxwriter's temp files, delete them, and drop partial output.

        Best effort and idempotent; never raises for cleanup problems. After a successful
        :meth:`close` it changes nothing in ``out``.
        """
        if self._state == "closed":
            return
        truncate = self._state != "discarded"
        self._state = "discarded"
        self._release()
        if truncate:
            # "Produce nothing": the caller deletes the file, but do not leave a partial
            # zip of up to max_bytes lying around until then.
            try:
                self._out.seek(self._stream.start)
                self._out.truncate()
            except (OSError, ValueError, AttributeError):
                pass

    def _release(self) -> None:
        workbook = getattr(self, "_workbook", None)
        if workbook is not None:
            for sheet in workbook.worksheets():
                handle = getattr(sheet, "row_data_fh", None)
                if handle is not None and not handle.closed:
                    try:
                        handle.close()
                    except OSError:
                        pass
        shutil.rmtree(self._tmpdir, ignore_errors=True)

    def _new_sheet(self) -> Any:
        self._sheet_count += 1
        if self._sheet_count == 1:
            name = self._sheet_name
        else:
            suffix = f" {self._sheet_count}"
            name = self._sheet_name[: EXCEL_MAX_SHEET_NAME - len(suffix)] + suffix
        sheet = self._workbook.add_worksheet(name)
        for c, (title, width) in enumerate(zip(self._headers, self._widths, strict=True)):
            sheet.set_column(c, c, width)
            rc = sheet.write_string(0, c, title, self._bold)
            if rc:
                self._check_rc(rc, 0, c, None, 0)
        sheet.freeze_panes(1, 0)
        self._sheet_rows = 0
        return sheet

    def _check_rc(self, rc: int, row: int, col: int, batch: int | None, label: int) -> None:
        if rc == -1:
            raise LimitExceededError(
                f"cell at row {row + 1}, column {col + 1} is outside Excel's grid"
            )
        if rc == -2:
            # cells.py already truncates by UTF-16 units; count it if xlsxwriter disagrees.
            self._warnings.truncated_cell(batch, label, self._columns[col].key)
