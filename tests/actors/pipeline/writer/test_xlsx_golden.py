"""The XLSX writer's output, pinned part by part: a fixed export (every column type,
hostile strings, blanks, a cell over Excel's length limit, a second sheet) must give the
same parts, in the same order, with the same bytes.

The other writer tests read files back through openpyxl, LibreOffice and others, which
forgive a great deal; this one catches any change at all in what is written (a changed
style index, an attribute dropped, parts reordered), so a change to the writer that is
meant to keep its output (a refactor, a faster path) can prove it did. The bytes compared
are each part's uncompressed content: the compressor's own output may change with its
version without the file changing for any reader.

When the output changes on purpose, check the new file in the readers
(``test_xlsx_readers.py``), then replace :data:`GOLDEN` with what the failure prints.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from typing import Any

from actors.core.batch import ColumnDef, ColumnType
from actors.pipeline.writer.xlsx_stream import XlsxStreamWriter

COLUMNS = [
    ColumnDef("id", "ID", ColumnType.INTEGER, width=8),
    ColumnDef("name", "名前 & <Name>", ColumnType.STRING, width=30),
    ColumnDef("amount", "Amount", ColumnType.DECIMAL),
    ColumnDef("active", "Active", ColumnType.BOOLEAN, width=0),
    ColumnDef("born", "Born", ColumnType.DATE, width=12),
    ColumnDef("seen", "Seen", ColumnType.DATETIME, width=255),
]


def rows() -> list[dict[str, Any]]:
    """Seven rows: typed values, blanks, hostile strings, a too-long cell, an
    undeclared key."""
    out: list[dict[str, Any]] = [
        {
            "id": i,
            "name": f"name {i}",
            "amount": f"{i}.25",
            "active": i % 2 == 0,
            "born": "1990-05-17",
            "seen": "2024-03-01T10:20:30+08:00",
        }
        for i in range(1, 4)
    ]
    out.append({"id": -9007199254740993, "name": None, "amount": "-0.000001"})
    out.append({"id": 5, "name": "=1+1\t\r\n\x01 \"quoted\" 'single' ]]>", "extra": 1})
    out.append({"id": 6, "name": "L" * 40_000, "amount": 1e21, "active": True})
    out.append({"id": 7, "name": "😀 emoji, 中文, العربية", "born": "2000-02-29"})
    return out


#: Part name -> SHA-256 of its uncompressed bytes, in the order written. The same before
#: and after the writer's restructuring of issue 23 (commits 9a0764d and after).
GOLDEN: dict[str, str] = {
    "xl/worksheets/sheet1.xml": "8cebcced58ac55f0788ea7b380bc76f5828ae557c81ffb1c4c8a1701350d4b5f",
    "xl/worksheets/sheet2.xml": "ab08381891c83faf6660f364a03ad1c6bd636a19d331de688999774e28baf583",
    "xl/workbook.xml": "c029cfec54f6ee5ac350ecd19946e07dd9de7da6140d288a1c691c9ae250a056",
    "xl/_rels/workbook.xml.rels": (
        "2a97d1a56a4698cb1e2290e1a7a60392e23e65adae18ab2d99e2e682486ecf3a"
    ),
    "xl/styles.xml": "cc54ea1dbe4100de7bd5d7af03560a3a77a3b479605d82aed203289d696a95e8",
    "_rels/.rels": "9f96bb683e71c45171c7ae310bf6c37fb5a834bb9738497ac7084c42ac9c2d9a",
    "[Content_Types].xml": "b94fc33e5e774e39bc882ee69d441aaca70acb2851c98ed8641059352060e8bb",
}


def parts() -> dict[str, str]:
    out = io.BytesIO()
    writer = XlsxStreamWriter(out, COLUMNS, max_rows=100, max_bytes=10**8, rows_per_sheet=4)
    batch = rows()
    writer.write_rows(batch[:2], batch=1)
    writer.write_rows(batch[2:], batch=2)
    writer.close()
    with zipfile.ZipFile(io.BytesIO(out.getvalue())) as book:
        return {
            info.filename: hashlib.sha256(book.read(info)).hexdigest() for info in book.infolist()
        }


def test_the_written_parts_are_byte_for_byte_the_pinned_ones() -> None:
    got = parts()
    changed = sorted(name for name in set(got) | set(GOLDEN) if got.get(name) != GOLDEN.get(name))
    assert list(got.items()) == list(GOLDEN.items()), (
        f"parts changed: {changed}; if on purpose, GOLDEN is now {got!r}"
    )
