"""Pure SpreadsheetML cell text (actors.core.xlsx.cell_xml): column names, escaping, serial
days, and the per-column fast formatters agreeing with the typing rules of cells.py."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.core.batch import ColumnDef, ColumnType
from actors.core.xlsx.cell_xml import (
    STYLE_DATE,
    STYLE_DATETIME,
    cell_xml,
    column_formatter,
    column_letter,
    escape_text,
    excel_serial,
)
from actors.core.xlsx.cells import BLANK, Cell, to_cell


@pytest.mark.parametrize(
    ("index", "letters"),
    [(0, "A"), (25, "Z"), (26, "AA"), (51, "AZ"), (701, "ZZ"), (702, "AAA"), (16383, "XFD")],
)
def test_column_letter_names_columns_as_excel_does(index: int, letters: str) -> None:
    assert column_letter(index) == letters


def test_column_letter_refuses_a_negative_index() -> None:
    with pytest.raises(ValueError):
        column_letter(-1)


@pytest.mark.parametrize(
    ("text", "xml"),
    [
        ("plain", "plain"),
        ("a&b<c>d", "a&amp;b&lt;c&gt;d"),
        ("\"quoted\" 'x'", "\"quoted\" 'x'"),
        ("line\r\nnext", "line&#13;\nnext"),
        ("tab\tkept", "tab\tkept"),
        ("bell\x07 vt\x0b ff\x0c nul\x00", "bell vt ff nul"),
        ("\ufffe\uffff", ""),
        ("_x0041_ and _x00e9_", "_x005F_x0041_ and _x005F_x00e9_"),
        ("_x41_ _xZZZZ_", "_x41_ _xZZZZ_"),
        ("emoji 😀 rtl مرحبا \u202e", "emoji 😀 rtl مرحبا \u202e"),
    ],
)
def test_escape_text_escapes_markup_keeps_cr_and_drops_what_xml_forbids(
    text: str, xml: str
) -> None:
    assert escape_text(text) == xml


@pytest.mark.parametrize(
    ("moment", "serial"),
    [
        (datetime(1900, 1, 1), 1),
        (datetime(1900, 2, 28), 59),
        (datetime(1900, 3, 1), 61),  # Excel's phantom 1900-02-29 is serial 60
        (datetime(2024, 3, 1), 45352),
        (datetime(2024, 3, 1, 12), 45352.5),
        (datetime(9999, 12, 31, 23, 59, 59), 2958465 + 86399 / 86400),
    ],
)
def test_excel_serial_follows_the_1900_date_system(moment: datetime, serial: float) -> None:
    assert excel_serial(moment) == pytest.approx(serial, abs=1e-9)


@pytest.mark.parametrize(
    ("cell", "xml"),
    [
        (BLANK, ""),
        (Cell("string", ""), ""),
        (Cell("string", "x"), ' t="inlineStr"><is><t>x</t></is></c>'),
        (Cell("string", " x"), ' t="inlineStr"><is><t xml:space="preserve"> x</t></is></c>'),
        (Cell("string", "x\n"), ' t="inlineStr"><is><t xml:space="preserve">x\n</t></is></c>'),
        (Cell("number", 42), "><v>42</v></c>"),
        (Cell("number", 0.1), "><v>0.1</v></c>"),
        (Cell("number", 1e16), "><v>1e+16</v></c>"),
        (Cell("boolean", True), ' t="b"><v>1</v></c>'),
        (Cell("boolean", False), ' t="b"><v>0</v></c>'),
        (Cell("datetime", datetime(2024, 3, 1), True), f' s="{STYLE_DATE}"><v>45352</v></c>'),
        (
            Cell("datetime", datetime(2024, 3, 1, 12), False),
            f' s="{STYLE_DATETIME}"><v>45352.5</v></c>',
        ),
    ],
)
def test_cell_xml_writes_each_kind_of_cell(cell: Cell, xml: str) -> None:
    assert cell_xml(cell) == xml


COLUMNS = {t: ColumnDef(t.value.lower(), t.value, t) for t in ColumnType}

# Values a Provider sends, clean and hostile, for every column type.
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**60), 2**60),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(
        [
            "",
            " lead",
            "trail ",
            "=1+1",
            "-5",
            "a&b",
            "_x0041_",
            "\r",
            "\x01",
            "\ud800",
            "😀",
            "true",
            "FALSE",
            "2024-02-29",
            "2023-02-29",
            "1899-12-31",
            "1900-01-01",
            "2024-03-01T10:20:30",
            "2024-03-01T10:20:30.123456789+08:00",
            "2024-03-01 10:20Z",
            "2024-03-01T10:20:30+24:00",
            "1899-12-31T23:59:59",
            "12.50",
            "1e400",
            "9007199254740993",
            "x" * 20_000,
        ]
    ),
    st.dates(min_value=date(1800, 1, 1)).map(date.isoformat),
    st.datetimes(min_value=datetime(1800, 1, 1)).map(datetime.isoformat),
    st.decimals(allow_nan=False).map(str),
)


@settings(max_examples=500, derandomize=True, database=None)
@given(column_type=st.sampled_from(list(ColumnType)), value=json_scalars)
def test_fast_formatter_agrees_with_the_typing_rules_or_hands_over(
    column_type: ColumnType, value: Any
) -> None:
    """Whatever a formatter writes itself is exactly what cells.to_cell + cell_xml write,
    and it only does so for values that carry no warning; everything else it hands over."""
    column = COLUMNS[column_type]
    xml = column_formatter(column)(value)
    if xml is None:
        return
    cell = to_cell(column, value)
    assert cell.warning is None
    assert xml == cell_xml(cell)


# Characters to put in every position of a clean date-time: ASCII and other digits, the
# separators of this and of other ISO forms, letters fromisoformat knows (W, T), space.
_MUTANTS = "0912-:Tt Z+W.,x\u0660\uff11\U0001d7ce"


@pytest.mark.parametrize(
    "clean",
    [
        "2024-02-03T23:18:30",
        "2024-02-03 23:18:30Z",
        "2024-02-03t23:18:30+08:00",
        "1900-01-01T00:00:00-23:59",
    ],
)
def test_the_datetime_fast_path_writes_only_what_the_typing_rules_write(clean: str) -> None:
    """The DATETIME formatter parses the commonest form itself, without the pattern of
    cells: every value one character away from a clean one (any position, any of
    _MUTANTS, or cut short, or one character longer) is either handed over or written
    exactly as cells.to_cell + cell_xml write it."""
    column = COLUMNS[ColumnType.DATETIME]
    fast = column_formatter(column)
    values = [clean[:i] + c + clean[i + 1 :] for i in range(len(clean)) for c in _MUTANTS]
    values += [clean[:i] for i in range(len(clean))] + [clean + c for c in _MUTANTS]
    written = 0
    for value in values:
        xml = fast(value)
        if xml is not None:
            cell = to_cell(column, value)
            assert cell.warning is None, value
            assert xml == cell_xml(cell), value
            written += 1
    assert written > len(clean)  # the digit mutants at least took the fast path


@pytest.mark.parametrize(
    ("column_type", "value"),
    [
        (ColumnType.STRING, "plain"),
        (ColumnType.STRING, "中文 😀"),
        (ColumnType.INTEGER, 7),
        (ColumnType.DECIMAL, 1.25),
        (ColumnType.BOOLEAN, True),
        (ColumnType.DATE, "2024-03-01"),
        (ColumnType.DATETIME, "2024-03-01T10:20:30+08:00"),
    ],
)
def test_clean_demo_values_take_the_fast_path(column_type: ColumnType, value: Any) -> None:
    assert column_formatter(COLUMNS[column_type])(value) is not None


@pytest.mark.parametrize(
    ("column_type", "value"),
    [
        (ColumnType.STRING, "=cmd"),
        (ColumnType.STRING, "a<b"),
        (ColumnType.STRING, "\ud800"),
        (ColumnType.STRING, 5),
        (ColumnType.INTEGER, 2**53 + 1),
        (ColumnType.INTEGER, True),
        (ColumnType.DECIMAL, Decimal("1.5")),
        (ColumnType.DECIMAL, float("inf")),
        (ColumnType.BOOLEAN, "yes"),
        (ColumnType.DATE, "1899-12-31"),
        (ColumnType.DATETIME, "2024-03-01T10:20:30+24:00"),
    ],
)
def test_values_needing_the_full_rules_are_handed_over(column_type: ColumnType, value: Any) -> None:
    assert column_formatter(COLUMNS[column_type])(value) is None
