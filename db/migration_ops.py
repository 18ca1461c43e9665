"""The operations of a schema step, written once for both dialects without IO.

A migration is a conversation (``db/migrations.py``): each operation asks the catalogue
whether its change is there (neither SQLite nor MySQL 8 has ``ADD COLUMN IF NOT EXISTS`` or
``CREATE INDEX IF NOT EXISTS`` in both) and yields the DDL only when it is not, so every
operation is idempotent. A step's DDL is frozen as it was written when the step was added.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

from db.dialect import Dialect

# -- catalogue probes ----------------------------------------------------------------------

TABLE_EXISTS = {
    "sqlite": "SELECT 1 AS present FROM sqlite_master WHERE type = 'table' AND name = :table",
    "mysql": "SELECT 1 AS present FROM information_schema.TABLES"
    " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = :table",
}
INDEX_EXISTS = {
    "sqlite": "SELECT 1 AS present FROM sqlite_master"
    " WHERE type = 'index' AND tbl_name = :table AND name = :name",
    "mysql": "SELECT 1 AS present FROM information_schema.STATISTICS"
    " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = :table AND INDEX_NAME = :name LIMIT 1",
}
COLUMN_EXISTS = {
    "sqlite": "SELECT 1 AS present FROM pragma_table_info(:table) WHERE name = :name",
    "mysql": "SELECT 1 AS present FROM information_schema.COLUMNS"
    " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = :table AND COLUMN_NAME = :name",
}


@dataclass(frozen=True, slots=True)
class Query:
    """One statement for a driver to run.

    Attributes:
        sql: rendered for the dialect (MySQL: pyformat, every literal ``%`` doubled; run it
            with the ``params`` dict even when it is empty).
        params: its named parameters.
    """

    sql: str
    params: Mapping[str, Any] = field(default_factory=dict)


#: What a driver sends back for a ``Query``: its rows (``[]`` for a statement without).
Rows = list[dict[str, Any]]
#: A migration or check written as a generator: yields queries, is sent their rows.
Conversation = Generator[Query, Rows, Any]


def query(dialect: Dialect, sql: str, params: Mapping[str, Any] | None = None) -> Query:
    return Query(dialect.render(sql), dict(params or {}))


def ddl(dialect: Dialect, sql: str) -> Query:
    # DDL is not a transition template: only pyformat's % needs escaping.
    return Query(sql if dialect.is_sqlite else sql.replace("%", "%%"))


def catalogue_has(dialect: Dialect, probes: Mapping[str, str], **params: str) -> Conversation:
    rows = yield query(dialect, probes[dialect.name], params)
    return bool(rows)


# -- upgrade operations --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CreateTable:
    """Create a table when it is missing (its DDL as written when the step was added)."""

    name: str
    sqlite: str
    mysql: str

    def apply(self, dialect: Dialect) -> Conversation:
        """Run it unless the table is there."""
        if not (yield from catalogue_has(dialect, TABLE_EXISTS, table=self.name)):
            yield ddl(dialect, self.sqlite if dialect.is_sqlite else self.mysql)


@dataclass(frozen=True, slots=True)
class CreateIndex:
    """Create a secondary index when it is missing. ``columns`` like ``(a, b)``."""

    table: str
    name: str
    columns: str

    def apply(self, dialect: Dialect) -> Conversation:
        """Run it unless an index of that name is there."""
        if not (yield from catalogue_has(dialect, INDEX_EXISTS, table=self.table, name=self.name)):
            yield ddl(dialect, f"CREATE INDEX {self.name} ON {self.table} {self.columns}")


@dataclass(frozen=True, slots=True)
class DropIndex:
    """Drop a retired secondary index when it is there."""

    table: str
    name: str

    def apply(self, dialect: Dialect) -> Conversation:
        """Run it if the index is there."""
        if (yield from catalogue_has(dialect, INDEX_EXISTS, table=self.table, name=self.name)):
            on = "" if dialect.is_sqlite else f" ON {self.table}"
            yield ddl(dialect, f"DROP INDEX {self.name}{on}")


@dataclass(frozen=True, slots=True)
class AddColumn:
    """Add a column at the end of an existing table when it is missing (so a migrated
    table has the columns of a fresh one in the same order)."""

    table: str
    name: str
    sqlite: str
    mysql: str

    def apply(self, dialect: Dialect) -> Conversation:
        """Run it unless the column is there."""
        if not (yield from catalogue_has(dialect, COLUMN_EXISTS, table=self.table, name=self.name)):
            definition = self.sqlite if dialect.is_sqlite else self.mysql
            yield ddl(dialect, f"ALTER TABLE {self.table} ADD COLUMN {self.name} {definition}")


@dataclass(frozen=True, slots=True)
class Backfill:
    """Fill a column just added to existing rows: one ``UPDATE`` written once for both
    dialects (``{now}``-free, no dialect function), idempotent by its own ``WHERE`` (it
    only touches rows still unset), so an interrupted step can run it again. On MySQL it
    must assign ``updated_at = updated_at`` (``ON UPDATE CURRENT_TIMESTAMP`` would move
    it otherwise)."""

    table: str
    sql: str

    def apply(self, dialect: Dialect) -> Conversation:
        """Run it."""
        yield ddl(dialect, self.sql)


Operation = CreateTable | CreateIndex | DropIndex | AddColumn | Backfill


@dataclass(frozen=True, slots=True)
class Step:
    """One schema version: what brings a database from ``version - 1`` to ``version``.

    Attributes:
        version: the version the database is at once the step is applied.
        description: one line, printed by ``export-center migrate`` and recorded.
        operations: applied in order, each idempotent.
    """

    version: int
    description: str
    operations: tuple[Operation, ...]
