"""The read-back checks of ``export-center accept`` (``actors/cli/acceptance.py``): the kind of
each cell, one kind per column, and a download that is not a ZIP or not a workbook. The
command against a live service is ``tests/system/test_accept.py``."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import Any

import pytest
import xlsxwriter

from actors.cli.acceptance import AcceptanceError, cell_kind, column_kinds, read_back


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (None, None),
        ("", None),
        (1.0, "number"),
        (7, "number"),
        (True, "boolean"),
        (date(2024, 1, 29), "date"),
        (datetime(2024, 1, 29, 8, 30), "datetime"),
        ("'=1+1", "text"),
    ],
)
def test_cell_kind(value: Any, kind: str | None) -> None:
    assert cell_kind(value) == kind


def test_one_kind_per_column_with_empty_cells_and_midnight_datetimes() -> None:
    header = ["id", "name", "at", "note"]
    rows: list[list[Any]] = [
        [1.0, "a", datetime(2024, 1, 29, 8, 30), ""],
        [2.0, "", date(2024, 1, 30), ""],  # a date-time at midnight reads back as a date
        [3.0, "c"],  # a short row: the missing cells are empty
    ]
    assert column_kinds(header, rows) == ("number", "text", "datetime", "empty")
    with pytest.raises(AcceptanceError, match=r"column 2 \(name\) mixes kinds: 2 text, 1 number"):
        column_kinds(header, [[1.0, "a"], [2.0, "b"], [3.0, 4.0]])


def test_read_back_an_xlsx(tmp_path: Path) -> None:
    path = tmp_path / "ok.xlsx"
    with xlsxwriter.Workbook(str(path)) as wb:
        ws = wb.add_worksheet()
        fmt = wb.add_format({"num_format": "yyyy-mm-dd hh:mm:ss"})
        ws.write_row(0, 0, ["id", "active", "at"])
        for i in range(1, 4):
            ws.write_number(i, 0, i)
            ws.write_boolean(i, 1, i % 2 == 0)
            ws.write_datetime(i, 2, datetime(2024, 1, i, 10, 0), fmt)
    assert read_back(path) == (3, ("number", "boolean", "datetime"))


def test_read_back_refuses_what_is_not_an_xlsx(tmp_path: Path) -> None:
    html = tmp_path / "error.html"
    html.write_bytes(b"<html>502 Bad Gateway</html>")
    with pytest.raises(AcceptanceError, match="not a ZIP file"):
        read_back(html)
    zipped = tmp_path / "other.zip"
    zipped.write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    with pytest.raises(AcceptanceError, match="not a readable XLSX"):
        read_back(zipped)
