"""MySQL 8 / MariaDB 10.11 database through asyncmy, bridged into trio with trio-asyncio:
the pool, its transactions, and the database's schema (created if missing, migrated under
a named server lock, checked at start-up). One connection, its statements and what the
driver's errors mean are ``db.mysql_connection``'s.

asyncmy is an asyncio driver; every call goes through the trio-asyncio loop that the
runtime opens as its outermost block (trio-asyncio requires it). Connection handling:

* ``autocommit=True`` with explicit ``BEGIN`` / ``COMMIT`` / ``ROLLBACK``;
* ``CLIENT.FOUND_ROWS``, so an UPDATE reports rows *matched*, not rows changed: a lease
  renewed twice within one millisecond is not mistaken for a lost lease;
* the session time zone pinned to UTC, so ``CURRENT_TIMESTAMP(3)`` and ``DATETIME(3)``
  values are UTC;
* a small pool on the trio side; a connection its statement poisoned (a trio
  cancellation, an error in the middle of the protocol) is closed and its server thread
  killed, never returned to the pool; an ordinary SQL error rolls back and keeps it;
* an asyncio-side timeout per statement (``query_timeout``) besides trio's own, because a
  trio cancel waits for the asyncio side to unwind;
* a pooled connection is checked before it is handed out: one whose stream the server
  already closed (a ``KILL``, a restart, ``wait_timeout``) is dropped without a round
  trip, one idle longer than ``PING_AFTER_IDLE_SECONDS`` is pinged, one idle longer than
  ``MAX_IDLE_SECONDS`` is closed;
* driver errors become the classes of ``db.database`` (``db.mysql_connection``): deadlocks
  and interrupted statements ``RetryableDatabaseError``; a connection that fails before
  ``COMMIT`` was sent ``ConnectionLostError``; one that fails during ``COMMIT``
  ``CommitUnknownError``; a connection that cannot be opened ``DatabaseUnavailableError``
  (or ``DatabaseAccessError`` for refused credentials and unknown databases).

``clock_ms`` (tests only) pins each transaction's ``CURRENT_TIMESTAMP`` with
``SET timestamp``, so DB time follows trio's mock clock exactly as the SQLite store does.
``io_guard`` (tests only) is entered around every call that waits on the server (each
statement, connect, the kill of a discarded connection): trio's autojump clock would
otherwise jump while a query waits on the socket, because to trio that is just one more
blocked task.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Generator
from contextlib import AbstractContextManager, asynccontextmanager, nullcontext, suppress
from functools import partial
from typing import Any, TypeVar

import asyncmy
import trio
from asyncmy.constants import CLIENT
from asyncmy.errors import InterfaceError, OperationalError

from actors.core.errors import TransientDatabaseError
from db.database import (
    CommitUnknownError,
    ConnectionLostError,
    DatabaseAccessError,
    DatabaseUnavailableError,
)
from db.dialect import MYSQL, Dialect
from db.migration_ops import Query, Rows
from db.migrations import (
    MigrationResult,
    SchemaVersionError,
    migration,
    schema_check,
)
from db.mysql_connection import ACCESS, NOT_SENT, MysqlTx, PooledConnection, error_code
from db.mysql_url import MysqlUrl

log = logging.getLogger(__name__)
T = TypeVar("T")

#: A pooled connection idle longer than this is pinged before it is handed out, seconds.
PING_AFTER_IDLE_SECONDS = 30.0
#: ... and one idle longer than this is closed instead (the server may have timed it out).
MAX_IDLE_SECONDS = 300.0
#: How long a ping of an idle connection may take, seconds.
PING_TIMEOUT_SECONDS = 2.0


#: How long ``migrate`` waits for another run's schema lock, seconds.
MIGRATE_LOCK_SECONDS = 60.0
# Named locks are server-wide: the name carries the database's.
_GET_LOCK = "SELECT GET_LOCK(CONCAT('export_center_migrate:', DATABASE()), %(timeout)s) AS got"
_RELEASE_LOCK = "SELECT RELEASE_LOCK(CONCAT('export_center_migrate:', DATABASE())) AS released"


class SchemaLockError(SchemaVersionError):
    """Another ``export-center migrate`` against the same database held its lock too long."""


async def _converse(tx: MysqlTx, conversation: Generator[Query, Rows, T]) -> T:
    """Run a ``db.migrations`` conversation on ``tx`` and return its result."""
    try:
        query = next(conversation)
        while True:
            rows = await tx.fetchall(query.sql, query.params)
            query = conversation.send(rows)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


async def _ping(raw: Any) -> None:
    await asyncio.wait_for(raw.ping(False), PING_TIMEOUT_SECONDS)


class MysqlDatabase:
    """Pool of asyncmy connections used from trio.

    Args:
        url: ``mysql://user:password@host:port/database``.
        loop: the running trio-asyncio loop (``trio_asyncio.open_loop()``).
        max_connections: pool size.
        query_timeout: asyncio-side timeout per statement, seconds; ``None`` disables it
            (tests on trio's autojump clock, which would fire it while a query is in flight).
        clock_ms: tests only: epoch milliseconds to pin ``CURRENT_TIMESTAMP`` to.
        io_guard: tests only: a factory of (synchronous) context managers, one entered
            around each real-IO call to the server; calls may overlap. Tests on the mock
            clock pass one that stops autojumps while any call is in flight. ``None``
            (production): no guard.
    """

    dialect: Dialect = MYSQL

    def __init__(
        self,
        url: str,
        loop: Any,
        *,
        max_connections: int = 10,
        query_timeout: float | None = 30.0,
        clock_ms: Callable[[], int] | None = None,
        io_guard: Callable[[], AbstractContextManager[object]] | None = None,
    ) -> None:
        self.url = MysqlUrl.parse(url)
        self._loop = loop
        self._slots = trio.Semaphore(max_connections)
        self._idle: list[PooledConnection] = []
        self._query_timeout = query_timeout
        self._clock_ms = clock_ms
        self._io_guard = io_guard or nullcontext
        self._closed = False
        #: What the last ``migrate`` did (``export-center migrate`` prints it).
        self.migration: MigrationResult | None = None

    async def _aio(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn()`` (an asyncio coroutine function) on the trio-asyncio loop, inside
        the IO guard. Every wait on the server goes through here: statements, connect
        (``_connect``) and the kill of a discarded connection (``_discard``)."""
        timeout = self._query_timeout

        async def with_timeout() -> Any:
            if timeout is None:
                return await fn()
            return await asyncio.wait_for(fn(), timeout)

        with self._io_guard():
            return await self._loop.run_aio_coroutine(with_timeout())

    def _unavailable(self, exc: BaseException) -> Exception:
        """The error for a connection that could not be opened (see ``ACCESS``)."""
        u = self.url
        text = f"cannot connect to MySQL at {u.host}:{u.port} as {u.user!r}: {exc}"
        if isinstance(exc, OperationalError) and error_code(exc) in ACCESS:
            return DatabaseAccessError(text)
        return DatabaseUnavailableError(text)

    async def _connect(self) -> PooledConnection:
        """Open a fresh connection.

        Raises:
            DatabaseUnavailableError: it cannot be opened now.
            DatabaseAccessError: credentials refused or unknown database.
        """
        u = self.url

        async def connect() -> Any:
            return await asyncmy.connect(
                host=u.host,
                port=u.port,
                user=u.user,
                password=u.password,
                database=u.database,
                autocommit=True,
                client_flag=CLIENT.FOUND_ROWS,
                charset="utf8mb4",
                init_command="SET time_zone = '+00:00'",
                connect_timeout=5,
            )

        try:
            conn = PooledConnection(await self._aio(connect))
        except (OperationalError, InterfaceError, OSError) as exc:
            raise self._unavailable(exc) from exc
        try:
            # READ COMMITTED: no gap locks between the outbox INSERTs of creates and the
            # publisher's claims, so far fewer deadlocks. Every transition is a
            # conditional UPDATE, so nothing depends on repeatable reads.
            await MysqlTx(self._aio, conn).execute(
                "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"
            )
        except TransientDatabaseError as exc:
            conn.close()
            raise self._unavailable(exc) from exc
        except BaseException:
            conn.close()
            raise
        return conn

    async def _checkout(self) -> PooledConnection:
        """An idle pooled connection that still works, else a fresh one.

        A connection the server closed is seen without a round trip (its stream is
        broken); one idle for a while is pinged, because a silently dropped network path
        shows no end of stream; one idle for very long is closed."""
        while self._idle:
            conn = self._idle.pop()
            idle = time.monotonic() - conn.idle_since
            if conn.stream_broken or idle > MAX_IDLE_SECONDS:
                conn.close()
                continue
            if idle > PING_AFTER_IDLE_SECONDS:
                try:
                    await self._aio(partial(_ping, conn.raw))
                except Exception:
                    conn.close()
                    continue
            return conn
        return await self._connect()

    async def _discard(self, conn: PooledConnection) -> None:
        """Close a poisoned connection and, when its server session may still be alive,
        have its server thread killed, so a query the client gave up on does not keep
        running (or keep a transaction open) on the server.

        The kill is a task of its own, in the background: the caller — often a run whose
        lease watchdog just gave up on a renewal — must not wait for it. Across a
        partition the kill's connect can take its whole timeout, and a watchdog held that
        long would abort its run after the lease it was protecting had run out.
        """
        conn.close()
        thread_id = conn.thread_id
        if thread_id is None or not conn.kill_needed:
            return
        trio.lowlevel.spawn_system_task(self._kill_thread, thread_id, name="mysql-kill")

    async def _kill_thread(self, thread_id: int) -> None:
        """``KILL CONNECTION thread_id`` from a fresh connection, within 5 s. A system task
        must raise nothing but trio's own cancellation: whatever else happens — the server
        unreachable, the asyncio loop closed under it at the end of the run — is logged."""
        with trio.move_on_after(5):
            try:
                killer = await self._connect()
                try:
                    await MysqlTx(self._aio, killer).execute(f"KILL CONNECTION {int(thread_id)}")
                except Exception:
                    pass  # already gone
                finally:
                    killer.close()
            except trio.Cancelled:
                raise
            except BaseException as exc:  # asyncio's CancelledError when its loop closes
                # The server is unreachable, so the session is going away with it.
                log.info(
                    "could not kill server thread %s of a discarded connection: %s", thread_id, exc
                )

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[MysqlTx]:
        if self._closed:
            raise RuntimeError("database is closed")
        async with self._slots:
            conn = await self._checkout()
            tx = MysqlTx(self._aio, conn)
            reusable = False
            try:
                if self._clock_ms is not None:
                    await tx.execute("SET timestamp = %(ts)s", {"ts": self._clock_ms() / 1000})
                await tx.execute("BEGIN")
                try:
                    yield tx
                except BaseException as exc:
                    # Cancelled, the caller is leaving now: the connection is dropped (the
                    # server rolls back a session that ends) rather than a ROLLBACK waited
                    # for, which across a partition could take its whole 5 s.
                    if not conn.poisoned and not isinstance(exc, trio.Cancelled):
                        with trio.CancelScope(shield=True), trio.move_on_after(5) as scope:
                            await tx.execute("ROLLBACK")
                        reusable = not scope.cancelled_caught and not conn.poisoned
                    raise
                try:
                    await tx.execute("COMMIT")
                except ConnectionLostError as exc:
                    if error_code(exc.__cause__) == NOT_SENT:
                        raise  # COMMIT never left: the server rolls the transaction back
                    # COMMIT reached the socket: the server may have committed before the
                    # connection dropped. Only the caller can find out, by re-reading.
                    raise CommitUnknownError(f"connection lost during COMMIT: {exc}") from exc
                reusable = not conn.poisoned
            finally:
                if reusable and not self._closed:
                    conn.idle_since = time.monotonic()
                    self._idle.append(conn)
                else:
                    await self._discard(conn)

    async def _server_execute(self, sql: str) -> None:
        """Run one statement on a connection without a default database."""
        u = self.url

        async def run() -> None:
            conn = await asyncmy.connect(
                host=u.host,
                port=u.port,
                user=u.user,
                password=u.password,
                autocommit=True,
                charset="utf8mb4",
                connect_timeout=5,
            )
            try:
                async with conn.cursor() as cur:
                    await cur.execute("SET SESSION sql_notes = 0")  # IF [NOT] EXISTS is expected
                    await cur.execute(sql)
            finally:
                conn.close()

        try:
            await self._aio(run)
        except (OperationalError, InterfaceError, OSError) as exc:
            raise self._unavailable(exc) from exc

    async def create_database_if_missing(self) -> None:
        """``CREATE DATABASE IF NOT EXISTS`` for the URL's database (utf8mb4)."""
        name = self.url.database.replace("`", "``")
        await self._server_execute(f"CREATE DATABASE IF NOT EXISTS `{name}` CHARACTER SET utf8mb4")

    async def drop_database(self) -> None:
        """Drop the URL's database (tests only)."""
        name = self.url.database.replace("`", "``")
        await self._server_execute(f"DROP DATABASE IF EXISTS `{name}`")

    async def migrate(self) -> MigrationResult:
        """Create the database if it is missing and the account may, then bring it to the
        schema version of this code (``db.migrations``): an empty one gets the whole
        schema, an older one its missing upgrade steps, each recorded as it is done (MySQL
        commits every DDL statement by itself, so a run that stops resumes where it was).
        Runs under a named server lock, so two ``migrate`` runs against one database take
        turns. Adding an index to a big table takes a while; InnoDB builds it online, so a
        running service goes on reading and writing meanwhile.

        Returns:
            What was done.

        Raises:
            SchemaVersionError: the database is newer than this code; nothing changed.
            SchemaLockError: another run held the lock for ``MIGRATE_LOCK_SECONDS``.
        """
        try:
            await self.create_database_if_missing()
        except DatabaseUnavailableError:
            raise
        except Exception:  # e.g. DatabaseAccessError: no CREATE privilege
            log.info("could not create database %s; assuming it exists", self.url.database)
        async with self.transaction() as tx:
            await tx.execute("SET SESSION sql_notes = 0")  # "already exists" is expected
            got = await tx.fetchone(_GET_LOCK, {"timeout": MIGRATE_LOCK_SECONDS})
            if not got or got["got"] != 1:
                raise SchemaLockError(
                    f"another `export-center migrate` holds the schema lock of"
                    f" {self.url.database} (waited {MIGRATE_LOCK_SECONDS:g} s); try again"
                )
            try:
                # applied_at comes from the server's clock; the argument is SQLite's.
                self.migration = await _converse(tx, migration(MYSQL, 0))
                return self.migration
            finally:
                # A broken connection has freed the lock already by ending its session.
                with suppress(TransientDatabaseError):
                    await tx.fetchone(_RELEASE_LOCK)

    async def check_schema(self) -> int:
        """The start-up check: the database is at the schema version of this code.

        Returns:
            The version.

        Raises:
            SchemaVersionError: older (the message says to run ``export-center migrate``)
                or newer than this code.
        """
        async with self.transaction() as tx:
            version: int = await _converse(tx, schema_check(MYSQL))
            return version

    async def aclose(self) -> None:
        self._closed = True
        while self._idle:
            self._idle.pop().close()
