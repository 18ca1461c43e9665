"""One XLSX from XlsxStreamWriter, read by three independent readers (issue 9 item 2).

openpyxl (Python, checks cell types, values and number formats), python-calamine (the
Rust calamine crate) and LibreOffice headless (``soffice --convert-to csv``, every sheet)
must all accept the same file and agree with what the rows meant: typed cells (int,
decimal, float, bool, date, datetime, text), hostile strings (formula prefixes, control
characters, emoji, right-to-left text and bidi overrides, markup, Excel's own ``_xHHHH_``
escape), cells cut to 32,767 characters, and a file that rolls over onto five sheets
(a small ``rows_per_sheet`` keeps that cheap).

LibreOffice is installed by ``deploy/dev test`` (deploy/ensure-commands.sh) when ``soffice``
is missing; this test never skips it: without ``soffice`` it fails and says how to fix it.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
from datetime import date, datetime
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from python_calamine import CalamineWorkbook

from actors.core.batch import ColumnDef, ColumnType
from actors.pipeline.writer.xlsx_stream import XlsxStreamWriter

COLUMNS = [
    ColumnDef("id", "ID", ColumnType.INTEGER, width=10),
    ColumnDef("name", "Name", ColumnType.STRING, width=30),
    ColumnDef("amount", "Amount", ColumnType.DECIMAL),
    ColumnDef("active", "Active", ColumnType.BOOLEAN),
    ColumnDef("born", "Born", ColumnType.DATE),
    ColumnDef("seen", "Seen", ColumnType.DATETIME, width=20),
]
HEADER = ("ID", "Name", "Amount", "Active", "Born", "Seen")
ROWS_PER_SHEET = 4
EMOJI_TEXT = "😀" * 20_000  # 40,000 UTF-16 units: cut to 16,383 whole emoji (32,766 units)

# (raw Provider row, expected cell values in column order; None = blank)
CASES: list[tuple[dict[str, Any], tuple[Any, ...]]] = [
    (
        {
            "id": 1,
            "name": "plain",
            "amount": 1.25,
            "active": True,
            "born": "1990-05-17",
            "seen": "2024-03-01T10:20:30+08:00",
        },
        (1, "plain", 1.25, True, datetime(1990, 5, 17), datetime(2024, 3, 1, 10, 20, 30)),
    ),
    (
        {
            "id": "-42",
            "name": "中文 备注",
            "amount": "-0.5",
            "active": "false",
            "born": "2000-02-29",
            "seen": "1900-03-01 06:00Z",
        },
        (-42, "中文 备注", -0.5, False, datetime(2000, 2, 29), datetime(1900, 3, 1, 6, 0)),
    ),
    (
        {"id": "9007199254740993", "name": " spaced ", "amount": 123456.789, "active": 0},
        # Beyond 2**53 the exact digits are text; 0 is no boolean: written as text "0".
        ("9007199254740993", " spaced ", 123456.789, "0", None, None),
    ),
    ({"id": 4, "name": "=1+1"}, (4, "'=1+1", None, None, None, None)),
    ({"id": 5, "name": "+x"}, (5, "'+x", None, None, None, None)),
    ({"id": 6, "name": "-x", "amount": 7}, (6, "'-x", 7.0, None, None, None)),
    ({"id": 7, "name": "@SUM(A1)"}, (7, "'@SUM(A1)", None, None, None, None)),
    ({"id": 8, "name": "\tx"}, (8, "'\tx", None, None, None, None)),
    ({"id": 9, "name": "\rx"}, (9, "'\rx", None, None, None, None)),
    ({"id": 10, "name": "a\x01b\x0bc\x1f"}, (10, "abc", None, None, None, None)),
    (
        {"id": 11, "name": "emoji 😀👍🏽 family 👨‍👩‍👧"},
        (11, "emoji 😀👍🏽 family 👨‍👩‍👧", None, None, None, None),
    ),
    (
        {"id": 12, "name": "RTL مرحبا بالعالم \u202egnp.exe"},
        (12, "RTL مرحبا بالعالم \u202egnp.exe", None, None, None, None),
    ),
    (
        {"id": 13, "name": '<r><t>x</t></r> & "q" <b>'},
        (13, '<r><t>x</t></r> & "q" <b>', None, None, None, None),
    ),
    ({"id": 14, "name": "line1\nline2\ttab"}, (14, "line1\nline2\ttab", None, None, None, None)),
    ({"id": 15, "name": "_x0041_ stays"}, (15, "_x0041_ stays", None, None, None, None)),
    ({"id": 16, "name": "L" * 40_000}, (16, "L" * 32_767, None, None, None, None)),
    ({"id": 17, "name": EMOJI_TEXT}, (17, "😀" * 16_383, None, None, None, None)),
    ({"id": 18, "name": "", "amount": None, "undeclared": "x"}, (18, None, None, None, None, None)),
]


@pytest.fixture(scope="module")
def xlsx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("readers") / "readers.xlsx"
    with path.open("wb") as out:
        writer = XlsxStreamWriter(
            out, COLUMNS, max_rows=1000, max_bytes=10 << 20, rows_per_sheet=ROWS_PER_SHEET
        )
        writer.write_rows([raw for raw, _ in CASES[:9]], batch=1)
        writer.write_rows([raw for raw, _ in CASES[9:]], batch=2)
        writer.close()
    assert writer.warnings.truncated == 2
    return path


def expected_sheets() -> dict[str, list[tuple[Any, ...]]]:
    """Sheet name -> data rows, as the writer rolls them over."""
    sheets: dict[str, list[tuple[Any, ...]]] = {}
    for n, start in enumerate(range(0, len(CASES), ROWS_PER_SHEET), 1):
        name = "Export" if n == 1 else f"Export {n}"
        sheets[name] = [want for _, want in CASES[start : start + ROWS_PER_SHEET]]
    return sheets


def openpyxl_view(want: Any) -> Any:
    """openpyxl does not undo Excel's ``_x005F`` escape (its ``unescape`` does)."""
    if isinstance(want, str):
        return want.replace("_x0041_", "_x005F_x0041_")
    return want


def test_openpyxl_reads_typed_cells_formats_and_every_sheet(xlsx: Path) -> None:
    book = openpyxl.load_workbook(xlsx)
    expected = expected_sheets()
    assert book.sheetnames == list(expected) == ["Export"] + [f"Export {n}" for n in range(2, 6)]
    for name, rows in expected.items():
        sheet = book[name]
        assert sheet.freeze_panes == "A2"
        cells = list(sheet.iter_rows())
        assert tuple(c.value for c in cells[0]) == HEADER
        assert all(c.font.b for c in cells[0])
        assert len(cells) == 1 + len(rows), name
        for got, want in zip(cells[1:], rows, strict=True):
            values = tuple(c.value for c in got) + (None,) * (len(HEADER) - len(got))
            assert values == tuple(openpyxl_view(w) for w in want)
            for cell, w in zip(got, want, strict=False):
                # Python types survive: int stays int, decimals are floats, bools bools.
                assert type(cell.value) is type(openpyxl_view(w)), (name, cell.coordinate)
                if isinstance(w, datetime):
                    fmt = "yyyy-mm-dd" if cell.column == 5 else "yyyy-mm-dd hh:mm:ss"
                    assert cell.number_format == fmt
    widths = book["Export"].column_dimensions
    assert 10 <= widths["A"].width < 11 and 30 <= widths["B"].width < 31


def calamine_view(want: Any) -> Any:
    """calamine gives numbers as float, blanks as "", whole days as ``date``."""
    if want is None:
        return ""
    if isinstance(want, bool):
        return want
    if isinstance(want, int):
        return float(want)
    if isinstance(want, datetime) and want.time() == datetime.min.time():
        return want.date()
    return want


def test_calamine_reads_the_same_values_on_every_sheet(xlsx: Path) -> None:
    book = CalamineWorkbook.from_path(str(xlsx))
    expected = expected_sheets()
    assert book.sheet_names == list(expected)
    for name, rows in expected.items():
        got = book.get_sheet_by_name(name).to_python()
        assert tuple(got[0]) == HEADER
        assert len(got) == 1 + len(rows), name
        for values, want in zip(got[1:], rows, strict=True):
            assert tuple(values) == tuple(calamine_view(w) for w in want)
            for value in values:
                if isinstance(value, date) and not isinstance(value, datetime):
                    assert value >= date(1900, 3, 1)


def libreoffice_view(column: int, want: Any) -> str:
    """The CSV text LibreOffice writes for a cell shown with its format."""
    if want is None:
        return ""
    if isinstance(want, bool):
        return "TRUE" if want else "FALSE"
    if isinstance(want, datetime):
        if COLUMNS[column].type is ColumnType.DATE:
            return want.strftime("%Y-%m-%d")
        return want.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(want, float):
        return str(want).removesuffix(".0")  # General: no trailing ".0"
    return str(want)


def soffice_csv(xlsx: Path, outdir: Path) -> dict[str, list[list[str]]]:
    soffice = shutil.which("soffice")
    if soffice is None:
        pytest.fail(
            "LibreOffice is missing: 'soffice' is not on PATH. Run the tests with "
            "`deploy/dev test` (it installs libreoffice-calc) or run "
            "`deploy/ensure-commands.sh soffice=libreoffice-calc` as root."
        )
    # Token 12 = -1: every sheet to its own file "<name>-<sheet>.csv" (LibreOffice >= 7.2);
    # 76 = UTF-8; token 9 true = cells as shown, so the number formats are checked too.
    options = "44,34,76,1,,0,false,true,true,false,false,-1"
    profile = outdir / "profile"  # a private profile: parallel runs never share a lock
    result = subprocess.run(
        [
            soffice,
            f"-env:UserInstallation={profile.as_uri()}",
            "--headless",
            "--norestore",
            "--convert-to",
            f"csv:Text - txt - csv (StarCalc):{options}",
            "--outdir",
            str(outdir),
            str(xlsx),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "HOME": str(outdir)},
        check=False,
    )
    sheets: dict[str, list[list[str]]] = {}
    for path in sorted(outdir.glob(f"{xlsx.stem}-*.csv")):
        with path.open(newline="", encoding="utf-8") as handle:
            sheets[path.stem.removeprefix(f"{xlsx.stem}-")] = list(csv.reader(handle))
    assert sheets, f"soffice wrote no CSV (exit {result.returncode}): {result.stderr[-2000:]}"
    return sheets


def test_libreoffice_opens_the_file_and_shows_every_sheet(xlsx: Path, tmp_path: Path) -> None:
    sheets = soffice_csv(xlsx, tmp_path)
    expected = expected_sheets()
    assert sorted(sheets) == sorted(expected)
    for name, rows in expected.items():
        got = sheets[name]
        assert tuple(got[0]) == HEADER
        assert len(got) == 1 + len(rows), name
        for values, want in zip(got[1:], rows, strict=True):
            assert tuple(values) == tuple(libreoffice_view(c, w) for c, w in enumerate(want))


#: Columns with number formats (a Provider's ``columns[].format``): the values stay numbers,
#: every reader sees the format, LibreOffice shows the numbers with it.
FORMATTED = [
    ColumnDef("n", "N", ColumnType.INTEGER, number_format="#,##0"),
    ColumnDef("price", "Price", ColumnType.DECIMAL, number_format="0.00"),
    ColumnDef("total", "Total", ColumnType.DECIMAL, number_format='#,##0.00 "元"'),
    ColumnDef("plain", "Plain", ColumnType.DECIMAL),
]
FORMATTED_ROWS = [
    # the fast path (numbers as JSON numbers) and the typed path (strings)
    {"n": 1234567, "price": 12.5, "total": 1234.5, "plain": 12.5},
    {"n": "-1000", "price": "3", "total": "0.125", "plain": "3"},
]


def test_number_formats_are_written_and_shown(tmp_path: Path) -> None:
    path = tmp_path / "formatted.xlsx"
    with path.open("wb") as out:
        writer = XlsxStreamWriter(out, FORMATTED, max_rows=10, max_bytes=1 << 20)
        writer.write_rows(FORMATTED_ROWS, batch=1)
        writer.close()
    book = openpyxl.load_workbook(path)
    sheet = book.active
    assert [c.number_format for c in sheet[2]] == ["#,##0", "0.00", '#,##0.00 "元"', "General"]
    assert [c.value for c in sheet[2]] == [1234567, 12.5, 1234.5, 12.5]  # numbers, not text
    assert [c.value for c in sheet[3]] == [-1000, 3.0, 0.125, 3.0]
    assert CalamineWorkbook.from_path(str(path)).get_sheet_by_index(0).to_python()[1] == [
        1234567,
        12.5,
        1234.5,
        12.5,
    ]
    [shown] = soffice_csv(path, tmp_path).values()
    assert shown[1] == ["1,234,567", "12.50", "1,234.50 元", "12.5"]
    assert shown[2] == ["-1,000", "3.00", "0.13 元", "3"]
