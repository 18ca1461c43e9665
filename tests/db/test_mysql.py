"""MariaDB-specific behaviour of the MySQL database (issue 4): cancellation, pooling,
duplicate keys, migration. Real server, real wall clock."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
import trio_asyncio

from actors.core.errors import ConfigError
from actors.core.ids import IdGenerator
from db.database import DuplicateKeyError, RetryableDatabaseError
from db.mysql import MysqlDatabase, MysqlUrl
from db.sqlite import wall_clock_ms
from db.store import ExportStore
from tests.conftest import MYSQL_TEST_URL, TOPIC, reset_mysql


@pytest.fixture
async def mdb() -> AsyncIterator[MysqlDatabase]:
    async with trio_asyncio.open_loop() as loop:
        db = MysqlDatabase(MYSQL_TEST_URL, loop, max_connections=3)
        await reset_mysql(db)
        yield db
        await db.aclose()


# Both count only this session's database: the test server is shared by concurrent test
# sessions (each with a database of its own), whose transactions and queries are not ours.


async def open_transactions(db: MysqlDatabase) -> int:
    async with db.transaction() as tx:
        row = await tx.fetchone(
            "SELECT COUNT(*) AS n FROM information_schema.INNODB_TRX t "
            "JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id "
            "WHERE p.DB = DATABASE() AND t.trx_mysql_thread_id <> CONNECTION_ID()"
        )
    return int(row["n"])


async def sleeping_queries(db: MysqlDatabase) -> int:
    async with db.transaction() as tx:
        row = await tx.fetchone(
            "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST "
            "WHERE INFO LIKE 'SELECT SLEEP(%%' AND DB = DATABASE() AND ID <> CONNECTION_ID()"
        )
    return int(row["n"])


async def test_cancelled_query_leaves_no_open_transaction_and_no_poisoned_connection(
    mdb: MysqlDatabase,
) -> None:
    """A trio-cancelled ``SELECT SLEEP(5)`` inside a write transaction: the client stops
    at once, the server-side thread is killed (no open transaction, no running query), the
    write is rolled back, and the pool hands out only healthy connections."""
    store = ExportStore(mdb, IdGenerator(wall_clock_ms), topic=TOPIC)
    started = trio.current_time()
    with trio.move_on_after(0.3) as scope:
        async with mdb.transaction() as tx:
            await tx.execute(
                "UPDATE file_export_task_guard SET updated_at = "
                "CURRENT_TIMESTAMP(3) WHERE guard_key = 'GLOBAL_CREATE'"
            )
            await tx.fetchone("SELECT SLEEP(5)")
    assert scope.cancelled_caught
    assert trio.current_time() - started < 3
    assert all(not c.poisoned for c in mdb._idle)
    with trio.fail_after(5):
        while await sleeping_queries(mdb) or await open_transactions(mdb):
            await trio.sleep(0.05)
    # the guard row is free again: a create under the lock goes straight through
    with trio.fail_after(2):
        await store.check_guard_row()
        async with mdb.transaction() as tx:
            await tx.fetchone(
                "SELECT guard_key FROM file_export_task_guard "
                "WHERE guard_key = 'GLOBAL_CREATE' FOR UPDATE"
            )


async def test_sql_error_rolls_back_and_keeps_the_connection(mdb: MysqlDatabase) -> None:
    with pytest.raises(DuplicateKeyError):
        async with mdb.transaction() as tx:
            await tx.execute(
                "INSERT INTO file_export_task_guard (guard_key) VALUES ('GLOBAL_CREATE')"
            )
    assert len(mdb._idle) == 1 and not mdb._idle[0].poisoned
    async with mdb.transaction() as tx:
        assert (await tx.fetchone("SELECT 1 AS one"))["one"] == 1


async def test_migrate_is_idempotent_and_start_up_checks_the_guard_row(mdb: MysqlDatabase) -> None:
    store = ExportStore(mdb, IdGenerator(wall_clock_ms), topic=TOPIC)
    await mdb.migrate()
    await mdb.migrate()
    await store.check_guard_row()
    async with mdb.transaction() as tx:
        await tx.execute("DELETE FROM file_export_task_guard")
    with pytest.raises(ConfigError, match="GLOBAL_CREATE"):
        await store.check_guard_row()
    await mdb.migrate()  # restores the preset row
    await store.check_guard_row()


async def test_session_is_utc_with_millisecond_datetimes(mdb: MysqlDatabase) -> None:
    async with mdb.transaction() as tx:
        row = await tx.fetchone("SELECT @@session.time_zone AS tz, CURRENT_TIMESTAMP(3) AS now3")
    assert row["tz"] == "+00:00"
    assert row["now3"].microsecond % 1000 == 0


def test_url_parsing_names_the_variable() -> None:
    u = MysqlUrl.parse("mysql://u:p%40ss@db.example:3310/exports")
    assert (u.host, u.port, u.user, u.password, u.database) == (
        "db.example",
        3310,
        "u",
        "p@ss",
        "exports",
    )
    for bad in ("mysql://host", "postgres://u:p@h/db", "mysql://u:p@h:notaport/db"):
        with pytest.raises(ConfigError, match="FILE_EXPORT_DATABASE_URL"):
            MysqlUrl.parse(bad)


async def test_a_deadlock_is_reported_as_retryable_and_keeps_the_connection(
    mdb: MysqlDatabase,
) -> None:
    """Two transactions lock two rows in opposite order: InnoDB kills one (1213). The
    victim sees RetryableDatabaseError and its connection goes back to the pool."""
    async with mdb.transaction() as tx:
        await tx.execute("INSERT INTO file_export_task_guard (guard_key) VALUES ('OTHER')")
    outcomes: list[str] = []
    both_locked = trio.Event()
    locked = 0

    async def worker(first: str, second: str) -> None:
        nonlocal locked
        try:
            async with mdb.transaction() as tx:
                await tx.fetchone(
                    "SELECT guard_key FROM file_export_task_guard "
                    "WHERE guard_key = :k FOR UPDATE".replace(":k", f"'{first}'")
                )
                locked += 1
                if locked == 2:
                    both_locked.set()
                await both_locked.wait()
                await tx.fetchone(
                    "SELECT guard_key FROM file_export_task_guard "
                    "WHERE guard_key = :k FOR UPDATE".replace(":k", f"'{second}'")
                )
            outcomes.append("committed")
        except RetryableDatabaseError:
            outcomes.append("retryable")

    with trio.fail_after(30):
        async with trio.open_nursery() as n:
            n.start_soon(worker, "GLOBAL_CREATE", "OTHER")
            n.start_soon(worker, "OTHER", "GLOBAL_CREATE")
    assert sorted(outcomes) == ["committed", "retryable"]
    assert len(mdb._idle) == 2 and not any(c.poisoned for c in mdb._idle)
