"""Warnings about a Provider's data, counted during a run and summarised once. Pure.

§11 wants a WARN, not an error, for a truncated cell, a value that does not fit its column
type and a row key that is not a declared column. Logged one by one they flood the log:
rows with thousands of undeclared keys once wrote 250,000 lines and one 2.86 MB line per
export. So the writer only *counts* here, keeping a few examples each, and the run logs
:meth:`WarningCounts.summary` once — a single line of bounded length whatever the data.

Cell values are never kept or quoted (§12: no row data in logs); examples name where a
value was (batch, row, column key) or, for undeclared fields, the key.
"""

from __future__ import annotations

from collections.abc import Iterable

from actors.core.data_warning import DataWarning, WarningKind
from actors.core.text import quote_outside

#: Examples kept per kind of warning.
EXAMPLES_PER_KIND = 3
#: Distinct undeclared field names counted exactly; beyond it the count says "at least".
DISTINCT_FIELDS_COUNTED = 1000
#: Longest key or note quoted in a summary, in characters of the original text.
_QUOTE_CHARS = 60
_MAX_NOTES = 5


def cell_location(batch: int | None, row: int, column: str) -> str:
    """Where a cell is, for messages: ``batch 3 row 17 column 'remark'``.

    Args:
        batch: 1-based batch number of the run, or ``None`` when unknown.
        row: 1-based row number within the batch (within the export if ``batch`` is
            ``None``).
        column: the column key, quoted escaped and clipped (it comes from the Provider).

    Returns:
        The location text.
    """
    prefix = f"batch {batch} " if batch is not None else ""
    return f"{prefix}row {row} column '{quote_outside(column, _QUOTE_CHARS)}'"


class WarningCounts:
    """Counters and a few examples of what the writer changed or ignored (§11).

    Attributes:
        truncated: cells cut to Excel's 32,767-character limit.
        invalid_values: values that did not fit their column type and were written as text.
        ignored_values: values dropped because their key is not a declared column.
        rows_with_undeclared: rows that carried at least one undeclared key.
    """

    def __init__(self) -> None:
        self.truncated = 0
        self.invalid_values = 0
        self.ignored_values = 0
        self.rows_with_undeclared = 0
        self._truncated_at: list[str] = []
        self._invalid_at: list[str] = []
        self._field_examples: list[str] = []
        self._field_hashes: set[int] = set()  # hashes, not names: a key may be megabytes
        self._notes: list[DataWarning] = []
        self._more_notes = 0

    def truncated_cell(self, batch: int | None, row: int, column: str) -> None:
        """Count a cell cut to 32,767 characters at ``batch``/``row``/``column``."""
        self.truncated += 1
        if len(self._truncated_at) < EXAMPLES_PER_KIND:
            self._truncated_at.append(cell_location(batch, row, column))

    def invalid_value(self, batch: int | None, row: int, column: str) -> None:
        """Count a value written as text because it does not fit its column type."""
        self.invalid_values += 1
        if len(self._invalid_at) < EXAMPLES_PER_KIND:
            self._invalid_at.append(cell_location(batch, row, column))

    def undeclared_fields(self, keys: Iterable[str]) -> None:
        """Count one row's keys that are not declared columns (ignored, §11).

        Args:
            keys: the row's undeclared keys; at least one.
        """
        self.rows_with_undeclared += 1
        hashes = self._field_hashes
        for key in keys:
            self.ignored_values += 1
            if len(hashes) < DISTINCT_FIELDS_COUNTED:
                h = hash(key)
                if h not in hashes:
                    hashes.add(h)
                    if len(self._field_examples) < EXAMPLES_PER_KIND:
                        self._field_examples.append(f"'{quote_outside(key, _QUOTE_CHARS)}'")

    def note(self, warning: DataWarning) -> None:
        """Add a run-level warning (e.g. fewer rows than announced, its kind with it); at
        most a few are kept, the rest counted. Its detail is escaped and clipped."""
        if len(self._notes) < _MAX_NOTES:
            self._notes.append(DataWarning(warning.kind, quote_outside(warning.detail, 300)))
        else:
            self._more_notes += 1

    @property
    def distinct_undeclared_fields(self) -> int:
        """Distinct undeclared keys seen, exact up to :data:`DISTINCT_FIELDS_COUNTED`."""
        return len(self._field_hashes)

    def __bool__(self) -> bool:
        return bool(self.truncated or self.invalid_values or self.ignored_values or self._notes)

    def summary(self) -> str:
        """All warnings in one line of bounded length (well under 2 KB), or ``""``.

        Returns:
            e.g. ``"2 cells truncated to 32767 characters (batch 1 row 7 column 'remark',
            …); 250000 values of 2000 undeclared fields ignored in 125 rows (fields 'k0',
            'k1', 'k2', …)"``: the details of :meth:`lines` joined by ``"; "``.
        """
        return "; ".join(warning.detail for warning in self.lines())

    def lines(self) -> list[DataWarning]:
        """The warnings, one per kind and per note, each with its kind, as the task keeps
        them for its API (``dataWarnings`` of the task JSON); bounded like :meth:`summary`.

        Returns:
            At most three kinds plus a few notes (and their count beyond); ``[]`` when
            there is nothing to report.
        """
        parts: list[DataWarning] = []
        if self.truncated:
            parts.append(
                DataWarning(
                    WarningKind.TRUNCATED_CELLS,
                    f"{self.truncated} cells truncated to 32767 characters"
                    f"{_examples(self._truncated_at, self.truncated)}",
                )
            )
        if self.invalid_values:
            parts.append(
                DataWarning(
                    WarningKind.INVALID_VALUES,
                    f"{self.invalid_values} values invalid for their column type written as"
                    f" text{_examples(self._invalid_at, self.invalid_values)}",
                )
            )
        if self.ignored_values:
            distinct = self.distinct_undeclared_fields
            fields = f"{'at least ' if distinct >= DISTINCT_FIELDS_COUNTED else ''}{distinct}"
            parts.append(
                DataWarning(
                    WarningKind.UNDECLARED_FIELDS,
                    f"{self.ignored_values} values of {fields} undeclared fields ignored in "
                    f"{self.rows_with_undeclared} rows"
                    f"{_examples(self._field_examples, distinct, label='fields ')}",
                )
            )
        parts.extend(self._notes)
        if self._more_notes:
            parts.append(DataWarning(WarningKind.NOTE, f"{self._more_notes} more notes"))
        return parts


def _examples(examples: list[str], count: int, *, label: str = "") -> str:
    if not examples:
        return ""
    more = ", …" if count > len(examples) else ""
    return f" ({label}{', '.join(examples)}{more})"
