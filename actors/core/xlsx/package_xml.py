"""SpreadsheetML package text for the streaming XLSX writer: everything but the cells. Pure.

The sheet's head and tail (frozen header row, column widths, the patchable
``<dimension>``), the workbook, the styles, the content types and the relationships of an
XLSX (ECMA-376 Part 1, SpreadsheetML; the minimal package Excel, LibreOffice, openpyxl and
calamine read). The cells between head and tail are :mod:`actors.core.xlsx.cell_xml`'s.
"""

from __future__ import annotations

from collections.abc import Sequence

from actors.core.xlsx.cell_xml import (
    DATE_FORMAT,
    DATETIME_FORMAT,
    STYLE_HEADER,
    column_letter,
    escape_attribute,
    inline_string,
)

_MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_REL_NS = "http://schemas.openxmlformats.org/package/2006/relationships"
_XML_DECL = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'


def column_width(chars: int) -> float:
    """Stored ``<col width>`` for a width in characters, padded as Excel and xlsxwriter do.

    Excel stores the width of a column with the cell padding included: ``int(chars * 7 +
    5 + 0.5) / 7`` for the default font (Calibri 11, maximum digit width 7 pixels, padding
    5 pixels), so a declared 8 becomes 8.71.

    Args:
        chars: width in characters, 1..255.
    """
    return int(chars * 7 + 5 + 0.5) / 7


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
        f'<c r="{column_letter(c)}1" s="{STYLE_HEADER}"{inline_string(title)}' if title else ""
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
            (``actors.core.provider.columns.check_number_format``).
    """
    custom = "".join(
        f'<numFmt numFmtId="{_FIRST_CUSTOM_NUMFMT + i}" formatCode="{escape_attribute(code)}"/>'
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


def workbook_xml(sheet_names: Sequence[str]) -> str:
    """``xl/workbook.xml`` listing the sheets in order (relationship ``rId<n>``)."""
    sheets = "".join(
        f'<sheet name="{escape_attribute(name)}" sheetId="{n}" r:id="rId{n}"/>'
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
