"""Schema versions and upgrade steps (db/migrations.py): an empty database gets the whole
schema at the latest version; a database of an older schema gets each missing step once, in
order, and ends with the columns and indexes of a fresh one (SQLite at every start,
MySQL/MariaDB by ``export-center migrate``); a database newer than the code is refused."""

from __future__ import annotations

import inspect
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import trio_asyncio
from click.testing import CliRunner

from actors.cli.main import main
from db.database import Database
from db.migration_steps import BASELINE_VERSION, LATEST_VERSION
from db.migrations import (
    VERSION_TABLE,
    MigrationResult,
    SchemaVersionError,
)
from db.mysql import MysqlDatabase
from db.sqlite import SqliteDatabase
from tests.db.old_schema import MYSQL_V1, SQLITE_V1
from tests.helpers import MYSQL_TEST_URL

#: The versions an upgrade from the baseline applies.
ALL_STEPS = list(range(BASELINE_VERSION + 1, LATEST_VERSION + 1))

# -- what a database looks like ------------------------------------------------------------


async def shape(db: Database) -> dict[str, Any]:
    """Every column (table, name, type, nullability, default) in order, and every index
    with its columns in order: what must be equal between a migrated and a fresh database."""
    async with db.transaction() as tx:
        if db.dialect.is_sqlite:
            tables = [
                r["name"]
                for r in await tx.fetchall(
                    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
                )
            ]
            columns: list[tuple[Any, ...]] = []
            indexes = set()
            for t in tables:
                for r in await tx.fetchall(f"PRAGMA table_info({t})"):
                    columns.append((t, r["name"], r["type"], r["notnull"], r["dflt_value"]))
                for r in await tx.fetchall(f"PRAGMA index_list({t})"):
                    if r["origin"] == "pk":
                        continue
                    cols = await tx.fetchall(f"PRAGMA index_info({r['name']})")
                    names = tuple(c["name"] for c in sorted(cols, key=lambda c: c["seqno"]))
                    # an autoindex is SQLite's name for an inline UNIQUE; none are expected
                    indexes.add((t, r["name"], bool(r["unique"]), names))
            return {"columns": columns, "indexes": indexes}
        rows = await tx.fetchall(
            "SELECT TABLE_NAME AS t, COLUMN_NAME AS c, COLUMN_TYPE AS ty, IS_NULLABLE AS n,"
            " COLUMN_DEFAULT AS d, EXTRA AS e FROM information_schema.COLUMNS"
            " WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, ORDINAL_POSITION"
        )
        columns = [(r["t"], r["c"], r["ty"], r["n"], r["d"], r["e"]) for r in rows]
        rows = await tx.fetchall(
            "SELECT TABLE_NAME AS t, INDEX_NAME AS i, NON_UNIQUE AS nu, COLUMN_NAME AS c"
            " FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE()"
            " ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX"
        )
    grouped: dict[tuple[str, str, bool], list[str]] = {}
    for r in rows:
        grouped.setdefault((r["t"], r["i"], not int(r["nu"])), []).append(r["c"])
    return {"columns": columns, "indexes": {(*k, tuple(v)) for k, v in grouped.items()}}


async def versions(db: Database) -> list[int]:
    async with db.transaction() as tx:
        rows = await tx.fetchall(f"SELECT version FROM {VERSION_TABLE} ORDER BY version")
    return [int(r["version"]) for r in rows]


async def execute_script(db: Database, script: str) -> None:
    async with db.transaction() as tx:
        for stmt in re.split(r";\s*\n", script):
            if stmt.strip():
                await tx.execute(stmt.replace("%", "%%") if not db.dialect.is_sqlite else stmt)


def _names(shape_: dict[str, Any]) -> set[tuple[str, str]]:
    return {(c[0], c[1]) for c in shape_["columns"]}


NEW_COLUMNS = {("file_export_task", "trace_id"), ("file_export_task", "warnings_json")}
EVENT_TABLE_INDEX = ("file_export_task_event", "idx_file_export_task_event_task")
RETIRED_INDEX = ("file_export_task", "idx_file_export_requester_active")


def assert_is_version_1(old: dict[str, Any]) -> None:
    assert not NEW_COLUMNS & _names(old)
    assert not any(t == "file_export_task_event" for t, *_ in old["columns"])
    assert any(i[:2] == RETIRED_INDEX for i in old["indexes"])


# -- SQLite --------------------------------------------------------------------------------


async def test_sqlite_empty_database_gets_the_whole_schema_at_the_latest_version(
    tmp_path: Path,
) -> None:
    db = SqliteDatabase(tmp_path / "fresh.db")
    result = db.migrate()
    assert (result.found, result.fresh, result.version) == (None, True, LATEST_VERSION)
    assert await versions(db) == [LATEST_VERSION]
    again = db.migrate()
    assert not again.changed and again.summary().endswith("nothing to apply")
    assert NEW_COLUMNS <= _names(await shape(db))
    await db.aclose()


async def test_sqlite_database_of_version_1_is_brought_to_the_fresh_schema(
    tmp_path: Path,
) -> None:
    fresh = SqliteDatabase(tmp_path / "fresh.db")
    fresh.migrate()
    expected = await shape(fresh)
    await fresh.aclose()

    db = SqliteDatabase(tmp_path / "old.db")
    await execute_script(db, SQLITE_V1)
    assert_is_version_1(await shape(db))
    result = db.migrate()
    assert (result.found, [s.version for s in result.applied]) == (1, ALL_STEPS)
    assert "applied version 2: download-center tables" in result.summary()
    assert await versions(db) == [BASELINE_VERSION, *ALL_STEPS]
    assert await shape(db) == expected
    await db.aclose()

    db = SqliteDatabase(tmp_path / "old.db")  # the next start applies nothing
    assert not db.migrate().changed
    assert await versions(db) == [BASELINE_VERSION, *ALL_STEPS]
    await db.aclose()


async def test_sqlite_database_migrated_before_the_version_table_gets_only_what_it_lacks(
    tmp_path: Path,
) -> None:
    """A release without a version table already created the event table and indexes:
    step 2 finds them and does nothing, steps 3, 5, 7 and 8 add the columns."""
    fresh = SqliteDatabase(tmp_path / "fresh.db")
    fresh.migrate()
    expected = await shape(fresh)
    async with fresh.transaction() as tx:
        await tx.execute(f"DROP TABLE {VERSION_TABLE}")
        # and the columns of later steps, which such a release did not have either
        await tx.execute("ALTER TABLE file_export_outbox DROP COLUMN resent_at")
        await tx.execute("ALTER TABLE file_export_outbox DROP COLUMN seen_at")
        await tx.execute("ALTER TABLE file_export_task DROP COLUMN requester_name")
        await tx.execute("ALTER TABLE file_export_task DROP COLUMN failure_code")
        await tx.execute("ALTER TABLE file_export_task DROP COLUMN handback_count")
        await tx.execute("ALTER TABLE file_export_outbox DROP COLUMN due_at")
        await tx.execute("ALTER TABLE file_export_task DROP COLUMN warnings_json")
        await tx.execute("ALTER TABLE file_export_task DROP COLUMN trace_id")
    result = fresh.migrate()
    assert (result.found, [s.version for s in result.applied]) == (1, ALL_STEPS)
    assert await shape(fresh) == expected
    await fresh.aclose()


async def test_sqlite_database_newer_than_the_code_is_refused_unchanged(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "new.db")
    db.migrate()
    async with db.transaction() as tx:
        await tx.execute(
            f"INSERT INTO {VERSION_TABLE} (version, description, applied_at)"
            " VALUES (:v, 'from the future', 0)",
            {"v": LATEST_VERSION + 1},
        )
    before = await shape(db)
    with pytest.raises(SchemaVersionError, match="newer than the latest this release knows"):
        db.migrate()
    assert await shape(db) == before
    await db.aclose()


def test_migrate_command_prints_the_steps_then_nothing_to_apply(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(SQLITE_V1)
    conn.close()
    env = {"FILE_EXPORT_DATABASE_URL": f"sqlite:///{path}", "FILE_EXPORT_DATA_DIR": str(tmp_path)}
    first = CliRunner().invoke(main, ["migrate"], env=env)
    assert first.exit_code == 0, first.output
    assert "applied version 2: download-center tables" in first.output
    assert "applied version 3: file_export_task.trace_id and warnings_json" in first.output
    assert f"schema upgraded from version 1 to {LATEST_VERSION}" in first.output
    second = CliRunner().invoke(main, ["migrate"], env=env)
    assert second.exit_code == 0, second.output
    assert f"schema already at version {LATEST_VERSION}: nothing to apply" in second.output
    assert "applied" not in second.output


# -- MariaDB -------------------------------------------------------------------------------


@pytest.fixture
async def mariadb() -> AsyncIterator[MysqlDatabase]:
    async with trio_asyncio.open_loop() as loop:
        db = MysqlDatabase(MYSQL_TEST_URL + "_migration", loop, query_timeout=None)
        try:
            await db.drop_database()
            yield db
        finally:
            await db.drop_database()
            await db.aclose()


async def test_mariadb_database_of_version_1_is_brought_to_the_fresh_schema(
    mariadb: MysqlDatabase,
) -> None:
    result = await mariadb.migrate()
    assert (result.found, result.fresh) == (None, True)
    assert await versions(mariadb) == [LATEST_VERSION]
    assert await mariadb.check_schema() == LATEST_VERSION
    expected = await shape(mariadb)

    await mariadb.drop_database()
    await mariadb.create_database_if_missing()
    await execute_script(mariadb, MYSQL_V1)
    assert_is_version_1(await shape(mariadb))
    with pytest.raises(SchemaVersionError, match="at version 1.*run `export-center migrate`"):
        await mariadb.check_schema()

    result = await mariadb.migrate()
    assert (result.found, [s.version for s in result.applied]) == (1, ALL_STEPS)
    assert await versions(mariadb) == [BASELINE_VERSION, *ALL_STEPS]
    assert await shape(mariadb) == expected
    assert await mariadb.check_schema() == LATEST_VERSION

    again = await mariadb.migrate()  # and again: nothing left to do, no error
    assert not again.changed and again.summary().endswith("nothing to apply")
    assert await shape(mariadb) == expected


async def test_mariadb_database_newer_than_the_code_is_refused(mariadb: MysqlDatabase) -> None:
    await mariadb.migrate()
    async with mariadb.transaction() as tx:
        await tx.execute(
            f"INSERT INTO {VERSION_TABLE} (version, description, applied_at)"
            " VALUES (:v, 'from the future', CURRENT_TIMESTAMP(3))".replace(":v", "%(v)s"),
            {"v": LATEST_VERSION + 1},
        )
    for attempt in (mariadb.migrate, mariadb.check_schema):
        with pytest.raises(SchemaVersionError, match="migrated by a newer Export Center"):
            await attempt()


async def test_mariadb_install_that_stopped_half_way_is_started_over(
    mariadb: MysqlDatabase,
) -> None:
    await mariadb.migrate()
    expected = await shape(mariadb)
    async with mariadb.transaction() as tx:
        # as if the run had stopped after the marker and the first table
        await tx.execute("DROP TABLE file_export_outbox")
        await tx.execute(f"DELETE FROM {VERSION_TABLE}")
        await tx.execute(
            f"INSERT INTO {VERSION_TABLE} (version, description, applied_at)"
            " VALUES (0, 'fresh install under way', CURRENT_TIMESTAMP(3))"
        )
    result = await mariadb.migrate()
    assert result.fresh
    assert await versions(mariadb) == [LATEST_VERSION]
    assert await shape(mariadb) == expected


async def test_service_refuses_to_start_on_a_database_newer_than_the_code(tmp_path: Path) -> None:
    from actors.core.errors import ConfigError
    from actors.runtime import serve
    from tests.helpers import make_settings

    settings = make_settings(tmp_path)
    path = settings.resolved_database_url[len("sqlite:///") :]
    db = SqliteDatabase(path)
    db.migrate()
    async with db.transaction() as tx:
        await tx.execute(
            f"INSERT INTO {VERSION_TABLE} (version, description, applied_at)"
            " VALUES (:v, 'from the future', 0)",
            {"v": LATEST_VERSION + 1},
        )
    await db.aclose()
    with pytest.raises(ConfigError, match="migrated by a newer Export Center"):
        await serve(settings, install_signal_handlers=False)


def test_migrate_command_on_mariadb_prints_the_steps_then_nothing_to_apply(
    tmp_path: Path,
) -> None:
    import trio

    url = MYSQL_TEST_URL + "_cli"

    async def make_old() -> None:
        async with trio_asyncio.open_loop() as loop:
            db = MysqlDatabase(url, loop, query_timeout=None)
            await db.drop_database()
            await db.create_database_if_missing()
            await execute_script(db, MYSQL_V1)
            await db.aclose()

    async def drop() -> None:
        async with trio_asyncio.open_loop() as loop:
            db = MysqlDatabase(url, loop, query_timeout=None)
            await db.drop_database()
            await db.aclose()

    trio.run(make_old)
    try:
        env = {"FILE_EXPORT_DATABASE_URL": url, "FILE_EXPORT_DATA_DIR": str(tmp_path)}
        first = CliRunner().invoke(main, ["migrate"], env=env)
        assert first.exit_code == 0, first.output
        assert "applied version 2: download-center tables" in first.output
        assert f"schema upgraded from version 1 to {LATEST_VERSION}" in first.output
        second = CliRunner().invoke(main, ["migrate"], env=env)
        assert second.exit_code == 0, second.output
        assert f"schema already at version {LATEST_VERSION}: nothing to apply" in second.output
    finally:
        trio.run(drop)


# -- step 5: the first due time of the unsent outbox rows ----------------------------------

T0 = datetime(2027, 1, 15, 8, 0, tzinfo=UTC)


def _at(db: Database, seconds: float) -> Any:
    """T0 + seconds as the database stores it."""
    when = T0 + timedelta(seconds=seconds)
    if db.dialect.is_sqlite:
        return int(when.timestamp() * 1000)
    return when.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


#: (status, attempt_count, next_retry_at, updated_at) of each row, in seconds from T0, and
#: the due_at step 5 gives it (None: left NULL).
BACKFILL = {
    # a retry's command, never tried: due when the retry is
    1: ("PENDING", 0, 900, -5, 900),
    # sends failing, backing off: due no later than its last attempt
    2: ("PENDING", 3, 290, -10, -10),
    # re-queued (or a released publisher claim): due since then
    3: ("PENDING", 1, -5, -5, -5),
    # in flight
    4: ("CLAIMED", 1, -20, -2, -20),
    # sent: history, never counted
    5: ("SENT", 1, -60, -50, None),
}


async def migrate_any(db: Database) -> MigrationResult:
    """``migrate`` of either database (SQLite's runs synchronously)."""
    result = db.migrate()  # type: ignore[attr-defined]
    if inspect.isawaitable(result):
        result = await result
    assert isinstance(result, MigrationResult)
    return result


async def backfill_case(db: Database) -> None:
    """A database at version 4 with unsent rows in each state: step 5 adds the columns and
    fills due_at of the unsent rows, leaving updated_at alone."""
    await migrate_any(db)
    recorded = "0" if db.dialect.is_sqlite else "CURRENT_TIMESTAMP(3)"
    async with db.transaction() as tx:
        await tx.execute("ALTER TABLE file_export_outbox DROP COLUMN due_at")
        await tx.execute("ALTER TABLE file_export_outbox DROP COLUMN resent_at")
        await tx.execute("ALTER TABLE file_export_outbox DROP COLUMN seen_at")
        await tx.execute("ALTER TABLE file_export_task DROP COLUMN requester_name")
        await tx.execute("ALTER TABLE file_export_task DROP COLUMN failure_code")
        await tx.execute("ALTER TABLE file_export_task DROP COLUMN handback_count")
        await tx.execute(f"DELETE FROM {VERSION_TABLE}")
        await tx.execute(
            f"INSERT INTO {VERSION_TABLE} (version, description, applied_at)"
            f" VALUES (4, 'four', {recorded})"
        )
        p = (lambda n: f":{n}") if db.dialect.is_sqlite else (lambda n: f"%({n})s")
        for i, (status, attempts, retry_at, updated, _) in BACKFILL.items():
            await tx.execute(
                "INSERT INTO file_export_outbox (id, event_id, task_id, dispatch_version,"
                " topic, tag, message_key, payload_json, status, attempt_count, next_retry_at,"
                " created_at, updated_at) VALUES"
                f" ({p('i')}, {p('e')}, {p('i')}, 1, 't', 'g', 'k', '{{}}', {p('s')},"
                f" {p('a')}, {p('r')}, {p('c')}, {p('u')})",
                {
                    "i": i,
                    "e": f"event-{i}",
                    "s": status,
                    "a": attempts,
                    "r": _at(db, retry_at),
                    "c": _at(db, -3600),
                    "u": _at(db, updated),
                },
            )
    result = await migrate_any(db)
    assert [s.version for s in result.applied] == list(range(5, LATEST_VERSION + 1))
    async with db.transaction() as tx:
        rows = await tx.fetchall(
            "SELECT id, due_at, updated_at FROM file_export_outbox ORDER BY id"
        )
        assert await tx.fetchall("SELECT handback_count FROM file_export_task") == []
    to_dt = db.dialect.to_datetime
    got = {
        int(r["id"]): (
            None if r["due_at"] is None else (to_dt(r["due_at"]) - T0).total_seconds(),
            (to_dt(r["updated_at"]) - T0).total_seconds(),
        )
        for r in rows
    }
    assert got == {i: (row[4], row[3]) for i, row in BACKFILL.items()}


async def test_sqlite_step_5_fills_the_first_due_time_of_unsent_outbox_rows(
    tmp_path: Path,
) -> None:
    db = SqliteDatabase(tmp_path / "four.db")
    await backfill_case(db)
    await db.aclose()


async def test_mariadb_step_5_fills_the_first_due_time_of_unsent_outbox_rows(
    mariadb: MysqlDatabase,
) -> None:
    await backfill_case(mariadb)
