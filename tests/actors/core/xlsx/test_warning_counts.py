"""Warnings about Provider data are counted and summarised in one bounded line (§11).

Issue 8 item 3(c): rows with thousands of undeclared keys once wrote 250,000 WARNING lines
and one 2.86 MB line per export.
"""

from __future__ import annotations

from actors.core.data_warning import DataWarning, WarningKind
from actors.core.xlsx.warning_counts import (
    DISTINCT_FIELDS_COUNTED,
    EXAMPLES_PER_KIND,
    WarningCounts,
    cell_location,
)


def test_reported_input_250000_undeclared_values_make_one_short_summary() -> None:
    warnings = WarningCounts()
    keys = [f"undeclared_field_{k:04d}_" + "x" * 40 for k in range(2000)]
    for _ in range(125):
        warnings.undeclared_fields(keys)
    summary = warnings.summary()
    assert warnings.ignored_values == 250_000
    assert warnings.rows_with_undeclared == 125
    assert warnings.distinct_undeclared_fields == DISTINCT_FIELDS_COUNTED
    assert summary.startswith(
        f"250000 values of at least {DISTINCT_FIELDS_COUNTED} undeclared fields ignored in "
        "125 rows (fields 'undeclared_field_0000_"
    )
    assert summary.count("undeclared_field_") == EXAMPLES_PER_KIND
    assert len(summary) < 1000


def test_cells_are_counted_with_a_few_located_examples_and_no_values() -> None:
    warnings = WarningCounts()
    for row in range(1, 21):
        warnings.truncated_cell(2, row, "remark")
        warnings.invalid_value(None, row, "amount")
    summary = warnings.summary()
    assert warnings.truncated == 20 and warnings.invalid_values == 20
    assert (
        "20 cells truncated to 32767 characters (batch 2 row 1 column 'remark', "
        "batch 2 row 2 column 'remark', batch 2 row 3 column 'remark', …)" in summary
    )
    assert "20 values invalid for their column type written as text (row 1 column 'amount'" in (
        summary
    )


def test_hostile_keys_and_notes_are_escaped_and_clipped() -> None:
    warnings = WarningCounts()
    warnings.undeclared_fields(["k\n2026-12-01 FORGED", "y" * 10_000])
    warnings.note(
        DataWarning(WarningKind.FEWER_ROWS, "provider announced totalRows 9\r\n but sent 3")
    )
    for n in range(10):
        warnings.note(DataWarning(WarningKind.NOTE, f"note {n}"))
    summary = warnings.summary()
    assert "\n" not in summary and "\r" not in summary
    assert "'k\\n2026-12-01 FORGED'" in summary
    assert "y" * 61 not in summary
    assert "totalRows 9\\r\\n but sent 3" in summary
    assert summary.endswith("6 more notes")


def test_no_warnings_is_falsy_and_empty() -> None:
    warnings = WarningCounts()
    assert not warnings and warnings.summary() == ""
    warnings.note(DataWarning(WarningKind.NOTE, "x"))
    assert warnings


def test_cell_location_names_batch_row_and_escaped_column() -> None:
    assert cell_location(3, 17, "remark") == "batch 3 row 17 column 'remark'"
    assert cell_location(None, 5, "a\rb") == "row 5 column 'a\\rb'"
