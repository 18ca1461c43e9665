"""No string cell the writer produces can start with a formula trigger (§11), judged on the
text a reader gets back from the XML, not on the value the Provider sent.

Issue 24 item 2: ``"\\x00=1"`` was guarded by its first character (NUL, no trigger), then the
XML writer dropped the NUL and the file held ``=1``; a leading LF and a full-width ``＝``
were not triggers at all. The property test below writes arbitrary text through both of the
writer's paths (the fast formatter and the typed cell) for every column type and reads the
cell back with an XML parser.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.core.batch import ColumnDef, ColumnType
from actors.core.xlsx.cell_xml import cell_xml, column_formatter
from actors.core.xlsx.cells import FORMULA_TRIGGERS, XML_DROPPED, to_cell

COLUMNS = [ColumnDef("v", "V", kind) for kind in ColumnType]

#: Text built to hit the guard's edges: triggers, dropped characters, spaces, lone
#: surrogates and ordinary characters, in any order.
EDGY = st.text(
    alphabet=st.sampled_from(FORMULA_TRIGGERS + XML_DROPPED + " 'a1\u3000\ud800") | st.characters(),
    max_size=12,
)


def written(column: ColumnDef, value: Any) -> str | None:
    """What a reader gets back from the cell the writer makes of ``value`` (the writer's
    fast path first, the typed cell otherwise, as ``xlsx_stream`` does); ``None`` for a
    cell that is not text."""
    fragment = column_formatter(column)(value)
    if fragment is None:
        fragment = cell_xml(to_cell(column, value))
    if "inlineStr" not in fragment:
        return None
    element = ET.fromstring(f'<c r="A1"{fragment}')
    return "".join(element.itertext())


@pytest.mark.parametrize(
    "text",
    ["\x00=1", "\x0b=1", "\x01\x02+1", "\ufffe-1", "\n=1", "\uff1d1+1", "\uff0b1", "\uff20x"],
)
@pytest.mark.parametrize("column", COLUMNS, ids=[c.type.value for c in COLUMNS])
def test_the_reported_inputs_are_guarded(column: ColumnDef, text: str) -> None:
    cell = written(column, text)
    assert cell is not None and cell.startswith("'"), repr(cell)


def test_text_that_starts_harmlessly_is_left_alone() -> None:
    column = COLUMNS[0]
    assert written(column, "\x00a=1") == "a=1"
    assert written(column, " =1") == " =1"
    assert written(column, "1=1") == "1=1"


@settings(max_examples=3000, deadline=None)
@given(column=st.sampled_from(COLUMNS), text=EDGY)
def test_no_written_string_cell_starts_with_a_formula_trigger(column: ColumnDef, text: str) -> None:
    cell = written(column, text)
    assert cell is None or cell == "" or cell[0] not in FORMULA_TRIGGERS, repr(cell)
