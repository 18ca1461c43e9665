"""What the database-blip tests share (``test_db_blips*.py``): a store over a
``tests.faults.FaultyDatabase``, an outage from one trio time to another, and what a run
does with its file."""

from __future__ import annotations

import trio
import trio.testing

from actors.core.db_retry import DbRetryPolicy
from actors.pipeline.attempt import RunContext
from db.store import ExportStore
from tests.faults import FaultyDatabase
from tests.helpers import TOPIC

Clock = trio.testing.MockClock


def on_faulty(store: ExportStore, budget: float = 30) -> tuple[ExportStore, FaultyDatabase]:
    """The store over a ``FaultyDatabase``; ``budget``: the store's own retry budget, s
    (short, so that an outage outlasts it and the actor's own handling is what counts)."""
    faulty = FaultyDatabase(store.db)
    policy = DbRetryPolicy(budget_seconds=budget)
    return ExportStore(faulty, store.ids, topic=TOPIC, retry_policy=policy), faulty  # type: ignore[arg-type]


async def write_file(ctx: RunContext) -> str:
    """What a run does with its file, in short: recorded, created and written."""
    with await ctx.file.create() as f:
        f.write(b"xlsx bytes")
    assert ctx.file.key is not None
    return ctx.file.key


async def outage(faulty: FaultyDatabase, start: float, end: float) -> None:
    """The database is down from ``start`` to ``end`` (trio time)."""
    await trio.sleep_until(start)
    faulty.down = True
    await trio.sleep_until(end)
    faulty.down = False
