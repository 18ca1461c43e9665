"""XlsxStreamWriter: typed cells read back with openpyxl, sheets, limits, cleanup.

Ported from the tests of the xlsxwriter-based writer it replaced; the three-reader checks
live in test_xlsx_readers.py.
"""

from __future__ import annotations

import io
import logging
import random
import string
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from actors.core.batch import ColumnDef, ColumnType
from actors.core.errors import (
    LimitExceededError,
    ProviderContractError,
    StorageUnavailableError,
)
from actors.pipeline.writer.capped_output import format_megabytes
from actors.pipeline.writer.xlsx_stream import XlsxStreamWriter

MB = 1024 * 1024
HOSTILE = ["=1+1", "+x", "-x", "@x", "\tx", "\rx"]

TYPED_COLUMNS = [
    ColumnDef("id", "ID", ColumnType.INTEGER, width=8),
    ColumnDef("name", "Name", ColumnType.STRING, width=30),
    ColumnDef("amount", "Amount", ColumnType.DECIMAL),
    ColumnDef("active", "Active", ColumnType.BOOLEAN, width=0),
    ColumnDef("born", "Born", ColumnType.DATE, width=12),
    ColumnDef("seen", "Seen", ColumnType.DATETIME, width=400),
]


def make_writer(out: Any, columns: list[ColumnDef], **kwargs: Any) -> XlsxStreamWriter:
    kwargs.setdefault("max_rows", 200_000)
    kwargs.setdefault("max_bytes", 50 * MB)
    return XlsxStreamWriter(out, columns, **kwargs)


def typed_row(i: int) -> dict[str, Any]:
    return {
        "id": i,
        "name": f"name {i}",
        "amount": f"{i}.25",
        "active": i % 2 == 0,
        "born": "1990-05-17",
        "seen": "2024-03-01T10:20:30+08:00",
    }


def write_file(
    path: Path, columns: list[ColumnDef], rows: list[dict[str, Any]], **kwargs: Any
) -> tuple[int, XlsxStreamWriter]:
    with path.open("wb") as out:
        writer = make_writer(out, columns, **kwargs)
        writer.write_rows(rows)
        size = writer.close()
    return size, writer


def test_typed_columns_hostile_strings_and_long_cell_read_back_as_typed_cells(
    tmp_path: Path,
) -> None:
    rows = [typed_row(i) for i in range(1, 4)]
    rows += [{"id": 100 + n, "name": text} for n, text in enumerate(HOSTILE)]
    rows.append({"id": 200, "name": "L" * 40_000})
    path = tmp_path / "out.xlsx"

    size, writer = write_file(path, TYPED_COLUMNS, rows)

    assert size == path.stat().st_size
    assert writer.rows_written == len(rows)
    assert writer.warnings.truncated == 1
    book = openpyxl.load_workbook(path, read_only=False)
    assert book.sheetnames == ["Export"]
    sheet = book["Export"]
    values = list(sheet.iter_rows(values_only=True))
    assert values[0] == ("ID", "Name", "Amount", "Active", "Born", "Seen")
    assert all(cell.font.b for cell in sheet[1])
    assert len(values) == 1 + len(rows)

    first = sheet[2]
    assert type(first[0].value) is int and first[0].value == 1
    assert first[1].value == "name 1"
    assert type(first[2].value) is float and first[2].value == 1.25
    assert first[3].value is False and sheet[3][3].value is True
    assert first[4].value == datetime(1990, 5, 17) and first[4].number_format == "yyyy-mm-dd"
    assert first[5].value == datetime(2024, 3, 1, 10, 20, 30)
    assert first[5].number_format == "yyyy-mm-dd hh:mm:ss"

    for offset, text in enumerate(HOSTILE):
        cell = sheet.cell(row=5 + offset, column=2)
        assert cell.data_type == "s"
        assert isinstance(cell.value, str) and cell.value.startswith("'")
        # CR travels as the reference &#13;, so every reader gets the character back.
        assert cell.value == "'" + text
    # Missing declared keys are blank cells.
    assert sheet.cell(row=5, column=3).value is None

    long_cell = sheet.cell(row=len(rows) + 1, column=2).value
    assert long_cell == "L" * 32_767

    assert sheet.freeze_panes == "A2"
    widths = {letter: sheet.column_dimensions[letter].width for letter in "ABCDEF"}
    # Excel stores the width plus cell padding, so allow less than one unit on top.
    for letter, expected in zip("ABCDEF", [8, 30, 16, 1, 12, 255], strict=True):
        assert expected <= widths[letter] < expected + 1, letter


def test_typed_writer_never_turns_strings_into_formulas_urls_or_numbers(tmp_path: Path) -> None:
    columns = [ColumnDef("s", "S", ColumnType.STRING)]
    rows = [{"s": "http://example.com"}, {"s": "123"}, {"s": "=SUM(A1)"}]
    path = tmp_path / "out.xlsx"
    write_file(path, columns, rows)

    sheet = openpyxl.load_workbook(path)["Export"]
    assert [sheet.cell(row=r, column=1).value for r in (2, 3, 4)] == [
        "http://example.com",
        "123",
        "'=SUM(A1)",
    ]
    assert all(sheet.cell(row=r, column=1).data_type == "s" for r in (2, 3, 4))
    assert sheet.cell(row=2, column=1).hyperlink is None


def test_rows_beyond_rows_per_sheet_continue_on_numbered_sheets_with_header(tmp_path: Path) -> None:
    columns = TYPED_COLUMNS[:2]
    rows = [{"id": i, "name": f"n{i}"} for i in range(12)]
    path = tmp_path / "out.xlsx"

    write_file(path, columns, rows, rows_per_sheet=5)

    book = openpyxl.load_workbook(path)
    assert book.sheetnames == ["Export", "Export 2", "Export 3"]
    seen: list[int] = []
    for name, count in zip(book.sheetnames, [5, 5, 2], strict=True):
        sheet = book[name]
        values = list(sheet.iter_rows(values_only=True))
        assert values[0] == ("ID", "Name")
        assert len(values) == 1 + count
        assert sheet.freeze_panes == "A2"
        seen += [row[0] for row in values[1:]]
    assert seen == list(range(12))


def test_a_sheet_whose_xml_passes_the_entry_size_bound_rolls_over_by_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A zip entry without Zip64 must stay under 4 GiB: past MAX_SHEET_XML_BYTES of sheet
    XML the next row starts a new sheet, whatever the row count. The bound is lowered to a
    few flushes' worth of XML here; every row is kept, in order, under a header each."""
    monkeypatch.setattr("actors.pipeline.writer.xlsx_stream.FLUSH_CHARS", 2_000)
    monkeypatch.setattr("actors.pipeline.writer.xlsx_stream.MAX_SHEET_XML_BYTES", 10_000)
    columns = TYPED_COLUMNS[:2]
    rows = [{"id": i, "name": f"name {i:05d}"} for i in range(600)]
    path = tmp_path / "out.xlsx"
    with path.open("wb") as out:
        writer = make_writer(out, columns)
        for start in range(0, 600, 100):  # batches: the bound is checked across them too
            writer.write_rows(rows[start : start + 100])
        writer.close()

    book = openpyxl.load_workbook(path)
    assert len(book.sheetnames) > 2
    seen: list[int] = []
    for name in book.sheetnames:
        values = list(book[name].iter_rows(values_only=True))
        assert values[0] == ("ID", "Name")
        seen += [row[0] for row in values[1:]]
    assert seen == list(range(600))
    with zipfile.ZipFile(path) as package:
        sizes = [package.getinfo(f"xl/worksheets/sheet{n}.xml").file_size for n in (1, 2)]
    # Rolled over at the first flush past the bound: at most one flush of rows more.
    assert all(10_000 < size < 10_000 + 2_000 + 1_500 for size in sizes)


def test_each_sheet_states_its_dimension_for_read_only_readers(tmp_path: Path) -> None:
    """openpyxl's read-only mode (pandas reads this way too) takes a sheet's size from its
    <dimension>, written last into the top of the streamed sheet; every CRC still holds."""
    columns = TYPED_COLUMNS[:3]
    # The last row of the second sheet has no cell: the dimension ends at the row before.
    rows = [{"id": i, "name": f"n{i}"} for i in range(7)] + [{"undeclared": 1}]
    path = tmp_path / "out.xlsx"
    write_file(path, columns, rows, rows_per_sheet=5)

    assert zipfile.ZipFile(path).testzip() is None
    book = openpyxl.load_workbook(path, read_only=True)
    try:
        dims = [(book[n].max_row, book[n].max_column) for n in book.sheetnames]
        assert [book[n].calculate_dimension() for n in book.sheetnames] == ["A1:C6", "A1:C3"]
    finally:
        book.close()
    assert dims == [(6, 3), (3, 3)]

    empty = tmp_path / "empty.xlsx"
    write_file(empty, columns, [])
    book = openpyxl.load_workbook(empty, read_only=True)
    try:
        assert book["Export"].calculate_dimension() == "A1:C1"
    finally:
        book.close()


def test_row_number_max_rows_plus_one_raises_limit_exceeded_naming_the_limit(
    tmp_path: Path,
) -> None:
    with (tmp_path / "out.xlsx").open("wb") as out:
        writer = make_writer(out, TYPED_COLUMNS, max_rows=10)
        writer.write_rows(typed_row(i) for i in range(10))
        with pytest.raises(LimitExceededError, match="export exceeds max-rows 10"):
            writer.write_rows([typed_row(10)])
        assert writer.rows_written == 10
        writer.discard()


def random_text(rng: random.Random, length: int) -> str:
    return "".join(rng.choices(string.ascii_letters + string.digits, k=length))


def test_file_over_max_bytes_fails_while_writing_and_stays_bounded_on_disk(tmp_path: Path) -> None:
    columns = [ColumnDef("s", "S", ColumnType.STRING)]
    rng = random.Random(7)
    # Random text barely compresses, so ~1.2 MB of it makes a zip well over the limit.
    rows = [{"s": random_text(rng, 1000)} for _ in range(1200)]
    max_bytes = 200_000

    unbounded_size, _ = write_file(tmp_path / "full.xlsx", columns, rows)
    assert unbounded_size > 3 * max_bytes

    path = tmp_path / "limited.xlsx"
    with path.open("wb") as out:
        writer = make_writer(out, columns, max_bytes=max_bytes)
        # Bytes flow while rows arrive: the limit stops the rows, not only close().
        with pytest.raises(LimitExceededError, match="maximum file size of 0.19 MB"):
            for start in range(0, len(rows), 100):
                writer.write_rows(rows[start : start + 100])
        out.flush()
        # The check refuses the write that would cross the limit, so not even one
        # chunk beyond max_bytes reaches the file.
        assert 0 < path.stat().st_size <= max_bytes
        with pytest.raises(RuntimeError):
            writer.close()
        writer.discard()
    assert path.stat().st_size == 0


def test_file_that_passes_max_bytes_only_in_close_fails_there(tmp_path: Path) -> None:
    """The package parts written by close() count too: a limit just above what the rows
    took fails in close() with the same error, and the file stays within the limit."""
    columns = [ColumnDef("s", "S", ColumnType.STRING)]
    rows = [{"s": f"row {i}"} for i in range(50)]
    size, _ = write_file(tmp_path / "full.xlsx", columns, rows)
    path = tmp_path / "limited.xlsx"
    with path.open("wb") as out:
        writer = make_writer(out, columns, max_bytes=size - 1)
        writer.write_rows(rows)
        with pytest.raises(LimitExceededError, match="maximum file size"):
            writer.close()
        out.flush()
        assert path.stat().st_size <= size - 1
        writer.discard()
    assert path.stat().st_size == 0


class FullDisk(io.BytesIO):
    """An output file whose disk fills up after ``room`` bytes."""

    def __init__(self, room: int) -> None:
        super().__init__()
        self.room = room

    def write(self, data: Any) -> int:
        if self.tell() + len(data) > self.room:
            raise OSError(28, "No space left on device")
        return super().write(data)


@pytest.mark.parametrize("room", [10, 2000, 6000])
def test_disk_error_while_writing_surfaces_as_storage_unavailable(room: int) -> None:
    """Wherever the disk fills up — the first header bytes, the rows, the package parts
    written by close() — the error is StorageUnavailableError and discard() cleans up."""
    out = FullDisk(room=room)
    with pytest.raises(StorageUnavailableError, match="No space left"):
        writer = make_writer(out, TYPED_COLUMNS)
        writer.write_rows(typed_row(i) for i in range(300))
        writer.close()
    if room > 10:
        writer.discard()
    assert out.getvalue() == b""


def test_file_size_limit_message_names_whole_megabytes() -> None:
    assert format_megabytes(50 * MB) == "50 MB"


def test_undeclared_fields_are_ignored_and_counted_without_a_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    columns = TYPED_COLUMNS[:2]
    rows = [{"id": i, "name": "n", "secret": "x", "extra": i} for i in range(3)]
    path = tmp_path / "out.xlsx"

    with caplog.at_level(logging.DEBUG):
        _, writer = write_file(path, columns, rows)

    assert writer.warnings.ignored_values == 6
    assert writer.warnings.distinct_undeclared_fields == 2
    assert writer.warnings.rows_with_undeclared == 3
    assert "6 values of 2 undeclared fields ignored in 3 rows" in writer.warnings.summary()
    assert caplog.records == []  # the run logs one summary; the writer logs nothing
    values = list(openpyxl.load_workbook(path)["Export"].iter_rows(values_only=True))
    assert all(len(row) == 2 for row in values)


def test_reported_input_thousands_of_undeclared_keys_log_nothing_per_key(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 8 item 3(c): 125 rows × 2,000 undeclared keys wrote 250,000 WARNING lines and
    a 2.86 MB line. Now: no line from the writer, a summary under 1 KB."""
    columns = TYPED_COLUMNS[:1]
    extra = {f"undeclared_{k:04d}_" + "x" * 1000: k for k in range(2000)}
    rows = [{"id": i, **extra} for i in range(125)]

    with caplog.at_level(logging.DEBUG):
        _, writer = write_file(tmp_path / "out.xlsx", columns, rows)

    assert caplog.records == []
    assert writer.warnings.ignored_values == 250_000
    assert len(writer.warnings.summary()) < 1000


def test_truncated_and_invalid_cells_are_counted_with_located_examples(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    columns = [ColumnDef("s", "S", ColumnType.STRING), ColumnDef("n", "N", ColumnType.INTEGER)]
    rows = [{"s": "x" * 33_000, "n": "oops"} for _ in range(20)]

    with (
        caplog.at_level(logging.DEBUG),
        (tmp_path / "out.xlsx").open("wb") as out,
    ):
        writer = make_writer(out, columns)
        writer.write_rows(rows[:10], batch=1)
        writer.write_rows(rows[10:], batch=2)
        writer.close()

    assert writer.warnings.truncated == 20
    assert writer.warnings.invalid_values == 20
    summary = writer.warnings.summary()
    assert "20 cells truncated to 32767 characters (batch 1 row 1 column 's'" in summary
    assert "20 values invalid for their column type written as text (batch 1 row 1" in summary
    # Row data never appears in logs or the summary.
    assert caplog.records == [] and "oops" not in summary


def _deep(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("9" * 40_000, "batch 2 row 3 column 'id': integer of 40000 digits is too long"),
        (_deep(100_000), "batch 2 row 3 column 'id': array value cannot be written as JSON"),
    ],
    ids=["40000-digit-integer", "nested-100000-deep"],
)
def test_a_value_no_cell_can_hold_fails_permanently_naming_batch_row_and_column(
    tmp_path: Path, value: Any, message: str
) -> None:
    """Issue 13 item 6: a Provider value that cannot be represented is a permanent
    ProviderContractError with its location, never a bare ValueError (retried as transient)."""
    with (tmp_path / "out.xlsx").open("wb") as out:
        writer = make_writer(out, TYPED_COLUMNS[:2])
        writer.write_rows([typed_row(1), typed_row(2)], batch=1)
        with pytest.raises(ProviderContractError) as info:
            writer.write_rows([typed_row(3), typed_row(4), {"id": value, "name": "x"}], batch=2)
        writer.discard()
    assert message in str(info.value)


def test_5000_digit_integer_string_is_written_as_its_exact_digits(tmp_path: Path) -> None:
    """Issue 13 item 6, reported input: 5,000 digits passed Python's int/str limit and
    raised ValueError in the writer thread; now the digits are kept as text, as Long values are."""
    digits = "7" * 5000
    path = tmp_path / "out.xlsx"
    write_file(path, TYPED_COLUMNS[:1], [{"id": digits}, {"id": "-" + digits}])
    sheet = openpyxl.load_workbook(path)["Export"]
    assert [sheet["A2"].value, sheet["A3"].value] == [digits, "-" + digits]


def test_discard_leaves_no_temp_files_and_is_safe_twice(tmp_path: Path) -> None:
    path = tmp_path / "out.xlsx"
    with path.open("wb") as out:
        writer = make_writer(out, TYPED_COLUMNS, rows_per_sheet=3)
        writer.write_rows(typed_row(i) for i in range(10))
        writer.discard()
        writer.discard()
        with pytest.raises(RuntimeError):
            writer.close()
    assert path.stat().st_size == 0


def test_close_cleans_temp_files_and_discard_after_close_keeps_the_file(tmp_path: Path) -> None:
    path = tmp_path / "out.xlsx"
    with path.open("wb") as out:
        writer = make_writer(out, TYPED_COLUMNS)
        writer.write_rows(typed_row(i) for i in range(10))
        size = writer.close()
        assert writer.close() == size
        writer.discard()
    assert path.stat().st_size == size
    assert openpyxl.load_workbook(path)["Export"].max_row == 11


def test_empty_export_still_has_the_header_row(tmp_path: Path) -> None:
    path = tmp_path / "out.xlsx"
    write_file(path, TYPED_COLUMNS, [])
    values = list(openpyxl.load_workbook(path)["Export"].iter_rows(values_only=True))
    assert values == [("ID", "Name", "Amount", "Active", "Born", "Seen")]


def test_header_titles_get_the_injection_guard(tmp_path: Path) -> None:
    path = tmp_path / "out.xlsx"
    write_file(path, [ColumnDef("a", "=cmd()", ColumnType.STRING)], [])
    assert openpyxl.load_workbook(path)["Export"]["A1"].value == "'=cmd()"


def test_duplicate_column_keys_are_rejected(tmp_path: Path) -> None:
    columns = [ColumnDef("a", "A", ColumnType.STRING), ColumnDef("a", "B", ColumnType.STRING)]
    with (tmp_path / "out.xlsx").open("wb") as out, pytest.raises(ValueError):
        make_writer(out, columns)
