"""The minimal database interface the store is written against.

A ``Database`` hands out transactions; a ``Tx`` runs rendered SQL. The SQLite and MySQL
implementations differ only in how they connect, lock and convert values; every
transition is written once in ``db.store`` on top of this interface.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from db.dialect import Dialect


class DuplicateKeyError(Exception):
    """An INSERT hit a unique key. Raised by every ``Tx`` implementation in place of the
    driver's own exception, so the store can treat "already there" as success where the
    seed says the unique key absorbs races (§7.2, §8.5-1)."""


class RetryableDatabaseError(Exception):
    """The database rolled the transaction back for a reason that a retry cures: a
    deadlock (MySQL 1213), a lock wait timeout (1205), SQLite's "database is locked".
    The store retries the whole transition, which is safe because each one is a single
    transaction of conditional updates (or idempotent steps)."""


class DatabaseUnavailableError(Exception):
    """The database cannot be reached or refuses the credentials. Raised by a
    ``Database`` when it opens a connection, in place of the driver's own error."""


class Tx(Protocol):
    """One open transaction. Statements take named parameters (``:name`` already rendered
    for the dialect) and return plain dicts keyed by column name."""

    async def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> int:
        """Run a statement; return the number of rows it *matched* (not merely changed:
        the MySQL store sets CLIENT.FOUND_ROWS so a same-millisecond lease renewal is not
        mistaken for a lost lease)."""
        ...

    async def fetchone(
        self, sql: str, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any] | None: ...

    async def fetchall(
        self, sql: str, params: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]: ...


class Database(Protocol):
    """A connection source bound to one dialect."""

    dialect: Dialect

    def transaction(self) -> AbstractAsyncContextManager[Tx]:
        """Open a transaction; commit on normal exit, roll back on any exception
        (including cancellation).

        Locking differs by dialect and stays inside the implementation: SQLite takes the
        database write lock at ``BEGIN IMMEDIATE`` (it has no ``SELECT … FOR UPDATE``);
        MySQL transitions lock the rows they need (``{for_update}`` in the SQL text).
        """
        ...

    async def aclose(self) -> None: ...
