"""Cell typing rules of §11: every column type, the injection guard and the length limit."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from actors.core.batch import ColumnDef, ColumnType
from actors.core.errors import ProviderContractError
from actors.core.xlsx.cells import (
    BLANK,
    EXCEL_MAX_CELL_CHARS,
    MAX_EXACT_INTEGER,
    Cell,
    text_cell,
    to_cell,
)

STRING = ColumnDef("s", "S", ColumnType.STRING)
INTEGER = ColumnDef("i", "I", ColumnType.INTEGER)
DECIMAL = ColumnDef("d", "D", ColumnType.DECIMAL)
BOOLEAN = ColumnDef("b", "B", ColumnType.BOOLEAN)
DATE = ColumnDef("dt", "DT", ColumnType.DATE)
DATETIME = ColumnDef("ts", "TS", ColumnType.DATETIME)
ALL_COLUMNS = [STRING, INTEGER, DECIMAL, BOOLEAN, DATE, DATETIME]


def assert_invalid_text(cell: Cell, text: str) -> None:
    assert cell.kind == "string"
    assert cell.value == text
    assert cell.invalid is True
    assert cell.warning is not None and "written as" in cell.warning


@pytest.mark.parametrize("column", ALL_COLUMNS, ids=lambda c: str(c.type))
def test_none_is_blank_in_every_column(column: ColumnDef) -> None:
    assert to_cell(column, None) == BLANK
    assert BLANK.kind == "blank" and BLANK.value is None and BLANK.warning is None


@pytest.mark.parametrize("column", ALL_COLUMNS, ids=lambda c: str(c.type))
@pytest.mark.parametrize("value", [{"a": 1}, [1, "x"]], ids=["dict", "list"])
def test_dict_and_list_become_json_text_with_warning_in_every_column(
    column: ColumnDef, value: object
) -> None:
    cell = to_cell(column, value)
    assert_invalid_text(cell, json.dumps(value))
    assert "JSON text" in (cell.warning or "")


# --- STRING -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [("abc", "abc"), (42, "42"), (1.5, "1.5"), (True, "true"), (False, "false"), ("", "")],
)
def test_string_column_writes_any_json_scalar_as_text_without_warning(
    value: object, text: str
) -> None:
    assert to_cell(STRING, value) == Cell("string", text)


@pytest.mark.parametrize("hostile", ["=1+1", "+x", "-x", "@x", "\tx", "\rx"])
def test_string_starting_with_formula_trigger_gets_leading_apostrophe(hostile: str) -> None:
    cell = to_cell(STRING, hostile)
    assert cell == Cell("string", "'" + hostile)


def test_negative_number_in_string_column_is_guarded_too() -> None:
    # §11: the guard applies to every STRING value by its first character, numbers included.
    assert to_cell(STRING, -5).value == "'-5"


@pytest.mark.parametrize("safe", ["a=1", " =1", "'x", "x-"])
def test_string_with_trigger_not_first_is_unchanged(safe: str) -> None:
    assert to_cell(STRING, safe).value == safe


def test_string_longer_than_excel_limit_is_truncated_with_warning() -> None:
    cell = to_cell(STRING, "x" * 40_000)
    assert cell.kind == "string"
    assert len(cell.value) == EXCEL_MAX_CELL_CHARS
    assert cell.truncated is True and cell.invalid is False
    assert cell.warning == "cell truncated from 40000 to 32767 characters"


def test_string_at_exactly_the_limit_is_kept_whole() -> None:
    cell = to_cell(STRING, "y" * EXCEL_MAX_CELL_CHARS)
    assert len(cell.value) == EXCEL_MAX_CELL_CHARS
    assert cell.warning is None and cell.truncated is False


def test_truncation_counts_utf16_units_and_never_splits_a_surrogate_pair() -> None:
    # Each emoji is 2 UTF-16 units: 16384 of them = 32768 units, one unit too many.
    cell = to_cell(STRING, "\U0001f600" * 16_384)
    assert cell.truncated is True
    assert cell.value == "\U0001f600" * 16_383
    assert "from 32768 to 32767" in (cell.warning or "")


def test_guard_applies_before_truncation_so_the_apostrophe_survives() -> None:
    cell = to_cell(STRING, "=" + "a" * 40_000)
    assert cell.value.startswith("'=")
    assert len(cell.value) == EXCEL_MAX_CELL_CHARS


def test_lone_surrogate_is_replaced_so_the_xml_stays_encodable() -> None:
    cell = to_cell(STRING, "a\ud800b")
    cell.value.encode("utf-8")
    assert cell.value.startswith("a") and cell.value.endswith("b")


# --- INTEGER ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "number"),
    [
        (42, 42),
        (-7, -7),
        (0, 0),
        ("123", 123),
        ("+5", 5),
        ("-5", -5),
        ("007", 7),
        (MAX_EXACT_INTEGER, MAX_EXACT_INTEGER),
        (str(-MAX_EXACT_INTEGER), -MAX_EXACT_INTEGER),
    ],
)
def test_integer_from_int_or_digit_string_is_a_number(value: object, number: int) -> None:
    cell = to_cell(INTEGER, value)
    assert cell == Cell("number", number)
    assert type(cell.value) is int


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (MAX_EXACT_INTEGER + 1, str(MAX_EXACT_INTEGER + 1)),
        (-(MAX_EXACT_INTEGER + 1), str(-(MAX_EXACT_INTEGER + 1))),
        ("12345678901234567890", "12345678901234567890"),
        ("-12345678901234567890", "-12345678901234567890"),
        ("+0012345678901234567890", "12345678901234567890"),
        ("9007199254740993", "9007199254740993"),
        ("00000000000000000009007199254740992", 9007199254740992),
        ("1" * 5000, "1" * 5000),
        ("-" + "9" * (EXCEL_MAX_CELL_CHARS - 1), "-" + "9" * (EXCEL_MAX_CELL_CHARS - 1)),
        (10**4000, str(10**4000)),
    ],
    ids=[
        "int-above",
        "int-below",
        "digits",
        "negative-digits",
        "sign-and-zeros",
        "just-above",
        "zeros-then-exact",
        "5000-digits",
        "full-cell-of-digits",
        "int-4001-digits",
    ],
)
def test_integer_beyond_2_pow_53_is_exact_text_without_warning_or_apostrophe(
    value: object, text: object
) -> None:
    """Issue 13 item 6: 5,000 digits (over Python's int/str limit) are written exactly."""
    expected = Cell("number", text) if isinstance(text, int) else Cell("string", text)
    assert to_cell(INTEGER, value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("9" * (EXCEL_MAX_CELL_CHARS + 1), "integer of 32768 digits is too long for a cell"),
        ("-" + "1" * 40_000, "integer of 40000 digits is too long for a cell"),
        (10**5000, "too long for a cell of 32767 characters"),
    ],
    ids=["one-digit-too-many", "40000-digits", "int-over-str-limit"],
)
def test_integer_longer_than_a_cell_is_a_provider_contract_error(
    value: object, message: str
) -> None:
    """Cutting digits would write another number; the value cannot be represented."""
    with pytest.raises(ProviderContractError, match=message):
        to_cell(INTEGER, value)


@pytest.mark.parametrize("column", ALL_COLUMNS, ids=lambda c: str(c.type))
def test_nesting_too_deep_to_encode_is_a_provider_contract_error(column: ColumnDef) -> None:
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ProviderContractError, match="array value cannot be written as JSON"):
        to_cell(column, deep)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("abc", "abc"),
        (1.5, "1.5"),
        (3.0, "3.0"),
        (True, "true"),
        ("1_000", "1_000"),
        (" 12", " 12"),
        ("12.0", "12.0"),
        ("\u0661\u0662", "\u0661\u0662"),
    ],
)
def test_integer_rejects_everything_else_as_text_with_warning(value: object, text: str) -> None:
    cell = to_cell(INTEGER, value)
    assert_invalid_text(cell, text)
    assert cell.warning is not None and cell.warning.startswith("invalid INTEGER value")


def test_invalid_integer_text_gets_the_injection_guard() -> None:
    cell = to_cell(INTEGER, "-1+cmd")
    assert_invalid_text(cell, "'-1+cmd")


def test_invalid_long_value_is_truncated_and_warns_about_both() -> None:
    cell = to_cell(INTEGER, "z" * 40_000)
    assert cell.invalid is True and cell.truncated is True
    assert len(cell.value) == EXCEL_MAX_CELL_CHARS
    assert "invalid INTEGER" in (cell.warning or "") and "truncated" in (cell.warning or "")
    # The warning quotes only a short excerpt of the value.
    assert len(cell.warning or "") < 200


def test_warning_text_matches_the_documented_shape() -> None:
    assert to_cell(INTEGER, "abc").warning == "invalid INTEGER value 'abc' written as text"


# --- DECIMAL ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "number"),
    [
        (12.5, 12.5),
        (3, 3.0),
        ("12.50", 12.5),
        ("-0.5", -0.5),
        (".5", 0.5),
        ("5.", 5.0),
        ("1e3", 1000.0),
        ("+2E-2", 0.02),
        (Decimal("9.99"), 9.99),
    ],
)
def test_decimal_from_finite_number_or_decimal_string_is_a_float(
    value: object, number: float
) -> None:
    cell = to_cell(DECIMAL, value)
    assert cell == Cell("number", number)
    assert type(cell.value) is float


@pytest.mark.parametrize(
    "value",
    [
        "abc",
        "NaN",
        "Infinity",
        "1e400",
        "1_000",
        " 1",
        "1,5",
        True,
        float("nan"),
        float("inf"),
        10**400,
        Decimal("sNaN"),
    ],
)
def test_decimal_rejects_non_finite_or_non_decimal_as_text_with_warning(value: object) -> None:
    cell = to_cell(DECIMAL, value)
    assert cell.kind == "string" and cell.invalid is True
    assert (cell.warning or "").startswith("invalid DECIMAL value")


# --- BOOLEAN ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "flag"),
    [(True, True), (False, False), ("true", True), ("FALSE", False), ("True", True)],
)
def test_boolean_from_bool_or_true_false_string(value: object, flag: bool) -> None:
    assert to_cell(BOOLEAN, value) == Cell("boolean", flag)


@pytest.mark.parametrize(("value", "text"), [(1, "1"), (0, "0"), ("yes", "yes"), ("t", "t")])
def test_boolean_rejects_other_values_as_text_with_warning(value: object, text: str) -> None:
    assert_invalid_text(to_cell(BOOLEAN, value), text)


# --- DATE ---------------------------------------------------------------------------


def test_date_string_becomes_midnight_datetime_marked_date_only() -> None:
    assert to_cell(DATE, "2024-02-29") == Cell("datetime", datetime(2024, 2, 29), is_date_only=True)


def test_date_object_is_accepted_as_date_only() -> None:
    assert to_cell(DATE, date(2024, 1, 2)) == Cell(
        "datetime", datetime(2024, 1, 2), is_date_only=True
    )


@pytest.mark.parametrize(
    "value", ["2023-02-29", "2024-13-01", "2024-1-2", "2024-01-02T00:00:00", "20240102", 5]
)
def test_date_rejects_invalid_or_non_plain_dates_as_text_with_warning(value: object) -> None:
    cell = to_cell(DATE, value)
    assert cell.kind == "string" and cell.invalid is True
    assert (cell.warning or "").startswith("invalid DATE value")


def test_date_before_1900_is_text_because_excel_cannot_show_it() -> None:
    cell = to_cell(DATE, "1899-12-31")
    assert_invalid_text(cell, "1899-12-31")
    assert "before 1900" in (cell.warning or "")


# --- DATETIME -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "moment"),
    [
        ("2024-03-01T10:20:30", datetime(2024, 3, 1, 10, 20, 30)),
        ("2024-03-01 10:20:30", datetime(2024, 3, 1, 10, 20, 30)),
        ("2024-03-01T10:20", datetime(2024, 3, 1, 10, 20)),
        ("2024-03-01T10:20:30.5", datetime(2024, 3, 1, 10, 20, 30, 500_000)),
        ("2024-03-01T10:20:30.123456789", datetime(2024, 3, 1, 10, 20, 30, 123_456)),
        ("2024-03-01T10:20:30Z", datetime(2024, 3, 1, 10, 20, 30)),
        ("2024-03-01T10:20:30+08:00", datetime(2024, 3, 1, 10, 20, 30)),
        ("2024-03-01T10:20:30.250-0530", datetime(2024, 3, 1, 10, 20, 30, 250_000)),
        ("2024-03-01 23:59:59+08", datetime(2024, 3, 1, 23, 59, 59)),
    ],
)
def test_datetime_iso_string_keeps_wall_time_and_drops_offset(value: str, moment: datetime) -> None:
    cell = to_cell(DATETIME, value)
    assert cell == Cell("datetime", moment)
    assert cell.value.tzinfo is None


def test_aware_datetime_object_keeps_wall_time_and_drops_offset() -> None:
    aware = datetime(2024, 3, 1, 10, 0, tzinfo=timezone(timedelta(hours=8)))
    assert to_cell(DATETIME, aware) == Cell("datetime", datetime(2024, 3, 1, 10, 0))


@pytest.mark.parametrize(
    "value",
    [
        "2024-03-01",
        "2024-03-01T25:00:00",
        "2024-03-01T10:20:61",
        "2024-03-01T10:20:30+25:00",
        "yesterday",
        "2024-03-01T10:20:30 UTC",
        1709288430,
    ],
)
def test_datetime_rejects_unparseable_values_as_text_with_warning(value: object) -> None:
    cell = to_cell(DATETIME, value)
    assert cell.kind == "string" and cell.invalid is True
    assert (cell.warning or "").startswith("invalid DATETIME value")


def test_datetime_before_1900_is_text() -> None:
    assert to_cell(DATETIME, "1899-12-31T23:00:00").invalid is True


# --- text_cell ----------------------------------------------------------------------


def test_text_cell_applies_guard_for_header_titles() -> None:
    assert text_cell("=HYPERLINK()").value == "'=HYPERLINK()"
    assert text_cell("Name") == Cell("string", "Name")
