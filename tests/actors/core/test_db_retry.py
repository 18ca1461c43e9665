"""The database retry decision (``actors.core.db_retry``): a table of faults, attempts and
elapsed times against the expected delay or give-up."""

from __future__ import annotations

import math

import pytest

from actors.core.db_retry import DbFault, DbRetryPolicy, db_retry_delay

P = DbRetryPolicy(budget_seconds=30, max_rolled_back_attempts=6)
R, C, U, K = (
    DbFault.ROLLED_BACK,
    DbFault.CONNECTION_LOST,
    DbFault.UNAVAILABLE,
    DbFault.COMMIT_UNKNOWN,
)


@pytest.mark.parametrize(
    ("fault", "attempt", "elapsed", "rand", "time_left", "expected"),
    [
        # a deadlock: fast, tripling, jittered by (1 + rand), six attempts in all
        (R, 1, 0.0, 0.0, math.inf, 0.005),
        (R, 2, 0.01, 0.5, math.inf, 0.0225),
        (R, 5, 0.5, 0.0, math.inf, 0.405),
        (R, 6, 0.9, 0.0, math.inf, None),
        # a lost connection: at once on a fresh connection, then 50 ms doubling to 1 s
        (C, 1, 0.0, 0.99, math.inf, 0.0),
        (C, 2, 0.0, 1.0, math.inf, 0.05),
        (C, 3, 0.1, 0.0, math.inf, 0.05),  # 0.1 s × (0.5 + 0/2)
        (C, 7, 2.0, 1.0, math.inf, 1.0),  # capped at max_delay
        (C, 200, 20.0, 1.0, math.inf, 1.0),  # still capped, no overflow
        # a lost COMMIT is retried like a lost connection
        (K, 1, 0.0, 0.3, math.inf, 0.0),
        (K, 4, 0.3, 1.0, math.inf, 0.2),
        # a server that refuses connections: no immediate retry, 50 ms first
        (U, 1, 0.0, 1.0, math.inf, 0.05),
        (U, 2, 0.1, 1.0, math.inf, 0.1),
        (U, 40, 25.0, 1.0, math.inf, 1.0),
        # the time budget bounds every fault, including deadlocks
        (U, 40, 29.5, 1.0, math.inf, None),
        (C, 2, 29.99, 1.0, math.inf, None),
        (R, 2, 30.0, 0.0, math.inf, None),
        # the caller's own deadline shortens it: never wait into a cancellation
        (U, 3, 1.0, 1.0, 0.2, None),
        (U, 3, 1.0, 1.0, 0.21, 0.2),
        (C, 1, 0.0, 0.0, 0.0, None),
    ],
)
def test_retry_delay_table(
    fault: DbFault,
    attempt: int,
    elapsed: float,
    rand: float,
    time_left: float,
    expected: float | None,
) -> None:
    delay = db_retry_delay(fault, attempt, elapsed, rand, P, time_left)
    if expected is None:
        assert delay is None
    else:
        assert delay == pytest.approx(expected)


def test_a_zero_budget_still_allows_the_immediate_retry_only_within_it() -> None:
    """Budget 0 (no waiting): even the immediate retry is refused once time has passed;
    a small budget admits the immediate retry on a fresh connection but no waits."""
    assert db_retry_delay(C, 1, 0.001, 0.0, DbRetryPolicy(budget_seconds=0)) is None
    small = DbRetryPolicy(budget_seconds=0.5)
    assert db_retry_delay(C, 1, 0.001, 0.0, small) == 0.0
    assert db_retry_delay(C, 2, 0.49, 1.0, small) is None


def test_a_restart_of_twenty_seconds_is_ridden_out_within_the_default_budget() -> None:
    """Walk the schedule of an UNAVAILABLE fault: the waits add up past 20 s before the
    30 s budget gives up, and no single wait exceeds the 1 s cap."""
    elapsed, attempt, waits = 0.0, 1, []
    while (delay := db_retry_delay(U, attempt, elapsed, 0.5, DbRetryPolicy())) is not None:
        waits.append(delay)
        elapsed += delay
        attempt += 1
    assert 20 < elapsed <= 30
    assert max(waits) <= 1.0


def test_attempts_count_from_one() -> None:
    with pytest.raises(ValueError):
        db_retry_delay(C, 0, 0.0, 0.0)
