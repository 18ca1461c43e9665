"""When to retry a database transition, and how long to wait: a pure decision.

The database layer (``db.mysql``, ``db.sqlite``) turns driver errors into four *faults*;
the store asks ``db_retry_delay`` after each failed attempt whether to run the whole
transition again and after how many seconds. Nothing here does IO: the elapsed time, the
caller's remaining time and the random draw for jitter are arguments.

The four faults, and why re-running a transition is safe after each:

* ``ROLLED_BACK`` — the server undid the transaction itself (deadlock, lock wait timeout,
  an interrupted statement, SQLite's busy file). Nothing was written; the connection is
  fine. Retried fast, a few times: a deadlock that keeps coming back is a bug to see.
* ``CONNECTION_LOST`` — the connection failed before ``COMMIT`` was sent (a dead pooled
  connection at ``BEGIN``, a connection killed mid-transaction). A transaction whose
  connection ends uncommitted is rolled back by the server, so nothing was written. The
  next attempt runs on a fresh connection at once (a single killed connection costs no
  wait), then with growing delays.
* ``UNAVAILABLE`` — no connection can be opened (refused while the server restarts,
  server shutdown in progress, too many connections). Nothing was tried. Retried with
  growing delays, capped so that a server that comes back is used within ``max_delay``.
* ``COMMIT_UNKNOWN`` — the connection failed after ``COMMIT`` was sent and before its
  answer: the transaction may or may not have committed. Retried like a lost connection,
  because every store transition is written so that re-running it after a commit that
  did land gives the same answer (each one's docstring says why).

Every fault is bounded by time, not only by a count: ``budget_seconds`` (default 30 s,
``FILE_EXPORT_DB_RETRY_SECONDS``) is long enough to ride out a MariaDB restart, and the
caller's own deadline (a lease margin, an HTTP request's patience) can shorten it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum


class DbFault(StrEnum):
    """What a failed database attempt means for a retry (see the module docstring)."""

    ROLLED_BACK = "rolled_back"
    CONNECTION_LOST = "connection_lost"
    UNAVAILABLE = "unavailable"
    COMMIT_UNKNOWN = "commit_unknown"


@dataclass(frozen=True, slots=True)
class DbRetryPolicy:
    """Limits of the retry schedule.

    Attributes:
        budget_seconds: give up once another wait would end later than this many seconds
            after the first attempt started. 0 disables waiting retries (an immediate
            retry on a fresh connection is still allowed if it fits).
        max_rolled_back_attempts: attempts in total when every failure was ``ROLLED_BACK``.
        rolled_back_delay: first wait after a rollback, seconds; tripled per attempt.
        first_delay: first wait after a connection fault that is not retried at once.
        max_delay: cap of the connection-fault waits, seconds: how soon a database that
            comes back is noticed.
    """

    budget_seconds: float = 30.0
    max_rolled_back_attempts: int = 6
    rolled_back_delay: float = 0.005
    first_delay: float = 0.05
    max_delay: float = 1.0


def db_retry_delay(
    fault: DbFault,
    attempt: int,
    elapsed: float,
    rand: float,
    policy: DbRetryPolicy = DbRetryPolicy(),
    time_left: float = math.inf,
) -> float | None:
    """Seconds to wait before running a failed transition again, or ``None`` to give up.

    Args:
        fault: what the attempt that just failed ran into.
        attempt: attempts made so far, including the one that just failed (≥ 1).
        elapsed: seconds since the first attempt started.
        rand: a uniform random number in [0, 1) for jitter (keeps this function pure).
        policy: the limits.
        time_left: seconds until the caller's own deadline; a wait that would end at or
            after it gives up instead (the caller has better things to do than to wait
            into a cancellation).

    Returns:
        The delay in seconds (0 means "at once, on a fresh connection"), or ``None``.

    Schedule:
        ``ROLLED_BACK``: ``rolled_back_delay × 3^(attempt-1) × (1 + rand)``, at most
        ``max_rolled_back_attempts`` attempts. ``CONNECTION_LOST`` / ``COMMIT_UNKNOWN``:
        0 after the first attempt, then ``first_delay × 2^(attempt-2)``; ``UNAVAILABLE``:
        ``first_delay × 2^(attempt-1)``; both capped at ``max_delay`` and scaled by
        ``0.5 + rand / 2`` so that many waiting callers do not return in step.
    """
    if attempt < 1:
        raise ValueError("attempt counts from 1")
    if fault == DbFault.ROLLED_BACK:
        if attempt >= policy.max_rolled_back_attempts:
            return None
        delay = policy.rolled_back_delay * float(3 ** (attempt - 1)) * (1 + rand)
    else:
        steps = attempt - 1 if fault == DbFault.UNAVAILABLE else attempt - 2
        if steps < 0:
            delay = 0.0
        else:
            base = min(policy.max_delay, policy.first_delay * float(2 ** min(steps, 30)))
            delay = base * (0.5 + rand / 2)
    if elapsed + delay > policy.budget_seconds or delay >= time_left:
        return None
    return delay
