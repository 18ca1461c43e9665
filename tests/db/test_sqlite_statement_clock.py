"""SQLite's ``db_now_ms()`` reads one instant per statement, as MySQL's
``CURRENT_TIMESTAMP(3)`` does (db/sqlite.py ``StatementClock``).

Before, each use in a statement called the clock again: ``updated_at`` and
``next_retry_at = now + 60 s`` of one UPDATE could straddle a millisecond and differ by
59.999 s (a flaky store contract test). A clock that ticks on every call makes the
straddle certain here."""

from __future__ import annotations

import itertools

from db.sqlite import SqliteDatabase


def ticking_clock() -> object:
    counter = itertools.count(1_700_000_000_000)
    return lambda: next(counter)


async def test_every_use_in_one_statement_reads_the_same_instant() -> None:
    db = SqliteDatabase(":memory:", clock_ms=ticking_clock())  # type: ignore[arg-type]
    async with db.transaction() as tx:
        row = await tx.fetchone("SELECT db_now_ms() AS a, db_now_ms() + 60000 AS b")
        assert row is not None and row["b"] - row["a"] == 60000
        rows = await tx.fetchall(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50) "
            "SELECT db_now_ms() AS t FROM n"
        )
        assert len({r["t"] for r in rows}) == 1  # also while stepping through rows
        later = await tx.fetchone("SELECT db_now_ms() AS a")
        assert later is not None and later["a"] > row["a"]  # the next statement reads anew


async def test_a_transition_stores_exactly_its_backoff() -> None:
    db = SqliteDatabase(":memory:", clock_ms=ticking_clock())  # type: ignore[arg-type]
    async with db.transaction() as tx:
        await tx.execute("CREATE TABLE t (updated_at INTEGER, next_retry_at INTEGER)")
        await tx.execute("INSERT INTO t VALUES (0, 0)")
        await tx.execute(
            "UPDATE t SET updated_at = db_now_ms(), "
            "next_retry_at = db_now_ms() + CAST(ROUND(:s * 1000) AS INTEGER)",
            {"s": 60},
        )
        row = await tx.fetchone("SELECT next_retry_at - updated_at AS gap FROM t")
    assert row == {"gap": 60000}
