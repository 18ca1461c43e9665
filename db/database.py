"""The minimal database interface the store is written against.

A ``Database`` hands out transactions; a ``Tx`` runs rendered SQL. The SQLite and MySQL
implementations differ only in how they connect, lock and convert values; every
transition is written once in ``db.store`` on top of this interface.

The errors below subclass ``actors.core.errors.DatabaseError`` and its
``TransientDatabaseError`` (the tree is drawn there); every implementation raises them in
place of its driver's exceptions.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from actors.core.db_retry import DbFault
from actors.core.errors import DatabaseError, TransientDatabaseError
from db.dialect import Dialect


class DuplicateKeyError(DatabaseError):
    """An INSERT hit a unique key. Raised by every ``Tx`` implementation in place of the
    driver's own exception, so the store can treat "already there" as success where the
    seed says the unique key absorbs races (§7.2, §8.5-1)."""


class RetryableDatabaseError(TransientDatabaseError):
    """The database rolled the transaction back for a reason that a retry cures: a
    deadlock (MySQL 1213), a lock wait timeout (1205), an interrupted statement (1317),
    SQLite's "database is locked". Nothing was written and the connection is fine."""

    fault = DbFault.ROLLED_BACK


class ConnectionLostError(TransientDatabaseError):
    """The connection failed before ``COMMIT`` was sent: at ``BEGIN`` on a pooled
    connection the server had already closed, or mid-transaction (server gone away 2006,
    lost connection 2013, connection killed 1927, shutdown 1053, a statement timeout).
    The server rolls back a transaction whose connection ends uncommitted, so nothing was
    written; the connection is discarded and the next attempt gets a fresh one."""

    fault = DbFault.CONNECTION_LOST


class CommitUnknownError(TransientDatabaseError):
    """The connection failed after ``COMMIT`` was sent and before its answer arrived:
    the transaction may or may not have committed. Only a store transition that can
    tell the two apart by re-reading state may be re-run after it (every one in
    ``db.store`` can; each docstring says how). Never raised by SQLite, whose commit is a
    local call that either returns or fails without committing."""

    fault = DbFault.COMMIT_UNKNOWN


class DatabaseUnavailableError(TransientDatabaseError):
    """No connection can be opened right now: refused or timed out while the server
    restarts, server shutdown in progress, too many connections; for SQLite an I/O error
    or a full disk. Raised by a ``Database`` in place of the driver's own error."""

    fault = DbFault.UNAVAILABLE


class DatabaseAccessError(DatabaseError):
    """The server refuses this account or does not know the database (MySQL 1044, 1045,
    1049): a configuration error that no retry cures."""


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

        Raises:
            TransientDatabaseError: a subclass naming the fault; ``CommitUnknownError``
                only when the commit itself was lost.
            DatabaseAccessError: the account or database is refused.
        """
        ...

    async def aclose(self) -> None: ...
