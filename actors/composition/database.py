"""The database ``FILE_EXPORT_DATABASE_URL`` names, open for one block: SQLite migrated on
open, or MySQL inside the trio-asyncio loop it needs, its schema checked (or migrated by
``export-center migrate``). Used by the service's start (:mod:`actors.runtime`) and by the
operator's commands, which need the database and nothing else.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import trio_asyncio

from actors.core.errors import ConfigError, sole_exception
from actors.plumbing.config import Settings
from db.database import Database, DatabaseAccessError, DatabaseUnavailableError
from db.mysql import MysqlDatabase
from db.sqlite import SqliteDatabase, wall_clock_ms


@asynccontextmanager
async def open_database(
    settings: Settings,
    clock_ms: Callable[[], int] | None = None,
    *,
    migrate: bool = False,
) -> AsyncIterator[Database]:
    """Open the database named by ``FILE_EXPORT_DATABASE_URL`` for the block.

    SQLite (embedded) is created and migrated on open. MySQL runs inside a trio-asyncio
    loop opened here as the outermost asyncio context (trio-asyncio requires it); its
    schema is applied by ``export-center migrate`` (``migrate=True``), never implicitly at
    start-up; without ``migrate`` its schema version must be this code's
    (``db.migrations``).

    Args:
        clock_ms: tests only: a DB clock in epoch ms (SQLite's ``db_now_ms()``; MySQL's
            session ``timestamp``). ``None`` = the real clock.

    Raises:
        ConfigError: unsupported or malformed URL, or the database is unreachable.
        SchemaVersionError: (a ConfigError) the schema is newer than this code, or (MySQL)
            older: the message says to run ``export-center migrate``.
    """
    url = settings.resolved_database_url
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :] or ":memory:"
        try:
            db = SqliteDatabase(path, clock_ms=clock_ms or wall_clock_ms)
            db.migrate()
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"FILE_EXPORT_DATABASE_URL ({path}): {exc}") from None
        try:
            yield db
        finally:
            await db.aclose()
        return
    if not url.startswith("mysql://"):
        raise ConfigError("FILE_EXPORT_DATABASE_URL must start with sqlite:/// or mysql://")
    try:
        async with trio_asyncio.open_loop() as loop:
            mdb = MysqlDatabase(url, loop, clock_ms=clock_ms)
            try:
                if migrate:
                    await mdb.migrate()
                else:
                    await mdb.check_schema()  # older or newer than this code: refuse
                yield mdb
            except (DatabaseUnavailableError, DatabaseAccessError) as exc:
                raise ConfigError(f"FILE_EXPORT_DATABASE_URL: {exc}") from None
            finally:
                await mdb.aclose()
    except BaseExceptionGroup as group:
        # trio-asyncio's nursery wraps whatever the block raised; callers expect the
        # plain exception (a ConfigError, or a Cancelled that must keep propagating).
        raise sole_exception(group) from None
