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

import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import trio

from db.database import DuplicateKeyError, RetryableDatabaseError
from db.dialect import SQLITE, Dialect


def wall_clock_ms() -> int:
    """Epoch milliseconds from the system clock."""
    return time.time_ns() // 1_000_000


def schema_sql(dialect_name: str) -> str:
    """The DDL text for ``sqlite`` or ``mysql`` shipped in ``db/schema``."""
    return resources.files("db").joinpath("schema", f"{dialect_name}.sql").read_text("utf-8")


class _SqliteTx:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def _run(self, sql: str, params: Mapping[str, Any] | None) -> sqlite3.Cursor:
        try:
            return self._conn.execute(sql, dict(params or {}))
        except sqlite3.IntegrityError as exc:
            if "UNIQUE" in str(exc) or "PRIMARY KEY" in str(exc):
                raise DuplicateKeyError(str(exc)) from exc
            raise
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise RetryableDatabaseError(str(exc)) from exc
            raise

    async def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> int:
        return self._run(sql, params).rowcount

    async def fetchone(
        self, sql: str, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any] | None:
        row = self._run(sql, params).fetchone()
        return dict(row) if row is not None else None

    async def fetchall(
        self, sql: str, params: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        return [dict(r) for r in self._run(sql, params).fetchall()]


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
        self._conn.create_function("db_now_ms", 0, clock_ms)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._lock = trio.Lock()

    def migrate(self) -> None:
        """Apply the schema idempotently (``CREATE … IF NOT EXISTS``, guard row preset)."""
        self._conn.executescript(schema_sql("sqlite"))

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_SqliteTx]:
        async with self._lock:
            # Every transaction writes sooner or later, so take the write lock at BEGIN:
            # a deferred transaction that upgrades later can fail with SQLITE_BUSY.
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:  # another process held the lock > 10 s
                if "locked" in str(exc) or "busy" in str(exc):
                    raise RetryableDatabaseError(str(exc)) from exc
                raise
            try:
                yield _SqliteTx(self._conn)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")

    async def aclose(self) -> None:
        self._conn.close()
