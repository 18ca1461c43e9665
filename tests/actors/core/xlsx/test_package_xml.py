"""Pure SpreadsheetML package text (actors.core.xlsx.package_xml): column widths, the
sheet's frozen header row, sheet names in the workbook."""

from __future__ import annotations

import pytest

from actors.core.xlsx.cells import text_cell
from actors.core.xlsx.package_xml import column_width, sheet_head, workbook_xml


@pytest.mark.parametrize(("chars", "stored"), [(1, 12 / 7), (8, 61 / 7), (255, 1790 / 7)])
def test_column_width_adds_excels_cell_padding(chars: int, stored: float) -> None:
    assert column_width(chars) == pytest.approx(stored)


def test_header_row_of_a_sheet_is_frozen_bold_and_sized() -> None:
    head = sheet_head([8, 30], [text_cell("ID").value, text_cell("=x").value], selected=True)
    assert '<pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>' in head
    assert '<col min="1" max="1" width="8.714285714285714" customWidth="1"/>' in head
    assert '<c r="A1" s="1" t="inlineStr"><is><t>ID</t></is></c>' in head
    assert "<t>'=x</t>" in head
    assert head.endswith("</row>")


def test_workbook_escapes_sheet_names() -> None:
    assert 'name="a&amp;b &quot;c&quot;"' in workbook_xml(['a&b "c"'])
