"""SQLite database for embedded mode (WAL file under ``./var/`` by default).

Statements run synchronously on the trio thread. That is deliberate: a local WAL write
takes microseconds to a millisecond, and keeping the store off worker threads keeps
pytest-trio's autojump clock deterministic (trio issue 456: the clock jumps while a thread
runs). Transactions in one process are serialised by a ``trio.Lock``; several processes on
one file are serialised by SQLite's own lock (``BEGIN IMMEDIATE`` + ``busy_timeout``).

The DB clock is the SQL function ``db_now_ms()``, backed by an injectable callable that
returns epoch milliseconds. In production it is the wall clock (all processes that share a
SQLite file share a machine, hence a clock); in tests it follows trio's mock clock.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import trio

from db.database import DatabaseUnavailableError, DuplicateKeyError, RetryableDatabaseError
from db.dialect import SQLITE, Dialect
from db.migration_ops import Query, Rows
from db.migrations import MigrationResult, drive, migration

#: Primary result codes: the file is busy or locked by another connection (retry); the
#: file cannot be read or written now (I/O error, disk full, cannot open, lock protocol).
_BUSY = frozenset({5, 6})
_UNAVAILABLE = frozenset({10, 13, 14, 15})

log = logging.getLogger(__name__)


def wall_clock_ms() -> int:
    """Epoch milliseconds from the system clock."""
    return time.time_ns() // 1_000_000


def map_error(exc: sqlite3.Error) -> Exception:
    """The ``db.database`` class for a SQLite error, or ``exc`` itself when no retry can
    cure it (a constraint, a syntax error, a corrupt file). Uses the primary result code,
    not the message text."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if isinstance(exc, sqlite3.IntegrityError) and (
        "UNIQUE" in str(exc) or "PRIMARY KEY" in str(exc)
    ):
        return DuplicateKeyError(str(exc))
    if code in _BUSY:
        return RetryableDatabaseError(str(exc))
    if code in _UNAVAILABLE:
        return DatabaseUnavailableError(f"SQLite: {exc}")
    return exc


class StatementClock:
    """``db_now_ms()`` with MySQL's semantics: one value per statement.

    MySQL's ``CURRENT_TIMESTAMP(3)`` is the statement's start time wherever it appears in
    the statement. A Python SQL function is called afresh for each use, so
    ``updated_at = db_now_ms(), next_retry_at = db_now_ms() + 60000`` could straddle a
    millisecond and store 59.999 s. While a statement runs (:meth:`frozen`), every call
    returns the first reading.

    Args:
        clock_ms: the underlying clock, epoch milliseconds.
    """

    def __init__(self, clock_ms: Callable[[], int]) -> None:
        self._clock_ms = clock_ms
        self._reading: int | None = None
        self._depth = 0

    def __call__(self) -> int:
        if self._depth == 0:
            return self._clock_ms()
        if self._reading is None:
            self._reading = self._clock_ms()
        return self._reading

    @contextmanager
    def frozen(self) -> Iterator[None]:
        """Every ``db_now_ms()`` inside the block reads the same instant."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self._reading = None


class _SqliteTx:
    def __init__(self, conn: sqlite3.Connection, clock: StatementClock) -> None:
        self._conn = conn
        self._clock = clock

    def _run(self, sql: str, params: Mapping[str, Any] | None, fetch: str) -> Any:
        # The rows are fetched inside the frozen window: SQLite evaluates a SELECT's
        # functions while stepping through its rows, not at execute().
        try:
            with self._clock.frozen():
                cursor = self._conn.execute(sql, dict(params or {}))
                if fetch == "one":
                    return cursor.fetchone()
                if fetch == "all":
                    return cursor.fetchall()
                return cursor.rowcount
        except sqlite3.Error as exc:
            mapped = map_error(exc)
            if mapped is exc:
                raise
            raise mapped from exc

    async def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> int:
        return int(self._run(sql, params, "none"))

    async def fetchone(
        self, sql: str, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any] | None:
        row = self._run(sql, params, "one")
        return dict(row) if row is not None else None

    async def fetchall(
        self, sql: str, params: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        return [dict(r) for r in self._run(sql, params, "all")]


class SqliteDatabase:
    """A single-connection SQLite database.

    Args:
        path: database file; ``":memory:"`` for tests.
        clock_ms: the DB clock in epoch milliseconds (see module docstring).
    """

    dialect: Dialect = SQLITE

    def __init__(self, path: str | Path, clock_ms: Callable[[], int] = wall_clock_ms) -> None:
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(
            str(path), isolation_level=None, check_same_thread=False, timeout=10.0
        )
        self._conn.row_factory = sqlite3.Row
        self._clock = StatementClock(clock_ms)
        self._conn.create_function("db_now_ms", 0, self._clock)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._lock = trio.Lock()
        #: What the last ``migrate`` did (``export-center migrate`` prints it).
        self.migration: MigrationResult | None = None

    def migrate(self) -> MigrationResult:
        """Bring the database to the schema version of this code (``db.migrations``): an
        empty one gets the whole schema, an older one its missing upgrade steps, all in one
        transaction (SQLite's DDL is transactional: a failed run leaves the database as it
        was). Called at every start; a second run changes nothing.

        Returns:
            What was done.

        Raises:
            SchemaVersionError: the database is newer than this code; nothing changed.
        """

        def run(query: Query) -> Rows:
            return [dict(r) for r in self._conn.execute(query.sql, dict(query.params))]

        self._conn.execute("BEGIN IMMEDIATE")
        try:
            result = drive(migration(SQLITE, wall_clock_ms()), run)
            self._conn.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
        self.migration = result
        if result.changed:
            log.info("schema: %s", result.summary().replace("\n", "; "))
        return result

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_SqliteTx]:
        """A transaction under the process lock and SQLite's write lock.

        A failed ``COMMIT`` is rolled back here and reported like any other error: SQLite
        commits in this call or not at all, so its commit is never ambiguous (no
        ``CommitUnknownError``). Errors are mapped by ``map_error``."""
        async with self._lock:
            # Every transaction writes sooner or later, so take the write lock at BEGIN:
            # a deferred transaction that upgrades later can fail with SQLITE_BUSY.
            tx = _SqliteTx(self._conn, self._clock)
            await tx.execute("BEGIN IMMEDIATE")  # busy > 10 s: another process holds it
            try:
                yield tx
            except BaseException:
                self._rollback()
                raise
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self._rollback()  # SQLITE_BUSY at COMMIT leaves the transaction open
                mapped = map_error(exc)
                if mapped is exc:
                    raise
                raise mapped from exc

    def _rollback(self) -> None:
        # Some errors (a full disk, an I/O error) end the transaction by themselves; a
        # ROLLBACK then would fail and hide the original error.
        if self._conn.in_transaction:
            try:
                self._conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    async def aclose(self) -> None:
        self._conn.close()
