"""MariaDB-specific behaviour of the MySQL database (issue 4): cancellation, pooling,
duplicate keys, migration. Real server, real wall clock."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
import trio_asyncio

from actors.core.errors import ConfigError
from actors.core.models import TaskStatus
from db.database import (
    CommitUnknownError,
    ConnectionLostError,
    DatabaseAccessError,
    DatabaseUnavailableError,
    DuplicateKeyError,
    RetryableDatabaseError,
)
from db.ids import IdGenerator
from db.mysql import MysqlDatabase
from db.mysql_url import MysqlUrl
from db.sqlite import wall_clock_ms
from db.store import ExportStore
from tests.helpers import MYSQL_TEST_URL, TOPIC, claim, create, reset_mysql


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


# --- connection faults (issue 13) --------------------------------------------------------


def store_on(db: MysqlDatabase) -> ExportStore:
    return ExportStore(db, IdGenerator(wall_clock_ms), topic=TOPIC)


async def kill_from_outside(thread_id: int) -> None:
    """``KILL CONNECTION`` from a separate admin connection, as an operator would."""
    async with trio_asyncio.open_loop() as loop:
        admin = MysqlDatabase(MYSQL_TEST_URL, loop, max_connections=1)
        async with admin.transaction() as tx:
            await tx.execute(f"KILL CONNECTION {int(thread_id)}")
        await admin.aclose()


async def test_a_killed_idle_connection_is_never_handed_out(mdb: MysqlDatabase) -> None:
    """The server closes a pooled connection (a KILL, a restart, wait_timeout): the pool
    sees its broken stream and opens a fresh one instead — no failed BEGIN, no retry."""
    store = store_on(mdb)
    await store.db_now()
    [pooled] = mdb._idle
    await kill_from_outside(pooled.thread_id)
    with trio.fail_after(5):
        while not pooled.stream_broken:
            await trio.sleep(0.01)
    await store.db_now()
    assert store.health.faults == 0
    assert [c.thread_id for c in mdb._idle] != [pooled.thread_id]


async def test_a_dead_connection_whose_begin_fails_is_retried_on_a_fresh_one(
    mdb: MysqlDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pooled connection that looks alive but is dead (its end of stream not seen yet):
    BEGIN fails with 2006 "gone away", which is a connection fault before anything was
    done — the transition runs again on a fresh connection and succeeds."""
    store = store_on(mdb)
    task = await create(store)
    [pooled] = mdb._idle
    await kill_from_outside(pooled.thread_id)
    monkeypatch.setattr(type(pooled), "stream_broken", property(lambda self: False))
    got = await store.get_task(task.id)
    assert got is not None and got.id == task.id
    assert store.health.faults == 1 and store.health.faulty_since is None


async def test_a_connection_killed_mid_transaction_commits_nothing(mdb: MysqlDatabase) -> None:
    """KILL between two statements of one transaction: the next statement raises
    ConnectionLostError (2013) and the first statement's write is not committed."""
    store = store_on(mdb)
    task = await create(store)
    with pytest.raises(ConnectionLostError):
        async with mdb.transaction() as tx:
            await tx.execute(
                "UPDATE file_export_task SET task_name = 'changed' WHERE id = %(id)s",
                {"id": task.id},
            )
            row = await tx.fetchone("SELECT CONNECTION_ID() AS id")
            await kill_from_outside(row["id"])
            await tx.fetchone("SELECT 1 AS one")
    assert (await store.get_task(task.id)).task_name == "Customers"
    assert mdb._idle == [] or all(not c.poisoned for c in mdb._idle)


async def test_an_unreachable_server_and_refused_credentials_are_told_apart() -> None:
    """Nothing listening: DatabaseUnavailableError (transient, retried). Wrong password:
    DatabaseAccessError (configuration, not retried)."""
    with trio.socket.socket() as probe:  # a port that is free right now
        await probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    base = MysqlUrl.parse(MYSQL_TEST_URL)
    async with trio_asyncio.open_loop() as loop:
        down = MysqlDatabase(f"mysql://u:p@127.0.0.1:{free_port}/{base.database}", loop)
        with pytest.raises(DatabaseUnavailableError):
            async with down.transaction():
                pass
        refused = MysqlDatabase(
            f"mysql://{base.user}:wrong@{base.host}:{base.port}/{base.database}", loop
        )
        with pytest.raises(DatabaseAccessError):
            async with refused.transaction():
                pass


class CommitAnswerDropper:
    """A TCP proxy in front of MariaDB that, when armed, forwards the next ``COMMIT``
    and then drops the connection instead of relaying the server's answer: the commit
    lands, the client never hears of it. MySQL packets are ``len(3) seq(1) payload``; a
    text query is payload ``0x03 + SQL``."""

    def __init__(self, target: MysqlUrl) -> None:
        self.target = target
        self.armed = False
        self.dropped = 0

    async def serve(self, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        task_status.started(listeners[0].socket.getsockname()[1])
        await trio.serve_listeners(self._handle, listeners)

    async def _handle(self, client: trio.SocketStream) -> None:
        server = await trio.open_tcp_stream(self.target.host, self.target.port)
        drop_answer = trio.Event()
        async with client, server, trio.open_nursery() as n:

            async def to_client() -> None:
                while data := await server.receive_some():
                    if drop_answer.is_set():
                        self.dropped += 1
                        n.cancel_scope.cancel()  # closes both ends: "lost connection"
                        return
                    await client.send_all(data)
                n.cancel_scope.cancel()

            n.start_soon(to_client)
            buf = b""
            while data := await client.receive_some():
                buf += data
                while len(buf) >= 4 and len(buf) >= 4 + int.from_bytes(buf[:3], "little"):
                    size = 4 + int.from_bytes(buf[:3], "little")
                    packet, buf = buf[:size], buf[size:]
                    if self.armed and packet[4:] == b"\x03COMMIT":
                        self.armed = False
                        drop_answer.set()
                    await server.send_all(packet)
            n.cancel_scope.cancel()


async def test_a_lost_commit_answer_is_commit_unknown_and_the_final_commit_resolves_it(
    mdb: MysqlDatabase,
) -> None:
    """For real: the fenced final commit lands on the server but its answer is lost.
    The database reports CommitUnknownError; the store re-runs ``complete_task``, which
    finds the task SUCCEEDED with its own object key and answers True — so the consumer
    keeps the file instead of deleting the file of a SUCCEEDED task."""
    base = store_on(mdb)
    running = await claim(base, await create(base))
    proxy = CommitAnswerDropper(mdb.url)
    u = mdb.url
    async with trio.open_nursery() as n:
        port = await n.start(proxy.serve)
        async with trio_asyncio.open_loop() as loop:
            via = MysqlDatabase(
                f"mysql://{u.user}:{u.password}@127.0.0.1:{port}/{u.database}", loop
            )
            async with via.transaction() as tx:  # connect first: connecting COMMITs too
                await tx.execute("SELECT 1")
            proxy.armed = True
            with pytest.raises(CommitUnknownError):
                async with via.transaction() as tx:
                    await tx.execute("SELECT 1")
            assert proxy.dropped == 1
            store = store_on(via)
            await store.db_now()
            key = f"exports/{running.id}/{'c' * 32}.xlsx"
            proxy.armed = True
            assert await store.complete_task(
                running,
                "owner-a",
                file_name="f.xlsx",
                object_key=key,
                content_type="x",
                size_bytes=1,
                rows=1,
                retention_seconds=60,
            )
            assert proxy.dropped == 2 and store.health.faults == 1
            await via.aclose()
        n.cancel_scope.cancel()
    done = await base.get_task(running.id)
    assert done.status == TaskStatus.SUCCEEDED and done.object_key == key
