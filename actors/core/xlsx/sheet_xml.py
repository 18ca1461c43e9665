"""SpreadsheetML text for the streaming XLSX writer: cells, sheet frame, package parts. Pure.

The writer (``actors.pipeline.xlsx_stream``) streams what these functions return into the
zip entries of an XLSX file; nothing here does IO. Two layers:

* **Per-column formatters**, chosen once per column from its declared type
  (:func:`column_formatter`). Each takes one raw Provider value and returns the rest of
  the cell element after ``<c r="B7"`` — for the values that are already exactly what the
  column wants (an ``int`` in an INTEGER column, a short guard-free ``str`` in a STRING
  column …). Anything else makes it return ``None`` and the writer types the value with
  :func:`actors.core.xlsx.cells.to_cell`, the single source of the typing rules, and renders
  the result with :func:`cell_xml`. So a fast path can only ever agree with the rules:
  tests check every formatter against ``cell_xml(to_cell(...))``.
* **Package text**: the sheet's head and tail (frozen header row, column widths), the
  workbook, the styles, the content types and the relationships of an XLSX
  (ECMA-376 Part 1, SpreadsheetML; the minimal package Excel, LibreOffice, openpyxl and
  calamine read).

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
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from actors.core.models import ColumnDef, ColumnType
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

#: Style indexes (``s=``) of ``cellXfs`` in :data:`STYLES_XML`.
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


def column_width(chars: int) -> float:
    """Stored ``<col width>`` for a width in characters, padded as Excel and xlsxwriter do.

    Excel stores the width of a column with the cell padding included: ``int(chars * 7 +
    5 + 0.5) / 7`` for the default font (Calibri 11, maximum digit width 7 pixels, padding
    5 pixels), so a declared 8 becomes 8.71.

    Args:
        chars: width in characters, 1..255.
    """
    return int(chars * 7 + 5 + 0.5) / 7


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


def _inline_string(text: str) -> str:
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
        return _inline_string(value) if value else ""
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


# --- package parts ---------------------------------------------------------------------

_MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_REL_NS = "http://schemas.openxmlformats.org/package/2006/relationships"
_XML_DECL = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'

#: Length of :func:`sheet_prefix` (ASCII), fixed by the widest reference Excel allows.
SHEET_PREFIX_CHARS = len(
    f'{_XML_DECL}<worksheet xmlns="{_MAIN_NS}" xmlns:r="{_REL_NS}"><dimension ref="A1:XFD1048576"/>'
)

#: Sheet XML after the last row.
SHEET_TAIL = (
    '</sheetData><pageMargins left="0.7" right="0.7" top="0.75" bottom="0.75" '
    'header="0.3" footer="0.3"/></worksheet>'
)


def sheet_prefix(columns: int, last_row: int) -> str:
    """Sheet XML up to and including ``<dimension>``, always :data:`SHEET_PREFIX_CHARS` long.

    The writer puts it first and overwrites it once the sheet's last row is known, so its
    length must not depend on the numbers: spaces after the element pad it (whitespace
    between elements means nothing in XML).

    Args:
        columns: number of columns, 1..16384.
        last_row: 1-based number of the sheet's last row with a cell (1: header only).
    """
    text = (
        f'{_XML_DECL}<worksheet xmlns="{_MAIN_NS}" xmlns:r="{_REL_NS}">'
        f'<dimension ref="A1:{column_letter(columns - 1)}{last_row}"/>'
    )
    return text.ljust(SHEET_PREFIX_CHARS)


def sheet_head(widths: Sequence[int], headers: Sequence[str], *, selected: bool) -> str:
    """Sheet XML after :func:`sheet_prefix` up to and including the header row: frozen
    first row, column widths.

    Args:
        widths: width of each column in characters, 1..255.
        headers: header titles, already guarded (``cells.text_cell``).
        selected: the sheet is the one Excel opens on (the first).
    """
    cols = "".join(
        f'<col min="{n}" max="{n}" width="{column_width(w)!r}" customWidth="1"/>'
        for n, w in enumerate(widths, 1)
    )
    cells = "".join(
        f'<c r="{column_letter(c)}1" s="{STYLE_HEADER}"{_inline_string(title)}' if title else ""
        for c, title in enumerate(headers)
    )
    tab = ' tabSelected="1"' if selected else ""
    return (
        f'<sheetViews><sheetView{tab} workbookViewId="0">'
        '<pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>'
        '<selection pane="bottomLeft" activeCell="A2" sqref="A2"/></sheetView></sheetViews>'
        f'<sheetFormatPr defaultRowHeight="15"/><cols>{cols}</cols>'
        f'<sheetData><row r="1">{cells}</row>'
    )


#: Style index of the first column number format of :func:`styles_xml` (then one more each).
STYLE_FIRST_NUMBER_FORMAT = 4
_FIRST_CUSTOM_NUMFMT = 166  # 164 and 165 are the date and date-time formats


def styles_xml(number_formats: Sequence[str] = ()) -> str:
    """``xl/styles.xml``: styles 0 default, 1 bold header, 2 date, 3 date-time (the
    ``STYLE_*`` indexes), then one style per number format of the columns, in the order
    given, from :data:`STYLE_FIRST_NUMBER_FORMAT`.

    Args:
        number_formats: distinct format codes, already checked
            (``actors.core.provider.contract.check_number_format``).
    """
    custom = "".join(
        f'<numFmt numFmtId="{_FIRST_CUSTOM_NUMFMT + i}" formatCode="{_attribute(code)}"/>'
        for i, code in enumerate(number_formats)
    )
    custom_xfs = "".join(
        f'<xf numFmtId="{_FIRST_CUSTOM_NUMFMT + i}" fontId="0" fillId="0" borderId="0" '
        'xfId="0" applyNumberFormat="1"/>'
        for i in range(len(number_formats))
    )
    return (
        f'{_XML_DECL}<styleSheet xmlns="{_MAIN_NS}">'
        f'<numFmts count="{2 + len(number_formats)}">'
        f'<numFmt numFmtId="164" formatCode="{DATE_FORMAT}"/>'
        f'<numFmt numFmtId="165" formatCode="{DATETIME_FORMAT}"/>{custom}</numFmts>'
        '<fonts count="2">'
        '<font><sz val="11"/><color theme="1"/><name val="Calibri"/><family val="2"/>'
        '<scheme val="minor"/></font>'
        '<font><b/><sz val="11"/><color theme="1"/><name val="Calibri"/><family val="2"/>'
        '<scheme val="minor"/></font></fonts>'
        '<fills count="2"><fill><patternFill patternType="none"/></fill>'
        '<fill><patternFill patternType="gray125"/></fill></fills>'
        '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
        '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/>'
        "</cellStyleXfs>"
        f'<cellXfs count="{4 + len(number_formats)}">'
        '<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>'
        '<xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/>'
        '<xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
        '<xf numFmtId="165" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
        f"{custom_xfs}</cellXfs>"
        '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
        "</styleSheet>"
    )


#: The styles of a workbook whose columns carry no number format.
STYLES_XML = styles_xml()

#: ``_rels/.rels``: the package's one relationship, to the workbook.
ROOT_RELS_XML = (
    f'{_XML_DECL}<Relationships xmlns="{_PKG_REL_NS}">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    'relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>'
)


def sheet_path(number: int) -> str:
    """Zip entry name of the 1-based sheet ``number``."""
    return f"xl/worksheets/sheet{number}.xml"


def _attribute(text: str) -> str:
    return _XML_SPECIAL.sub(_xml_replace, text).replace('"', "&quot;")


def workbook_xml(sheet_names: Sequence[str]) -> str:
    """``xl/workbook.xml`` listing the sheets in order (relationship ``rId<n>``)."""
    sheets = "".join(
        f'<sheet name="{_attribute(name)}" sheetId="{n}" r:id="rId{n}"/>'
        for n, name in enumerate(sheet_names, 1)
    )
    return (
        f'{_XML_DECL}<workbook xmlns="{_MAIN_NS}" xmlns:r="{_REL_NS}">'
        f'<bookViews><workbookView activeTab="0"/></bookViews><sheets>{sheets}</sheets>'
        "</workbook>"
    )


def workbook_rels_xml(sheet_count: int) -> str:
    """``xl/_rels/workbook.xml.rels``: sheets ``rId1..n``, then the styles."""
    base = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    sheets = "".join(
        f'<Relationship Id="rId{n}" Type="{base}/worksheet" Target="worksheets/sheet{n}.xml"/>'
        for n in range(1, sheet_count + 1)
    )
    return (
        f'{_XML_DECL}<Relationships xmlns="{_PKG_REL_NS}">{sheets}'
        f'<Relationship Id="rId{sheet_count + 1}" Type="{base}/styles" Target="styles.xml"/>'
        "</Relationships>"
    )


def content_types_xml(sheet_count: int) -> str:
    """``[Content_Types].xml`` for the workbook, its styles and ``sheet_count`` sheets."""
    ct = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    sheets = "".join(
        f'<Override PartName="/{sheet_path(n)}" ContentType="{ct}.worksheet+xml"/>'
        for n in range(1, sheet_count + 1)
    )
    return (
        f"{_XML_DECL}<Types "
        'xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" '
        'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        f'<Override PartName="/xl/workbook.xml" ContentType="{ct}.sheet.main+xml"/>'
        f'<Override PartName="/xl/styles.xml" ContentType="{ct}.styles+xml"/>'
        f"{sheets}</Types>"
    )
