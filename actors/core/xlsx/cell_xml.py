"""SpreadsheetML text of the cells the streaming XLSX writer writes, row after row. Pure.

The writer (:mod:`actors.pipeline.writer.xlsx_stream`) streams what these functions return
into the sheet entry of an XLSX file; nothing here does IO. The rest of the package (the
sheet's head and tail, workbook, styles, content types) is
:mod:`actors.core.xlsx.package_xml`.

**Per-column formatters** are chosen once per column from its declared type
(:func:`column_formatter`). Each takes one raw Provider value and returns the rest of the
cell element after ``<c r="B7"`` — for the values that are already exactly what the column
wants (an ``int`` in an INTEGER column, a short guard-free ``str`` in a STRING column …).
Anything else makes it return ``None`` and the writer types the value with
:func:`actors.core.xlsx.cells.to_cell`, the single source of the typing rules, and renders
the result with :func:`cell_xml`. So a fast path can only ever agree with the rules: tests
check every formatter against ``cell_xml(to_cell(...))``.

Cell encoding rules:

* Strings are inline (``t="inlineStr"``): no shared-string table to hold in memory, which
  keeps memory flat in rows; the file is the same as xlsxwriter's ``constant_memory`` mode.
* Text is escaped for XML (``& < >``); CR is written as the character reference
  ``&#13;`` because an XML parser turns a literal CR into LF; characters XML 1.0 forbids
  (C0 controls except TAB, LF, CR; U+FFFE, U+FFFF) are removed — no reader could load
  the file otherwise. Text that looks like Excel's own character escape (``_x0041_``)
  gets its underscore escaped (``_x005F_x0041_``) so that Excel, LibreOffice and calamine
  show it as written (openpyxl shows the escape; ``openpyxl.utils.escape.unescape``
  undoes it). Leading or trailing whitespace gets ``xml:space="preserve"``.
* Numbers are the shortest text that reads back as the same double (``repr``); integers
  up to 2**53 are written as their digits.
* Dates and date-times are Excel serial days in the 1900 date system (with Excel's
  1900-02-29 leap-year bug, as xlsxwriter computes them), styled ``yyyy-mm-dd`` and
  ``yyyy-mm-dd hh:mm:ss``. Decimals keep the General format: a column declares no scale,
  and General shows the stored value without rounding it away.
* An empty string and ``None`` write no cell at all (a blank), as xlsxwriter does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from actors.core.batch import ColumnDef, ColumnType
from actors.core.xlsx.cells import (
    EXCEL_MAX_CELL_CHARS,
    EXCEL_MIN_DATETIME,
    FORMULA_TRIGGERS,
    MAX_EXACT_INTEGER,
    XML_DROPPED,
    Cell,
    parse_datetime_text,
    to_cell,
)

#: Style indexes (``s=``) of ``cellXfs`` in ``package_xml.STYLES_XML``.
STYLE_HEADER = 1
STYLE_DATE = 2
STYLE_DATETIME = 3
DATE_FORMAT = "yyyy-mm-dd"
DATETIME_FORMAT = "yyyy-mm-dd hh:mm:ss"

#: A cell formatter: raw value -> the cell element after ``<c r="REF"``; ``""`` for no cell;
#: ``None`` when the value needs the full typing rules of :func:`to_cell`.
Formatter = Callable[[Any], "str | None"]

# Day 0 of Excel's 1900 date system as xlsxwriter computes it; serials above 59 get one day
# more for the 1900-02-29 that Excel believes in (Lotus 1-2-3 compatibility).
_EPOCH = datetime(1899, 12, 31)
_EPOCH_ORDINAL = _EPOCH.toordinal()
_SECONDS_PER_DAY = 86_400.0

# What XML text cannot carry as is. Characters XML 1.0 forbids are removed; CR becomes a
# character reference so that parsers keep it (they turn a literal CR into LF).
_XML_SPECIAL = re.compile("[" + re.escape("&<>\r" + XML_DROPPED) + "]")
# The fast string path's one check: anything to escape, or a lone surrogate (which
# cells.text_cell replaces), sends the value to the full rules.
_NOT_PLAIN = re.compile("[" + re.escape("&<>\r" + XML_DROPPED) + "\ud800-\udfff]")
# Excel's own escape of a character in cell text: "_x" + 4 hex digits + "_".
_EXCEL_ESCAPE = re.compile("_x[0-9A-Fa-f]{4}_")
# Whitespace an XML reader may drop at the ends of a text without xml:space="preserve".
_XML_SPACE = " \t\n\r"
_XML_REPLACEMENT = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"}
# A short string cannot exceed Excel's limit even counted in UTF-16 units (see cells.py).
_SHORT_TEXT = EXCEL_MAX_CELL_CHARS // 2
# Distinct DATE strings remembered per column; demo and real data repeat a few thousand
# days, and the bound keeps memory flat whatever a Provider sends.
_DATE_CACHE_SIZE = 4096


def column_letter(index: int) -> str:
    """Excel's column name of a 0-based column index: 0 -> ``A``, 26 -> ``AA``.

    Raises:
        ValueError: ``index`` is negative.
    """
    if index < 0:
        raise ValueError("column index must be >= 0")
    letters = ""
    number = index + 1
    while number:
        number, rest = divmod(number - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def escape_text(text: str) -> str:
    """``text`` as XML character data (module rules: escape, CR reference, drop illegal,
    literal ``_xHHHH_`` kept literal)."""
    if "_x" in text:
        # Excel (and calamine) read "_x0041_" in cell text as "A" (ECMA-376 ST_Xstring);
        # "_x005F" escapes the underscore so the text reads back as written.
        text = _EXCEL_ESCAPE.sub(r"_x005F\g<0>", text)
    if _XML_SPECIAL.search(text) is None:
        return text
    return _XML_SPECIAL.sub(_xml_replace, text)


def _xml_replace(match: re.Match[str]) -> str:
    return _XML_REPLACEMENT.get(match.group(), "")


def excel_serial(moment: datetime) -> float:
    """Serial day of a naive ``moment`` in Excel's 1900 date system (fraction = time).

    Args:
        moment: on or after 1900-01-01 (``cells`` writes earlier ones as text).
    """
    # The arithmetic of ``moment - epoch`` (days, seconds, microseconds), without
    # building the timedelta: this runs for every date-time cell.
    seconds = moment.hour * 3600 + moment.minute * 60 + moment.second
    serial = (moment.toordinal() - _EPOCH_ORDINAL) + (
        seconds + moment.microsecond / 1e6
    ) / _SECONDS_PER_DAY
    return serial + 1 if serial > 59 else serial


def inline_string(text: str) -> str:
    """The rest of an inline-string cell element after ``<c r="REF" [s="N"]`` for a
    non-empty ``text`` that the guards already judged (``cells.text_cell``)."""
    if text[0] in _XML_SPACE or text[-1] in _XML_SPACE:
        return f' t="inlineStr"><is><t xml:space="preserve">{escape_text(text)}</t></is></c>'
    return f' t="inlineStr"><is><t>{escape_text(text)}</t></is></c>'


def cell_xml(cell: Cell, style: int | None = None) -> str:
    """The cell element after ``<c r="REF"`` for a typed cell, or ``""`` for no cell.

    Args:
        cell: a cell from :func:`actors.core.xlsx.cells.to_cell` or ``text_cell``.
        style: the column's number-format style, applied to a number.

    Returns:
        e.g. ``'><v>42</v></c>'``, ``' s="2"><v>32971</v></c>'``,
        ``' t="inlineStr"><is><t>x</t></is></c>'``; ``""`` for a blank or empty string.
    """
    kind = cell.kind
    value = cell.value
    if kind == "string":
        return inline_string(value) if value else ""
    if kind == "number":
        styled = "" if style is None else f' s="{style}"'
        return f"{styled}><v>{value if type(value) is int else repr(float(value))}</v></c>"
    if kind == "boolean":
        return ' t="b"><v>1</v></c>' if value else ' t="b"><v>0</v></c>'
    if kind == "datetime":
        if cell.is_date_only:
            return f' s="{STYLE_DATE}"><v>{round(excel_serial(value))}</v></c>'
        return f' s="{STYLE_DATETIME}"><v>{excel_serial(value)!r}</v></c>'
    return ""


def column_formatter(column: ColumnDef, style: int | None = None) -> Formatter:
    """The formatter of one column, chosen once from its declared type (module rules).

    Args:
        column: the declared column.
        style: the style of its number format (INTEGER and DECIMAL columns), if any.

    Returns:
        A function of one raw value returning the cell element tail, ``""`` for no cell, or
        ``None`` when the caller must type the value with :func:`to_cell` (then warnings
        and errors come from there).
    """
    column_type = column.type
    if column_type is ColumnType.STRING:
        return _string
    if column_type is ColumnType.INTEGER:
        return _integer if style is None else _styled(_integer, style)
    if column_type is ColumnType.DECIMAL:
        return _decimal if style is None else _styled(_decimal, style)
    if column_type is ColumnType.BOOLEAN:
        return _boolean
    if column_type is ColumnType.DATE:
        return _date_formatter(column)
    return _datetime


def _styled(plain: Formatter, style: int) -> Formatter:
    """``plain`` with its number cells in style ``style``."""
    attribute = f' s="{style}"'

    def styled(value: Any) -> str | None:
        tail = plain(value)
        return attribute + tail if tail else tail

    return styled


def _string(value: Any) -> str | None:
    if type(value) is not str:
        return None
    if not value:
        return ""
    if len(value) > _SHORT_TEXT or value[0] in FORMULA_TRIGGERS:
        return None  # truncation and the injection guard live in cells.text_cell
    if _NOT_PLAIN.search(value) is not None or "_x" in value:
        return None
    if value[0] in _XML_SPACE or value[-1] in _XML_SPACE:
        return f' t="inlineStr"><is><t xml:space="preserve">{value}</t></is></c>'
    return f' t="inlineStr"><is><t>{value}</t></is></c>'


def _integer(value: Any) -> str | None:
    if type(value) is int and -MAX_EXACT_INTEGER <= value <= MAX_EXACT_INTEGER:
        return f"><v>{value}</v></c>"
    return None


def _decimal(value: Any) -> str | None:
    # value - value is 0.0 for a finite float and NaN for inf/NaN: a cheap isfinite.
    if type(value) is float and value - value == 0.0:
        return f"><v>{value!r}</v></c>"
    return None


_TRUE_XML = ' t="b"><v>1</v></c>'
_FALSE_XML = ' t="b"><v>0</v></c>'


def _boolean(value: Any) -> str | None:
    if value is True:
        return _TRUE_XML
    if value is False:
        return _FALSE_XML
    return None


def _date_formatter(column: ColumnDef) -> Formatter:
    """DATE strings repeat: remember the rendered cell of each clean one (bounded)."""
    cache: dict[str, str] = {}

    def date_cell(value: Any) -> str | None:
        if type(value) is not str:
            return None
        hit = cache.get(value)
        if hit is not None:
            return hit
        cell = to_cell(column, value)
        if cell.warning is not None:
            return None
        xml = cell_xml(cell)
        if len(cache) >= _DATE_CACHE_SIZE:
            cache.clear()
        cache[value] = xml
        return xml

    return date_cell


# What may follow "YYYY-MM-DDTHH:MM:SS" in the DATETIME form cells accepts, for the fast
# path below: nothing, Z, or an offset ±HH:MM with hours 00-23 and minutes 00-59. (The
# other forms — fractions, ±HHMM, ±HH, no seconds — take cells' own parser.)
_PLAIN_OFFSETS = frozenset(
    ["", "Z", "z"]
    + [f"{sign}{h:02d}:{m:02d}" for sign in "+-" for h in range(24) for m in range(60)]
)


def _datetime(value: Any) -> str | None:
    # Clean text is parsed here; the rest goes to cells, which decides and warns.
    if type(value) is not str:
        return None
    if (
        len(value) >= 19
        and value[19:] in _PLAIN_OFFSETS
        and value[4] == "-"
        and value[7] == "-"
        and value[10] in "Tt "
        and value[13] == ":"
        and value[16] == ":"
    ):
        # The commonest form, e.g. "2024-02-03T23:18:30+08:00", without the pattern match
        # (a third of this formatter's time): with its separators in place, fromisoformat
        # accepts exactly ASCII digits where the pattern wants them, and the wall time is
        # the first 19 characters, as cells.parse_datetime_text cuts it.
        try:
            moment = datetime.fromisoformat(value[:19])
        except ValueError:
            return None
    else:
        parsed = parse_datetime_text(value)
        if isinstance(parsed, str):
            return None
        moment = parsed
    if moment < EXCEL_MIN_DATETIME:
        return None
    return f' s="{STYLE_DATETIME}"><v>{excel_serial(moment)!r}</v></c>'


def escape_attribute(text: str) -> str:
    """``text`` as an XML attribute value in double quotes (the text rules, and ``\"``)."""
    return _XML_SPECIAL.sub(_xml_replace, text).replace('"', "&quot;")
