"""A Provider's batch as the core holds it: the columns the Provider declares (§10.1
``columns``, each with its cell type), the validated batch with its rows, and its summary
without them, which is what the cross-batch rules and the next request read.

The answer is validated into these by ``actors.core.provider.contract`` (its columns by
``actors.core.provider.columns``); the XLSX writer types cells by :class:`ColumnType`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class ColumnType(StrEnum):
    """Cell types a Provider may declare for a column (§11)."""

    STRING = "STRING"
    INTEGER = "INTEGER"
    DECIMAL = "DECIMAL"
    BOOLEAN = "BOOLEAN"
    DATE = "DATE"
    DATETIME = "DATETIME"


@dataclass(frozen=True, slots=True)
class ColumnDef:
    """One column of a Provider's schema (§10.1 ``columns``).

    ``width`` is in Excel character units, already validated to 1..255 or ``None``.
    ``number_format`` is an Excel number format code for an INTEGER or DECIMAL column
    (``"0.00"``, ``"#,##0.00"``, ``"[$¥-804]#,##0.00"``), already validated by
    ``actors.core.provider.columns.check_number_format``; ``None``: General.
    """

    key: str
    title: str
    type: ColumnType
    width: int | None = None
    number_format: str | None = None


@dataclass(frozen=True, slots=True)
class ProviderBatch:
    """One validated Provider response page (§10.1 ``data``).

    ``columns`` is set on the first batch only; ``rows`` are dicts keyed by column key
    with raw JSON values (typing happens in the writer). ``total_rows`` is an estimate
    for progress display only (§10.2).
    """

    schema_version: int
    schema_hash: str
    snapshot_token: str | None
    columns: tuple[ColumnDef, ...] | None
    rows: list[dict[str, Any]]
    next_cursor: str | None
    has_more: bool
    total_rows: int | None

    @property
    def row_count(self) -> int:
        """Rows in this batch."""
        return len(self.rows)

    def summary(self) -> BatchSummary:
        """The batch without its rows: what the cross-batch rules read."""
        return BatchSummary(
            schema_hash=self.schema_hash,
            snapshot_token=self.snapshot_token,
            columns=self.columns,
            next_cursor=self.next_cursor,
            has_more=self.has_more,
            total_rows=self.total_rows,
            row_count=len(self.rows),
        )


@dataclass(frozen=True, slots=True)
class BatchSummary:
    """One validated Provider batch (the answer's ``data``) without its rows.

    An export worker process decodes and keeps the rows; it hands the parent this summary,
    which is all the cross-batch rules need (schemaHash and snapshot token unchanged, the
    cursor advancing, the ``max-rows`` bounds) and all the next request needs (the cursor).
    Fields mean what they mean on :class:`ProviderBatch`; ``row_count`` is its number of
    rows.
    """

    schema_hash: str
    snapshot_token: str | None
    columns: tuple[ColumnDef, ...] | None
    next_cursor: str | None
    has_more: bool
    total_rows: int | None
    row_count: int
