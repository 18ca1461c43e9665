"""One pooled MySQL connection, its statements, and what the driver's errors mean.

``db.mysql`` keeps the pool and its transactions; this module holds what one connection
knows of itself and how its statements fail:

* :class:`PooledConnection`: the asyncmy connection and whether it can be trusted again
  (``poisoned``, ``kill_needed``, ``idle_since``, the server closed its stream);
* :class:`MysqlTx`: the statements of one transaction on it, each run through the pool's
  bridge to the trio-asyncio loop;
* the driver's error numbers, and the ``db.database`` class each becomes: a duplicate key
  ``DuplicateKeyError``; a deadlock, lock wait timeout or interrupted statement
  ``RetryableDatabaseError`` (the server rolled back, the connection is fine); a lost or
  closed connection ``ConnectionLostError``. A statement cancelled by trio, timed out on
  the asyncio side or broken in the middle of the protocol **poisons** its connection: the
  pool closes it and kills its server thread, never hands it out again.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from asyncmy.cursors import DictCursor
from asyncmy.errors import IntegrityError, InterfaceError, OperationalError

from db.database import ConnectionLostError, DuplicateKeyError, RetryableDatabaseError

_DUPLICATE_ENTRY = 1062
#: The server undid the statement or transaction; the connection is fine: deadlock found,
#: lock wait timeout exceeded, query execution interrupted (KILL QUERY).
_ROLLED_BACK = frozenset({1213, 1205, 1317})
#: The server closed the session itself: no thread is left to kill. Server gone away,
#: connection killed (MariaDB), server shutdown in progress, disconnected for inactivity.
_SERVER_CLOSED = frozenset({2006, 1927, 1053, 4031})
#: The connection cannot be used any more (besides the above): lost during a query, lost
#: (extended), commands out of sync, can't connect, can't connect via socket.
_CONNECTION = _SERVER_CLOSED | {2013, 2055, 2014, 2003, 2002}
#: asyncmy raises "server has gone away" only when it cannot write the request at all (its
#: transport is already closed): the statement never reached the server.
NOT_SENT = 2006
#: A connection attempt the server refused for good: access denied to the database,
#: access denied for the user, unknown database.
ACCESS = frozenset({1044, 1045, 1049})

#: Runs an asyncio coroutine function on the trio-asyncio loop (``MysqlDatabase._aio``).
Bridge = Callable[[Callable[[], Any]], Awaitable[Any]]


def error_code(exc: BaseException | None) -> Any:
    """The MySQL error number of a driver exception (its first argument), if any."""
    if exc is None or not exc.args:
        return None
    return exc.args[0]


class PooledConnection:
    """A pooled connection and whether it can be trusted again.

    ``poisoned``: never hand it out again. ``kill_needed``: the server may still run its
    session (a cancelled or timed-out query), so discarding it kills the server thread.
    ``idle_since``: ``time.monotonic()`` when it went back to the pool.
    """

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.poisoned = False
        self.kill_needed = True
        self.idle_since = time.monotonic()

    @property
    def thread_id(self) -> int | None:
        thread_id: int | None = getattr(self.raw, "server_thread_id", [None])[0]
        return thread_id

    @property
    def stream_broken(self) -> bool:
        """The server closed the socket (or it was closed here): no round trip needed to
        know it is dead. asyncmy's own pool reads the same flag."""
        return bool(getattr(self.raw, "_stream_broken", False))

    def close(self) -> None:
        try:
            self.raw.close()
        except Exception:
            pass


class MysqlTx:
    """The statements of one transaction on ``conn``; ``aio`` runs each on the loop."""

    def __init__(self, aio: Bridge, conn: PooledConnection) -> None:
        self._aio = aio
        self._conn = conn

    async def _run(self, sql: str, params: Mapping[str, Any] | None, fetch: str) -> Any:
        async def work() -> Any:
            async with self._conn.raw.cursor(DictCursor) as cur:
                # Always a dict: the dialect doubled every literal % for pyformat.
                await cur.execute(sql, dict(params or {}))
                if fetch == "one":
                    return await cur.fetchone()
                if fetch == "all":
                    return await cur.fetchall()
                return cur.rowcount

        try:
            return await self._aio(work)
        except IntegrityError as exc:
            if error_code(exc) == _DUPLICATE_ENTRY:
                raise DuplicateKeyError(str(exc)) from exc
            raise
        except (OperationalError, InterfaceError) as exc:
            code = error_code(exc)
            if code in _ROLLED_BACK:
                # The server rolled back (the statement or the whole transaction); the
                # connection itself is fine.
                raise RetryableDatabaseError(str(exc)) from exc
            self._conn.poisoned = True
            if isinstance(exc, InterfaceError) or code in _CONNECTION:
                self._conn.kill_needed = code not in _SERVER_CLOSED and not isinstance(
                    exc, InterfaceError
                )
                raise ConnectionLostError(f"{type(exc).__name__}: {exc}") from exc
            raise
        except OSError as exc:  # includes asyncio's statement timeout (TimeoutError)
            self._conn.poisoned = True
            raise ConnectionLostError(f"{type(exc).__name__}: {exc}") from exc
        except BaseException:
            # Cancelled, timed out or broken mid-protocol: the connection's state is unknown.
            self._conn.poisoned = True
            raise

    async def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> int:
        return int(await self._run(sql, params, "count"))

    async def fetchone(
        self, sql: str, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any] | None:
        row = await self._run(sql, params, "one")
        return dict(row) if row is not None else None

    async def fetchall(
        self, sql: str, params: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        return [dict(r) for r in await self._run(sql, params, "all")]
