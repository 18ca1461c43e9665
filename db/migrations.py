"""Schema changes an existing database needs beyond what ``CREATE … IF NOT EXISTS`` brings.

A column added to a table that already exists reaches an older database only through
``ALTER TABLE … ADD COLUMN``; neither SQLite nor MySQL 8 has ``ADD COLUMN IF NOT EXISTS``,
so ``migrate`` (``db.sqlite``, ``db.mysql``) asks the catalogue first and adds only the
missing ones. Each column is also in ``db/schema/*.sql``, at the end of its table, so a
migrated database has the same columns in the same order as a fresh one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AddedColumn:
    """A column added to an existing table after databases were first deployed.

    Attributes:
        table: the table it belongs to.
        name: the column name.
        sqlite_type: its definition in ``db/schema/sqlite.sql``.
        mysql_type: its definition in ``db/schema/mysql.sql``.
    """

    table: str
    name: str
    sqlite_type: str
    mysql_type: str

    def add_statement(self, sqlite: bool) -> str:
        """The ``ALTER TABLE`` that adds it, for SQLite or MySQL/MariaDB."""
        definition = self.sqlite_type if sqlite else self.mysql_type
        return f"ALTER TABLE {self.table} ADD COLUMN {self.name} {definition}"


#: In the order they were added, which is their order at the end of their table.
ADDED_COLUMNS = (
    # W3C trace id of the create request (32 lowercase hex); travels with the task's run.
    AddedColumn(
        "file_export_task",
        "trace_id",
        "TEXT NULL",
        "VARCHAR(32) NULL COMMENT 'W3C trace id (32 lowercase hex), created at the API'",
    ),
    # JSON list of the data warnings (e.g. cells truncated) of the last successful run.
    AddedColumn(
        "file_export_task",
        "warnings_json",
        "TEXT NULL",
        "TEXT NULL COMMENT 'JSON list of the data warnings of the last successful run'",
    ),
)
