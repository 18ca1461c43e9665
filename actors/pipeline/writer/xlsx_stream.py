"""Streaming XLSX writer for one export run (the product's generic XLSX writer), built for speed.

One sheet XML stream is written straight into a deflated zip entry of ``out`` while rows
arrive (:mod:`actors.pipeline.writer.zip_stream`); nothing is spooled to temporary files and
memory stays flat in rows. The sheet's ``<dimension>`` (which openpyxl's read-only mode and
others use for the sheet's size) sits at the top of the sheet but is known only at the
end: it is written uncompressed and patched in place when the sheet ends. Cell typing
follows :mod:`actors.core.xlsx.cells`; the cell text and the package parts come from
:mod:`actors.core.xlsx.cell_xml` (per-column formatters chosen once from the column
definitions). Synchronous and CPU-bound: callers run it off the event loop. One writer
per run::

    writer = XlsxStreamWriter(out, columns, max_rows=..., max_bytes=...)
    try:
        for number, batch in enumerate(batches, 1):
            writer.write_rows(batch.rows, number)
        size = writer.close()
    except BaseException:
        writer.discard()
        raise

Why our own writer and not a library — measured with ``deploy/bench/bench_xlsx_writer.py``
over the same 200,000 pre-made rows of the demo Provider's 8 columns, in batches of 500,
one process on this 2-core machine (load average 0.5-0.7 during the run):

=====================================  ===========  =================  =======  =========
writer                                  rows/CPU-s   × xlsxwriter (CPU)  file MB  +peak MiB
=====================================  ===========  =================  =======  =========
this writer, ISA-L deflate level 1         105,545              5.3      14.4       1.7
this writer, zlib deflate level 6           64,725              3.2      11.3       0.2
xlsxwriter ``constant_memory`` loop         20,017              1.0      11.3       1.7
openpyxl ``write_only``                     12,136              0.61     11.2       4.6
=====================================  ===========  =================  =======  =========

An earlier run, under load and with zlib's level 1 for this writer, measured the
Rust-backed rustpy-xlsxwriter 0.8 at 7.9 × xlsxwriter and this writer at 6.7 ×. It is
about as fast, but it takes a whole sheet of records at once (no way to append batch after
batch as they arrive), holds far more memory (+82 MiB at 200k rows where the streaming
writers add under 5 MiB), refuses a cell over 32,767 characters instead of cutting it,
and is a young 0.x package. xlsxwriter and openpyxl spend their time in per-cell Python
calls. This writer types each cell with a formatter chosen once per column and writes
sheet XML text directly. ISA-L's deflate (:mod:`actors.pipeline.writer.zip_stream`) makes files
~27 % larger than zlib's level 6 (and than xlsxwriter's) but compresses ~12 × faster;
levels 4-9 (zlib) are one constant away, :data:`COMPRESS_LEVEL`, if file size matters more
than speed. Inline strings (``t="inlineStr"``) beat a shared-string table: no table in
memory, no second pass.

Package subset (the parts written, in this order): ``xl/worksheets/sheetN.xml`` per sheet,
then ``xl/workbook.xml``, ``xl/_rels/workbook.xml.rels``, ``xl/styles.xml``, ``_rels/.rels``
and ``[Content_Types].xml``: the least a spreadsheet reader needs. Omitted: the
shared-string table ``xl/sharedStrings.xml`` (cells are inline strings, above),
``docProps/core.xml`` and ``docProps/app.xml`` (optional document properties; nothing
reads them), ``xl/theme/theme1.xml`` (optional; the font colour ``theme="1"`` in the styles
then comes from the reader's default theme) and ``xl/calcChain.xml`` (no formulas are written).

Guards, the same as the xlsxwriter-based writer had: formula-injection prefix and
32,767-character truncation (``cells``), characters XML forbids removed, roll-over to a
new sheet with the header repeated after 1,048,575 data rows, frozen header row, column
widths, ``max_rows``, and ``max_bytes`` enforced while bytes flow: a
counting stream refuses the write that would pass the limit, so the file on disk never
exceeds it. Disk errors leave as ``StorageUnavailableError``; a value that no cell can
represent (or that makes conversion raise at all) as a permanent ``ProviderContractError``
naming the batch, row and column. The writer logs nothing about the data: truncated
cells, invalid values and undeclared fields are counted in :attr:`warnings`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any

from actors.core.batch import ColumnDef
from actors.core.errors import (
    ColumnLimitError,
    ProviderContractError,
    RowLimitError,
    StorageUnavailableError,
)
from actors.core.text import quote_outside
from actors.core.xlsx.cell_xml import cell_xml, column_formatter, column_letter
from actors.core.xlsx.cells import text_cell, to_cell
from actors.core.xlsx.package_xml import (
    ROOT_RELS_XML,
    SHEET_TAIL,
    STYLE_FIRST_NUMBER_FORMAT,
    content_types_xml,
    sheet_head,
    sheet_path,
    sheet_prefix,
    styles_xml,
    workbook_rels_xml,
    workbook_xml,
)
from actors.core.xlsx.warning_counts import WarningCounts, cell_location
from actors.pipeline.writer.capped_output import CappedOutput, Output
from actors.pipeline.writer.zip_stream import ZipEntry, ZipStream

#: Data rows one worksheet can hold: Excel's 1048576 rows minus the header.
EXCEL_MAX_DATA_ROWS = 1_048_575
EXCEL_MAX_COLUMNS = 16_384
EXCEL_MAX_SHEET_NAME = 31
DEFAULT_COLUMN_WIDTH = 16
#: Deflate level of every zip entry: ISA-L's level 1, the measured best trade of speed for
#: size (0..3 are ISA-L's, 4..9 zlib's: :mod:`actors.pipeline.writer.zip_stream`).
COMPRESS_LEVEL = 1
#: Characters of sheet XML gathered before they are encoded and deflated in one call.
FLUSH_CHARS = 256 * 1024
#: Uncompressed bytes after which the next row starts a new sheet: a zip entry written
#: without Zip64 headers (which some readers refuse) must stay under 4 GiB.
MAX_SHEET_XML_BYTES = 3_900_000_000
#: Errors that converting one Provider value may raise besides ours: Python's int/str
#: digit limit, a float overflow, deep nesting, an unencodable character.
_VALUE_ERRORS = (ValueError, TypeError, OverflowError, RecursionError, UnicodeError)


class _State(StrEnum):  # OPEN -> CLOSED | DISCARDED; BROKEN after a failed write
    OPEN = "open"
    BROKEN = "broken"
    CLOSED = "closed"
    DISCARDED = "discarded"


class XlsxStreamWriter:
    """Writes declared columns of Provider rows into one typed, streamed XLSX.

    Bytes reach ``out`` while rows are written, so ``write_rows`` may already raise the
    size-limit and disk errors.
    """

    def __init__(
        self,
        out: Output,
        columns: Sequence[ColumnDef],
        *,
        max_rows: int,
        max_bytes: int,
        rows_per_sheet: int = EXCEL_MAX_DATA_ROWS,
        sheet_name: str = "Export",
        compress_level: int = COMPRESS_LEVEL,
    ) -> None:
        """Start the zip in ``out`` and write the header of the first sheet.

        Args:
            out: seekable binary file opened by the caller; the XLSX is written from its
                current position. The caller closes and deletes it.
            columns: the declared columns, in sheet order; keys must be unique.
            max_rows: data rows allowed in the whole export (registry ``max-rows``).
            max_bytes: maximum size of the XLSX file in bytes (e.g. 50 MB).
            rows_per_sheet: data rows per worksheet (1..1048575) before the next sheet.
            sheet_name: name of the first sheet; later ones are "<name> 2", "<name> 3", ….
            compress_level: deflate level of the zip entries: 0..3 ISA-L, 4..9 zlib
                (benchmarks compare).

        Raises:
            ValueError: no columns, duplicate keys, or a limit argument out of range.
            LimitExceededError: more columns than Excel allows.
            StorageUnavailableError: ``out`` cannot be written.
        """
        if not columns:
            raise ValueError("at least one column is required")
        keys = [column.key for column in columns]
        if len(set(keys)) != len(keys):
            raise ValueError("column keys must be unique")
        if len(columns) > EXCEL_MAX_COLUMNS:
            raise ColumnLimitError(
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
        self._rows_per_sheet = rows_per_sheet
        self._sheet_name = sheet_name
        self._out = out
        # The columns' number formats, each once, and the style each column uses.
        self._number_formats = tuple(
            dict.fromkeys(c.number_format for c in self._columns if c.number_format)
        )
        styles = [
            None
            if column.number_format is None
            else STYLE_FIRST_NUMBER_FORMAT + self._number_formats.index(column.number_format)
            for column in self._columns
        ]
        # Per column, chosen once: key, fast formatter, column letter, definition, style.
        self._plan = tuple(
            (column.key, column_formatter(column, styles[c]), column_letter(c), column, styles[c])
            for c, column in enumerate(self._columns)
        )
        self._widths = tuple(
            DEFAULT_COLUMN_WIDTH if c.width is None else min(max(c.width, 1), 255)
            for c in self._columns
        )
        self._headers = tuple(text_cell(column.title).value for column in self._columns)

        self._rows_written = 0
        self._sheet_rows = 0
        self._sheet_names: list[str] = []
        self._sheet_bytes = 0
        self._warnings = WarningCounts()
        self._state = _State.OPEN
        self._size: int | None = None
        self._entry: ZipEntry | None = None
        self._last_row = 1  # last row of the current sheet with a cell (1: the header)

        self._stream = CappedOutput(out, max_bytes)
        self._zip = ZipStream(self._stream, level=compress_level, modified=datetime.now())
        try:
            self._new_sheet()
        except BaseException as exc:
            self._state = _State.BROKEN
            self._raise_translated(exc)
            raise
        finally:
            if self._state != _State.OPEN:
                self.discard()  # the caller never gets this writer to discard it

    @property
    def rows_written(self) -> int:
        """Data rows written so far (headers excluded)."""
        return self._rows_written

    @property
    def warnings(self) -> WarningCounts:
        """The warning counters so far (live; the run logs their summary once)."""
        return self._warnings

    def write_rows(self, rows: Iterable[Mapping[str, Any]], batch: int | None = None) -> None:
        """Append rows; only declared columns are written, in declared order.

        Args:
            rows: mappings from column key to raw JSON value; missing keys are blank,
                undeclared keys are ignored and counted.
            batch: 1-based number of the Provider batch these rows came in, named in
                warnings and errors; ``None`` when the caller does not batch.

        Raises:
            LimitExceededError: the row would be number ``max_rows + 1``, or the file
                would exceed ``max_bytes``.
            ProviderContractError: a value cannot be represented in a cell (an integer
                longer than a cell, nesting too deep …); the message names the batch, the
                row within it and the column key.
            StorageUnavailableError: ``out`` could not be written.
            RuntimeError: the writer is closed, discarded or broken by an earlier error.
        """
        if self._state != _State.OPEN:
            raise RuntimeError(f"writer is {self._state}")
        try:
            self._write_rows(rows, batch)
        except BaseException as exc:
            self._state = _State.BROKEN
            self._raise_translated(exc)
            raise

    def _write_rows(self, rows: Iterable[Mapping[str, Any]], batch: int | None) -> None:
        plan = self._plan
        keys = self._keys
        warnings = self._warnings
        max_rows = self._max_rows
        rows_per_sheet = self._rows_per_sheet
        buffer: list[str] = []
        append = buffer.append
        buffered = 0
        for index, row in enumerate(rows, 1):
            written = self._rows_written
            if written >= max_rows:
                raise RowLimitError(f"export exceeds max-rows {max_rows}")
            if self._sheet_rows == rows_per_sheet or self._sheet_bytes > MAX_SHEET_XML_BYTES:
                self._flush(buffer)
                buffered = 0
                self._new_sheet()
            if not row.keys() <= keys:
                warnings.undeclared_fields(row.keys() - keys)
            get = row.get
            r = str(self._sheet_rows + 2)  # 1-based, after the header row
            parts = [f'<row r="{r}">']
            key = plan[0][0]
            try:
                for key, fast, letter, column, style in plan:
                    value = get(key)
                    if value is None:
                        continue
                    tail = fast(value)
                    if tail is None:
                        cell = to_cell(column, value)
                        tail = cell_xml(cell, style)
                        if cell.warning is not None:
                            # Row number in messages: within the batch when there is one.
                            label = index if batch is not None else written + 1
                            if cell.truncated:
                                warnings.truncated_cell(batch, label, key)
                            if cell.invalid:
                                warnings.invalid_value(batch, label, key)
                    if tail:
                        parts.append(f'<c r="{letter}{r}"{tail}')
            except ProviderContractError as exc:
                label = index if batch is not None else written + 1
                raise ProviderContractError(f"{cell_location(batch, label, key)}: {exc}") from None
            except _VALUE_ERRORS as exc:
                # Whatever else a hostile value makes Python raise is the same class of
                # fault: the Provider sent something we cannot write. Permanent, located.
                label = index if batch is not None else written + 1
                raise ProviderContractError(
                    f"{cell_location(batch, label, key)}: value cannot be written "
                    f"({type(exc).__name__}: {quote_outside(str(exc), 120)})"
                ) from None
            if len(parts) > 1:  # a row of blanks is no row at all, as in xlsxwriter
                self._last_row = self._sheet_rows + 2
                parts.append("</row>")
                text = "".join(parts)
                append(text)
                buffered += len(text)
                if buffered >= FLUSH_CHARS:
                    self._flush(buffer)
                    buffered = 0
            self._sheet_rows += 1
            self._rows_written = written + 1
        self._flush(buffer)

    def _flush(self, buffer: list[str]) -> None:
        if buffer:
            data = "".join(buffer).encode("utf-8")
            buffer.clear()
            self._write(data)

    def _write(self, data: bytes) -> None:
        assert self._entry is not None
        self._entry.write(data)
        self._sheet_bytes = self._entry.uncompressed_size

    def close(self) -> int:
        """Finish the sheet and the package parts and return the size of the XLSX.

        Returns:
            The size of the XLSX in bytes. A second call returns the same size.

        Raises:
            LimitExceededError: the file would exceed ``max_bytes``.
            StorageUnavailableError: ``out`` could not be written.
            RuntimeError: the writer was discarded or broken by an earlier error.
        """
        if self._state == _State.CLOSED:
            assert self._size is not None
            return self._size
        if self._state != _State.OPEN:
            raise RuntimeError(f"writer is {self._state}")
        self._state = _State.BROKEN  # until the zip is really out; discard() then cleans up
        try:
            self._end_sheet()
            count = len(self._sheet_names)
            for name, text in (
                ("xl/workbook.xml", workbook_xml(self._sheet_names)),
                ("xl/_rels/workbook.xml.rels", workbook_rels_xml(count)),
                ("xl/styles.xml", styles_xml(self._number_formats)),
                ("_rels/.rels", ROOT_RELS_XML),
                ("[Content_Types].xml", content_types_xml(count)),
            ):
                self._zip.writestr(name, text)
            self._zip.close()
            self._stream.flush()
        except BaseException as exc:
            self._raise_translated(exc)
            raise
        if self._stream.failure is not None:
            raise self._stream.failure  # swallowed somewhere inside: still fail the run
        self._size = self._stream.size
        self._state = _State.CLOSED
        return self._size

    def discard(self) -> None:
        """Give up: stop writing and drop the partial output from ``out``.

        Best effort and idempotent; never raises for cleanup problems. After a successful
        :meth:`close` it changes nothing in ``out``.
        """
        if self._state in (_State.CLOSED, _State.DISCARDED):
            return
        self._state = _State.DISCARDED
        self._stream.kill()  # whatever still holds the stream now writes nowhere
        self._entry = None
        # "Produce nothing": the caller deletes the file, but do not leave a partial zip
        # of up to max_bytes lying around until then.
        try:
            self._out.seek(self._stream.start)
            self._out.truncate()
        except (OSError, ValueError, AttributeError):
            pass

    def _raise_translated(self, exc: BaseException) -> None:
        """Raise what ``exc`` means for the caller, or return to let it propagate as is.

        The stream's first failure wins over what the zip writer made of it afterwards, and disk
        errors (``OSError``) become ``StorageUnavailableError``.
        """
        failure = self._stream.failure or exc
        if isinstance(failure, OSError):
            raise StorageUnavailableError(f"writing the xlsx failed: {failure}") from exc
        if failure is not exc:
            raise failure from exc

    def _end_sheet(self) -> None:
        if self._entry is not None:
            self._write(SHEET_TAIL.encode("utf-8"))
            # Now the last row is known: the <dimension> at the top gets it.
            self._entry.close(sheet_prefix(len(self._columns), self._last_row).encode())
            self._entry = None

    def _new_sheet(self) -> None:
        self._end_sheet()
        number = len(self._sheet_names) + 1
        if number == 1:
            name = self._sheet_name
        else:
            suffix = f" {number}"
            name = self._sheet_name[: EXCEL_MAX_SHEET_NAME - len(suffix)] + suffix
        self._sheet_names.append(name)
        prefix = sheet_prefix(len(self._columns), 1).encode()
        self._entry = self._zip.open(sheet_path(number), prefix)
        self._sheet_bytes = 0
        self._sheet_rows = 0
        self._last_row = 1
        self._write(sheet_head(self._widths, self._headers, selected=number == 1).encode())
