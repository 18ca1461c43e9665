"""The autojump mock clock holds still while real IO is pending (issue 8, item 5).

Each test keeps a ``trio.sleep(60)`` timer pending in a sibling task while a slow real
call runs. An autojump clock that is not held jumps straight to that timer as soon as the
caller blocks on the socket or the thread, so the timer would fire and mock time would
read 60 s after a call that took a fraction of a real second.
"""

from __future__ import annotations

import time

import pytest
import trio
import trio.testing

from db.store import ExportStore

#: the ``store`` fixture on MariaDB only: SQLite runs in-loop and has no socket to wait on
on_mariadb = pytest.mark.parametrize("store", ["mariadb"], indirect=True)


class Timer:
    """A ``trio.sleep(60)`` in a sibling task that records the mock time it fired at."""

    def __init__(self) -> None:
        self.fired_at: list[float] = []

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        await trio.sleep(60)
        self.fired_at.append(trio.current_time())


@on_mariadb
async def test_no_autojump_while_a_query_is_in_flight(
    autojump_clock: trio.testing.MockClock, store: ExportStore
) -> None:
    """A ``SELECT SLEEP(0.3)`` on MariaDB leaves mock time where it was: the pending
    timer does not fire during the query, fires at exactly +60 s afterwards, and the
    clock is back at threshold 0 once the query is done."""
    timer = Timer()
    async with trio.open_nursery() as n:
        await n.start(timer.run)
        t0 = trio.current_time()
        async with store.db.transaction() as tx:
            row = await tx.fetchone("SELECT SLEEP(0.3) AS slept")
        assert row == {"slept": 0}
        assert timer.fired_at == [] and trio.current_time() == t0
        assert autojump_clock.autojump_threshold == 0
    assert timer.fired_at == [t0 + 60]


@on_mariadb
async def test_overlapping_queries_hold_the_clock_until_the_last_one_ends(
    autojump_clock: trio.testing.MockClock, store: ExportStore
) -> None:
    """Two queries on two connections overlap; the shorter one ending must not release
    the clock while the longer one still waits on the server."""
    timer = Timer()
    ended_at: list[float] = []

    async def query(seconds: float) -> None:
        async with store.db.transaction() as tx:
            await tx.fetchone(f"SELECT SLEEP({seconds}) AS slept")
        ended_at.append(trio.current_time())

    async with trio.open_nursery() as n:
        await n.start(timer.run)
        t0 = trio.current_time()
        async with trio.open_nursery() as queries:
            queries.start_soon(query, 0.1)
            queries.start_soon(query, 0.4)
        assert ended_at == [t0, t0] and timer.fired_at == []
        assert autojump_clock.autojump_threshold == 0
    assert timer.fired_at == [t0 + 60]


async def test_no_autojump_while_a_worker_thread_runs(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Blocking work in ``trio.to_thread.run_sync`` (trio issue 456) holds the clock the
    same way: the export runner's writer and the registry source use such threads."""
    timer = Timer()
    async with trio.open_nursery() as n:
        await n.start(timer.run)
        t0 = trio.current_time()
        await trio.to_thread.run_sync(time.sleep, 0.3)  # stands in for slow file IO
        assert timer.fired_at == [] and trio.current_time() == t0
        assert autojump_clock.autojump_threshold == 0
    assert timer.fired_at == [t0 + 60]
