"""Cell typing for the XLSX writer: one raw Provider value plus its column -> one typed cell.

Pure: no IO, no logging. The writer (``actors.pipeline.writer.xlsx_stream``) turns a :class:`Cell`
into one typed cell of the sheet XML (``actors.core.xlsx.cell_xml.cell_xml``) and counts the
warnings.

Rules (§11 "通用 XLSX Writer", §12 limits):

* ``None`` -> blank, in every column.
* ``dict`` / ``list`` in any column -> their JSON text as a string cell, with a warning.
* STRING: any JSON scalar -> text (``bool`` -> ``"true"``/``"false"``).
* INTEGER: ``int`` (not ``bool``) or an ASCII string of optional sign + digits -> number;
  beyond ±2**53 the exact digits are written as text without a warning (a double would
  silently change them). Digit strings are never passed to ``int()`` when they are that
  long, so Python's 4,300-digit conversion limit cannot turn a Provider's value into a
  ``ValueError``; an integer with more digits than a cell holds cannot be written at all.
* DECIMAL: ``int``, ``float`` or a decimal string that is finite -> number (float).
* BOOLEAN: ``bool`` or ``"true"``/``"false"`` (any case) -> boolean.
* DATE: ``"YYYY-MM-DD"`` -> datetime at midnight, ``is_date_only=True``.
* DATETIME: ISO-8601 ``YYYY-MM-DD[T ]hh:mm[:ss[.fraction]][Z|±hh[:mm]]``; the wall time is
  kept as given and the offset dropped, because Excel has no time zones.
* DATE/DATETIME before 1900-01-01 cannot be shown by Excel (it renders ``####``), so they
  are written as text with a warning.
* Every other value is *invalid* for its column: it becomes a string cell with a warning,
  so no data is lost and the export does not fail.

Every string cell, whatever the column, gets two guards: the formula-injection guard (text
whose first written character is one of ``= + - @ TAB CR LF`` or a full-width ``＝ ＋ － ＠``
gets a leading apostrophe, §11; characters XML forbids are dropped when the cell is
written, so the guard looks past them) and truncation to Excel's
32767-character limit (§11, §12), counted in UTF-16 code units as Excel counts them.
Lone UTF-16 surrogates (legal in JSON, illegal in XML) are replaced with U+FFFD.

Only values that no cell can represent raise, and they raise
:class:`~actors.core.errors.ProviderContractError` (permanent: the same data fails every
attempt): an integer longer than a cell, an array or object nested too deeply to write as
JSON text. The writer adds where the value was (batch, row, column).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Literal

from actors.core.batch import ColumnDef, ColumnType
from actors.core.errors import ProviderContractError

#: Excel's maximum cell text length, in UTF-16 code units (§11, §12).
EXCEL_MAX_CELL_CHARS = 32_767
#: Largest magnitude a double holds exactly; INTEGER values beyond it are written as text.
MAX_EXACT_INTEGER = 2**53
#: Digits of MAX_EXACT_INTEGER: a digit string longer than this (leading zeros aside) is
#: beyond it without converting it.
_EXACT_DIGITS = len(str(MAX_EXACT_INTEGER))
#: First characters that make Excel (or a CSV re-import) evaluate text as a formula (§11),
#: with LF (a CSV reader may start a new field there) and the full-width forms of = + - @
#: (an input method may turn them into the ASCII ones when the cell is edited).
FORMULA_TRIGGERS = "=+-@\t\r\n\uff1d\uff0b\uff0d\uff20"
#: Characters XML 1.0 forbids: C0 controls except TAB, LF and CR; U+FFFE, U+FFFF. The sheet
#: writer drops them (``cell_xml.escape_text``), so the injection guard looks past them.
XML_DROPPED = "".join(map(chr, [*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20)])) + "\ufffe\uffff"
#: Earliest date Excel can display (serial 1 in the 1900 date system).
EXCEL_MIN_DATETIME = datetime(1900, 1, 1)

# Longest excerpt of an invalid value quoted in a warning: enough to find it, short enough
# not to copy row data into task messages (§12: no full row data in logs).
_QUOTE_MAX = 40

_INTEGER_RE = re.compile(r"[+-]?[0-9]+")
# Plain decimal notation only: Decimal() would also take "NaN", "Infinity", "1_000", " 1 ".
_DECIMAL_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# These regexes decide what is accepted; datetime.fromisoformat (C, fast) then converts.
# fromisoformat alone would also take week dates, basic format and other ISO variants.
_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_DATETIME_RE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:[.,][0-9]{1,9})?)?"
    r"(?P<off>[Zz]|[+-](?P<oh>[0-9]{2})(?::?(?P<om>[0-9]{2}))?)?"
)
# The same with the offset's range checked in the pattern (hours 00-23, minutes 00-59):
# one match decides a clean value, which is what nearly every value is.
_DATETIME_VALID_OFFSET_RE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:[.,][0-9]{1,9})?)?"
    r"([Zz]|[+-](?:[01][0-9]|2[0-3])(?::?[0-5][0-9])?)?"
)

CellKind = Literal["blank", "string", "number", "boolean", "datetime"]


@dataclass(frozen=True, slots=True)
class Cell:
    """One typed cell, ready to be written as the matching kind of sheet cell.

    Attributes:
        kind: which typed writer to use.
        value: ``str`` for string, ``int``/``float`` for number, ``bool`` for boolean, a
            naive ``datetime`` for datetime, ``None`` for blank.
        is_date_only: a DATE column: format as a date, not a date-time.
        warning: why the value was changed, in words, or ``None``.
        truncated: the text was cut to :data:`EXCEL_MAX_CELL_CHARS`.
        invalid: the value did not fit the column type and was written as text.
    """

    kind: CellKind
    value: Any
    is_date_only: bool = False
    warning: str | None = None
    truncated: bool = False
    invalid: bool = False


BLANK = Cell("blank", None)
_TRUE = Cell("boolean", True)
_FALSE = Cell("boolean", False)


def to_cell(column: ColumnDef, value: Any) -> Cell:
    """Type one raw value for its column, following the module rules (§11).

    Args:
        column: the declared column; only ``column.type`` is used.
        value: the raw JSON value from the Provider row (or a Python scalar).

    Returns:
        The typed cell. A value that does not fit its column becomes a string cell with
        ``invalid=True`` and a warning; no data is lost and the export goes on.

    Raises:
        ProviderContractError: the value cannot be represented in any cell: an integer
            with more digits than a cell holds, or an array/object nested too deeply
            (or holding an integer too long) to write as JSON text.
    """
    if value is None:
        return BLANK
    if isinstance(value, (dict, list, tuple)):
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (RecursionError, ValueError) as exc:
            raise ProviderContractError(
                f"{_kind_name(value)} value cannot be written as JSON text "
                f"({type(exc).__name__}: nested too deeply or holding an integer too long)"
            ) from None
        return text_cell(
            text,
            f"{_kind_name(value)} value in a {column.type} column written as JSON text",
            invalid=True,
        )
    return _CONVERTERS[column.type](column.type, value)


def text_cell(text: str, warning: str | None = None, *, invalid: bool = False) -> Cell:
    """A string cell with the formula-injection guard and the length limit applied.

    Args:
        text: the cell text.
        warning: a warning already attached to the value (e.g. it was invalid), or ``None``.
        invalid: mark the cell as an invalid value written as text.

    Returns:
        The string cell; ``truncated`` is set and a warning appended when the text (after
        the guard) exceeded :data:`EXCEL_MAX_CELL_CHARS` UTF-16 units.
    """
    if not text.isascii():
        text = _replace_lone_surrogates(text)
    # The guard judges the first character that will be written: the writer drops what
    # XML forbids, so "\x00=1" would otherwise reach the file as "=1".
    head = text.lstrip(XML_DROPPED) if text and text[0] in XML_DROPPED else text
    if head and head[0] in FORMULA_TRIGGERS:
        text = "'" + text
    return _limited(text, warning, invalid)


def _limited(text: str, warning: str | None, invalid: bool) -> Cell:
    # Fast path: a string of at most half the limit cannot exceed it even in UTF-16.
    # Positional arguments: a frozen dataclass is slow to build and this runs per cell.
    if len(text) <= EXCEL_MAX_CELL_CHARS // 2:
        return Cell("string", text, False, warning, False, invalid)
    units = _utf16_len(text)
    if units <= EXCEL_MAX_CELL_CHARS:
        return Cell("string", text, False, warning, False, invalid)
    note = f"cell truncated from {units} to {EXCEL_MAX_CELL_CHARS} characters"
    return Cell(
        "string",
        _utf16_truncate(text, EXCEL_MAX_CELL_CHARS),
        warning=f"{warning}; {note}" if warning else note,
        truncated=True,
        invalid=invalid,
    )


def _utf16_len(text: str) -> int:
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _utf16_truncate(text: str, limit: int) -> str:
    if text.isascii():
        return text[:limit]
    units = 0
    for index, ch in enumerate(text):
        # Never split a surrogate pair: stop before a character that does not fit whole.
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > limit:
            return text[:index]
    return text


def _replace_lone_surrogates(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def _kind_name(value: Any) -> str:
    return "object" if isinstance(value, dict) else "array"


def _scalar_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _invalid(column_type: ColumnType, value: Any, reason: str | None = None) -> Cell:
    """The fallback of every typed rule: keep the value visible as guarded text."""
    quoted = repr(value)
    if len(quoted) > _QUOTE_MAX:
        quoted = quoted[: _QUOTE_MAX - 3] + "..."
    detail = f" ({reason})" if reason else ""
    return text_cell(
        _scalar_text(value),
        f"invalid {column_type} value {quoted}{detail} written as text",
        invalid=True,
    )


def _string(column_type: ColumnType, value: Any) -> Cell:
    if isinstance(value, (str, int, float, Decimal)):
        return text_cell(_scalar_text(value))
    # Not a JSON scalar (a Python object from an internal caller): still write it.
    return _invalid(column_type, value, f"unsupported type {type(value).__name__}")


def _integer(column_type: ColumnType, value: Any) -> Cell:
    if isinstance(value, int) and not isinstance(value, bool):
        number = int(value)
        if abs(number) > MAX_EXACT_INTEGER:
            try:
                return _integer_text(str(number))
            except ValueError:  # over Python's int-to-str digit limit
                raise ProviderContractError(
                    f"integer of about {int(number.bit_length() * 0.30103)} digits is too "
                    f"long for a cell of {EXCEL_MAX_CELL_CHARS} characters"
                ) from None
        return Cell("number", number)
    if isinstance(value, str) and _INTEGER_RE.fullmatch(value):
        negative = value[0] == "-"
        digits = value.lstrip("+-").lstrip("0") or "0"
        if len(digits) > _EXACT_DIGITS:
            # Certainly beyond 2**53: never int() it (4,300-digit limit, and slow).
            return _integer_text("-" + digits if negative else digits)
        number = int(value)
        if abs(number) > MAX_EXACT_INTEGER:
            return _integer_text(str(number))
        return Cell("number", number)
    return _invalid(column_type, value)


def _integer_text(digits: str) -> Cell:
    """Exact digits as text, on purpose and without a warning. A digits-only string is not
    a formula, so it skips the injection guard (a "-" would otherwise get "'")."""
    if len(digits) > EXCEL_MAX_CELL_CHARS:
        # Cutting digits would write a different number: refuse instead (§12: a cell holds
        # at most 32767 characters).
        raise ProviderContractError(
            f"integer of {len(digits.lstrip('-'))} digits is too long for a cell of "
            f"{EXCEL_MAX_CELL_CHARS} characters"
        )
    return Cell("string", digits)


def _decimal(column_type: ColumnType, value: Any) -> Cell:
    if isinstance(value, bool):
        return _invalid(column_type, value)
    number: int | float | Decimal | str
    if isinstance(value, (int, float, Decimal)):
        number = value
    elif isinstance(value, str) and _DECIMAL_RE.fullmatch(value):
        number = value
    else:
        return _invalid(column_type, value)
    try:
        result = float(number)
    except (OverflowError, ValueError):  # huge int; Decimal("sNaN") refuses float()
        return _invalid(column_type, value, "out of range")
    if not math.isfinite(result):
        return _invalid(column_type, value, "not finite")
    return Cell("number", result)


def _boolean(column_type: ColumnType, value: Any) -> Cell:
    if isinstance(value, bool):
        return _TRUE if value else _FALSE
    if isinstance(value, str):
        lowered = value.lower()
        if lowered == "true":
            return _TRUE
        if lowered == "false":
            return _FALSE
    return _invalid(column_type, value)


def _date(column_type: ColumnType, value: Any) -> Cell:
    if isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    elif isinstance(value, str) and _DATE_RE.fullmatch(value):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return _invalid(column_type, value)
    else:
        return _invalid(column_type, value)
    return _excel_datetime(column_type, value, moment, date_only=True)


def parse_datetime_text(text: str) -> datetime | str:
    """The wall time of a DATETIME text, following the module rules (offset dropped).

    Args:
        text: the raw Provider string.

    Returns:
        The naive wall time, or why the text is not a date-time: ``"bad offset"`` or
        ``""`` (not the accepted ISO-8601 form, or no such day or time). The 1900 limit
        is not checked here.
    """
    match = _DATETIME_VALID_OFFSET_RE.fullmatch(text)
    if match is None:
        # Same form with an hour offset over 23 or minutes over 59, or another form.
        return "bad offset" if _DATETIME_RE.fullmatch(text) else ""
    cut = match.start(1)  # keep the wall time, drop the offset
    try:
        # Python 3.11+: any fraction length (nanoseconds from Java are cut to micros).
        return datetime.fromisoformat(text if cut < 0 else text[:cut])
    except ValueError:
        return ""


def _datetime(column_type: ColumnType, value: Any) -> Cell:
    if isinstance(value, datetime):
        moment = value.replace(tzinfo=None)
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        parsed = parse_datetime_text(value)
        if isinstance(parsed, str):
            return _invalid(column_type, value, parsed or None)
        moment = parsed
    else:
        return _invalid(column_type, value)
    return _excel_datetime(column_type, value, moment, date_only=False)


def _excel_datetime(
    column_type: ColumnType, raw: Any, moment: datetime, *, date_only: bool
) -> Cell:
    if moment < EXCEL_MIN_DATETIME:
        return _invalid(column_type, raw, "before 1900-01-01")
    return Cell("datetime", moment, date_only)


_CONVERTERS = {
    ColumnType.STRING: _string,
    ColumnType.INTEGER: _integer,
    ColumnType.DECIMAL: _decimal,
    ColumnType.BOOLEAN: _boolean,
    ColumnType.DATE: _date,
    ColumnType.DATETIME: _datetime,
}
