"""Keep trio's autojump mock clock still while real IO is pending.

pytest-trio's autojump clock (threshold 0) jumps to the next timer as soon as every trio
task is blocked. A task waiting on a real socket or a worker thread is blocked too, so
without help the clock jumps *during* a MariaDB query (asyncmy runs on trio-asyncio, whose
socket waits are trio waits) or a ``trio.to_thread`` call: a lease "expires" or a deadline
passes mid-transaction, and a test fails at random — more often on a loaded machine, which
is why a real-time threshold (the 50 ms used before) only makes the race rarer. The same
hazard for threads is trio issue 456.

``hold_mock_clock()`` closes the race for every call it wraps: while at least one call is
in flight it sets the running MockClock's ``autojump_threshold`` to infinity (the setter
re-syncs trio's run loop at once), and the last call to finish restores the value it
found. A pending call therefore sees no mock time pass, exactly like SQLite, which runs
in-loop. Outside a MockClock run it does nothing.

Where it is entered (the real IO that mock-clock tests can reach):

* ``MysqlDatabase(io_guard=hold_mock_clock)`` (the ``store`` fixture): every statement,
  connect, and the kill of a discarded connection (``MysqlDatabase._aio``);
* ``trio.to_thread.run_sync`` while a test runs on ``autojump_clock`` (patched by that
  fixture): the export worker's temporary-directory cleanup, the registry source's file
  reads, trio's own ``getaddrinfo``. Code that bound ``run_sync`` earlier
  (``LocalDirectoryStorage``'s default ``offload``) is not patched; the ``storage``
  fixture runs its file IO inline.

Not reachable from mock-clock tests today, so not wrapped: real HTTP (the Provider client
runs only in the real-clock end-to-end tests), subprocesses (the export worker, started
only by the real runner in real-clock tests), the RocketMQ client (its tests use the real
clock). A new mock-clock test that reaches one of them must
wrap the wait in ``hold_mock_clock()``.

Hazard: a task that holds a database lock and then waits for mock time to pass, while
another task's query waits for that lock, now hangs until the server's lock-wait timeout
instead of passing by luck. The store never sleeps inside a transaction.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import trio
import trio.testing


@dataclass
class _Hold:
    """Calls in flight on one clock, and the threshold to restore after the last one."""

    saved_threshold: float
    in_flight: int = 0


_holds: weakref.WeakKeyDictionary[trio.testing.MockClock, _Hold] = weakref.WeakKeyDictionary()


@contextmanager
def hold_mock_clock() -> Iterator[None]:
    """Stop autojumps of the running MockClock for the duration of the block.

    Calls may overlap (several queries on several connections): a counter per clock keeps
    the clock held until the last one leaves. Must be entered on the trio thread, inside
    ``trio.run``. A no-op when the run's clock is not a ``trio.testing.MockClock``.
    """
    clock = trio.lowlevel.current_clock()
    if not isinstance(clock, trio.testing.MockClock):
        yield
        return
    hold = _holds.get(clock)
    if hold is None:
        hold = _holds[clock] = _Hold(clock.autojump_threshold)
        clock.autojump_threshold = math.inf
    hold.in_flight += 1
    try:
        yield
    finally:
        hold.in_flight -= 1
        if hold.in_flight == 0:
            del _holds[clock]
            clock.autojump_threshold = hold.saved_threshold


def held_to_thread(run_sync: Any) -> Any:
    """Wrap ``trio.to_thread.run_sync`` so the mock clock holds while the thread runs."""

    async def run_sync_held(*args: Any, **kwargs: Any) -> Any:
        with hold_mock_clock():
            return await run_sync(*args, **kwargs)

    return run_sync_held
