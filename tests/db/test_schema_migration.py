"""An existing database gets the schema's new indexes and columns and loses the retired
indexes when it is migrated again (SQLite at every start, MySQL/MariaDB by
``export-center migrate``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio_asyncio

from db.database import Database
from db.migrations import ADDED_COLUMNS
from db.mysql import IndexChange, MysqlDatabase, schema_statements
from db.sqlite import SqliteDatabase
from tests.helpers import MYSQL_TEST_URL

#: Indexes added after databases were first deployed, and the one they replaced.
ADDED = (
    ("file_export_task", "idx_file_export_expiry"),
    ("file_export_task", "idx_file_export_requester_status"),
    ("file_export_task", "idx_file_export_scope"),
    ("file_export_task", "idx_file_export_scope_status"),
    ("file_export_outbox", "idx_file_export_outbox_sent"),
    ("file_export_task_event", "idx_file_export_task_event_task"),
    ("file_export_task_event", "idx_file_export_task_event_age"),
)
RETIRED = (
    "file_export_task",
    "idx_file_export_requester_active",
    "(tenant_id, app_code, requested_by, status, export_type)",
)


@pytest.mark.parametrize(
    ("statement", "change"),
    [
        (
            "CREATE INDEX idx_a ON file_export_task (status, id)",
            IndexChange("file_export_task", "idx_a", create=True),
        ),
        (
            "CREATE UNIQUE INDEX uk_b\n  ON file_export_outbox (event_id)",
            IndexChange("file_export_outbox", "uk_b", create=True),
        ),
        (
            "DROP INDEX idx_c ON file_export_task",
            IndexChange("file_export_task", "idx_c", create=False),
        ),
        ("CREATE TABLE IF NOT EXISTS t (id INT)", None),
        ("INSERT INTO file_export_task_guard (guard_key) SELECT 'GLOBAL_CREATE'", None),
    ],
)
def test_index_change_is_read_from_the_statement(
    statement: str, change: IndexChange | None
) -> None:
    assert IndexChange.parse(statement) == change


@pytest.mark.parametrize(
    ("create", "present", "due"),
    [(True, False, True), (True, True, False), (False, True, True), (False, False, False)],
)
def test_index_change_runs_only_when_it_changes_something(
    create: bool, present: bool, due: bool
) -> None:
    assert IndexChange("t", "i", create=create).due(present) is due


def test_every_secondary_index_of_the_mysql_schema_is_its_own_statement() -> None:
    """Inside CREATE TABLE an index would reach new databases only."""
    for stmt in schema_statements():
        if stmt.startswith("CREATE TABLE"):
            keys = [line for line in stmt.splitlines() if line.strip().startswith("KEY ")]
            assert keys == [], stmt


async def indexes(db: Database) -> set[tuple[str, str]]:
    async with db.transaction() as tx:
        if db.dialect.is_sqlite:
            rows = await tx.fetchall(
                "SELECT tbl_name AS t, name AS i FROM sqlite_master"
                " WHERE type = 'index' AND name NOT LIKE 'sqlite_%'"
            )
        else:
            rows = await tx.fetchall(
                "SELECT DISTINCT TABLE_NAME AS t, INDEX_NAME AS i"
                " FROM information_schema.STATISTICS"
                " WHERE TABLE_SCHEMA = DATABASE() AND INDEX_NAME <> 'PRIMARY'"
            )
    return {(r["t"], r["i"]) for r in rows}


async def columns(db: Database) -> list[tuple[str, str]]:
    """(table, column) of every table, in column order."""
    async with db.transaction() as tx:
        if db.dialect.is_sqlite:
            tables = await tx.fetchall(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
            found = []
            for t in tables:
                rows = await tx.fetchall(f"PRAGMA table_info({t['name']})")
                found += [(t["name"], r["name"]) for r in rows]
            return found
        rows = await tx.fetchall(
            "SELECT TABLE_NAME AS t, COLUMN_NAME AS c FROM information_schema.COLUMNS"
            " WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, ORDINAL_POSITION"
        )
    return [(r["t"], r["c"]) for r in rows]


async def make_it_old(db: Database) -> None:
    """Turn a fresh database into one created before the added indexes and tables."""
    table, name, columns = RETIRED
    async with db.transaction() as tx:
        for t, i in ADDED:
            await tx.execute(f"DROP INDEX {i}" + ("" if db.dialect.is_sqlite else f" ON {t}"))
        await tx.execute(f"CREATE INDEX {name} ON {table} {columns}")
        # and from before task histories: the table comes with the next migration
        await tx.execute("DROP TABLE file_export_task_event")
        for c in ADDED_COLUMNS:
            await tx.execute(f"ALTER TABLE {c.table} DROP COLUMN {c.name}")


async def test_sqlite_database_of_an_older_schema_is_brought_up_to_date(tmp_path: Path) -> None:
    fresh = SqliteDatabase(tmp_path / "fresh.db")
    fresh.migrate()
    expected = await indexes(fresh)
    expected_columns = await columns(fresh)
    await fresh.aclose()
    assert set(ADDED) <= expected and RETIRED[:2] not in expected
    assert {("file_export_task", c.name) for c in ADDED_COLUMNS} <= set(expected_columns)

    db = SqliteDatabase(tmp_path / "old.db")
    db.migrate()
    await make_it_old(db)
    assert not set(ADDED) & await indexes(db)
    assert not {("file_export_task", c.name) for c in ADDED_COLUMNS} & set(await columns(db))
    await db.aclose()

    db = SqliteDatabase(tmp_path / "old.db")  # the next start
    db.migrate()
    assert await indexes(db) == expected
    assert await columns(db) == expected_columns
    await db.aclose()


async def test_mariadb_database_of_an_older_schema_is_brought_up_to_date() -> None:
    async with trio_asyncio.open_loop() as loop:
        db = MysqlDatabase(MYSQL_TEST_URL + "_migration", loop, query_timeout=None)
        try:
            await db.drop_database()
            await db.migrate()
            expected = await indexes(db)
            expected_columns = await columns(db)
            assert set(ADDED) <= expected and RETIRED[:2] not in expected
            assert {("file_export_task", c.name) for c in ADDED_COLUMNS} <= set(expected_columns)
            await make_it_old(db)
            assert not set(ADDED) & await indexes(db)
            await db.migrate()
            assert await indexes(db) == expected
            assert await columns(db) == expected_columns
            await db.migrate()  # and again: nothing left to do, no error
            assert await indexes(db) == expected
            assert await columns(db) == expected_columns
        finally:
            await db.drop_database()
            await db.aclose()
