"""A database behind a link that drops packets (issue 35 item 2): a statement the caller
gives up on returns at once. Cleaning up after it — killing its server thread — happens in
the background: across a partition that kill's connect takes seconds, and a lease
watchdog that waited for it would abort its run after the lease it protects ran out (the
partition test of a cut database link found this). The real MariaDB, reached through a
relay the test freezes (tests/tcp_relay.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest
import trio
import trio_asyncio

from db.mysql import MysqlDatabase
from tests.helpers import MYSQL_TEST_URL, reset_mysql
from tests.tcp_relay import TcpRelay, tcp_relay


@pytest.fixture
async def relayed() -> AsyncIterator[tuple[MysqlDatabase, TcpRelay]]:
    url = urlsplit(MYSQL_TEST_URL)
    async with tcp_relay(url.hostname or "127.0.0.1", url.port or 3306) as relay:
        through = MYSQL_TEST_URL.replace(f"{url.hostname}:{url.port}", f"127.0.0.1:{relay.port}")
        async with trio_asyncio.open_loop() as loop:
            db = MysqlDatabase(through, loop)
            await reset_mysql(db)
            yield db, relay
            relay.heal()
            await db.aclose()


@pytest.mark.parametrize("where", ["statement", "between statements"])
async def test_a_caller_leaves_at_once_when_the_database_goes_silent(
    relayed: tuple[MysqlDatabase, TcpRelay], where: str
) -> None:
    db, relay = relayed
    async with db.transaction() as tx:  # a pooled connection, known to work
        await tx.fetchone("SELECT 1 AS one")
    relay.freeze()
    started = trio.current_time()
    with trio.move_on_after(0.5) as scope:
        async with db.transaction() as tx:
            if where == "statement":
                await tx.fetchone("SELECT 1 AS one")
            else:
                await trio.sleep_forever()  # cancelled inside the transaction
    assert scope.cancelled_caught
    # At once: neither a ROLLBACK nor the kill of the server thread is waited for (each
    # would take up to 5 s across the silent link).
    assert trio.current_time() - started < 1.5
