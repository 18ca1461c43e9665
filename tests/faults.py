"""A database wrapper that injects connection faults at exact points, for tests of the
store's and the actors' handling of database blips on both dialects.

The real database (SQLite or MariaDB) does all the work; the wrapper only decides, per
transaction, whether the connection "fails" before BEGIN, in the middle, or around the
COMMIT — including the one case a real server cannot be made to produce on demand: a
COMMIT that landed while its answer was lost. ``tests/db/test_mysql.py`` produces the real
faults on MariaDB (killed connections, a proxy that drops a COMMIT's answer).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from enum import StrEnum

from db.database import (
    CommitUnknownError,
    ConnectionLostError,
    Database,
    DatabaseUnavailableError,
    Tx,
)


class Fault(StrEnum):
    BEFORE_BEGIN = "before_begin"  # a dead pooled connection: BEGIN fails
    UNAVAILABLE = "unavailable"  # no connection can be opened (server restarting)
    MID_TRANSACTION = "mid_transaction"  # killed after the statements, before COMMIT
    COMMIT_LANDED = "commit_landed"  # COMMIT done, its answer lost
    COMMIT_LOST = "commit_lost"  # COMMIT sent, connection dropped before it was done


class _Abandon(Exception):
    pass


class FaultyDatabase:
    """Wraps a ``Database``; each transaction takes the next planned fault (if any).

    Attributes:
        plan: faults for the next transactions, in order; ``None`` entries pass.
        down: while true, every transaction fails with ``down_error`` (an outage).
        transactions: transactions attempted so far (faulty ones included).
    """

    def __init__(self, inner: Database) -> None:
        self.inner = inner
        self.dialect = inner.dialect
        self.plan: list[Fault | None] = []
        self.down = False
        self.down_error: type[Exception] = DatabaseUnavailableError
        self.transactions = 0

    def arm(self, *faults: Fault | None) -> None:
        self.plan.extend(faults)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Tx]:
        self.transactions += 1
        if self.down:
            raise self.down_error("simulated outage: Can't connect to MySQL server")
        fault = self.plan.pop(0) if self.plan else None
        if fault == Fault.BEFORE_BEGIN:
            raise ConnectionLostError("simulated: (2006, 'MySQL server has gone away')")
        if fault == Fault.UNAVAILABLE:
            raise DatabaseUnavailableError('simulated: (2003, "Can\'t connect to MySQL")')
        try:
            async with self.inner.transaction() as tx:
                yield tx
                if fault in (Fault.MID_TRANSACTION, Fault.COMMIT_LOST):
                    raise _Abandon  # the inner transaction rolls back: nothing committed
        except _Abandon:
            if fault == Fault.MID_TRANSACTION:
                raise ConnectionLostError("simulated: (2013, 'Lost connection')") from None
            raise CommitUnknownError("simulated: connection lost during COMMIT") from None
        if fault == Fault.COMMIT_LANDED:
            raise CommitUnknownError("simulated: connection lost during COMMIT (it landed)")

    async def aclose(self) -> None:
        await self.inner.aclose()
