"""Retry schedules as pure functions (§7.4, §9.2).

Two independent schedules, never to be mixed (§7.4: the outbox ``attempt_count`` counts
send attempts of one row; the task ``attempt_count`` counts executions):

* publish backoff: 5 s, 15 s, 1 min, 5 min, 15 min, then 15 min forever. Indexed by the
  outbox row's attempt count *as incremented by the claim*, so the first failure waits
  5 s rather than skipping to 15 s. There is no terminal state: sending never gives up.
* execution retry backoff: 1 min, then 15 min, each with ±20 % jitter (§9.2). Indexed by
  the task's attempt count after the failed attempt (1 → first entry).
"""

from __future__ import annotations

from collections.abc import Sequence

PUBLISH_BACKOFF_SECONDS: tuple[float, ...] = (5, 15, 60, 300, 900)
RETRY_BACKOFF_SECONDS: tuple[float, ...] = (60, 900)
RETRY_JITTER = 0.2


def publish_backoff(
    attempt_count: int, schedule: Sequence[float] = PUBLISH_BACKOFF_SECONDS
) -> float:
    """Seconds to wait before sending an outbox row again.

    Args:
        attempt_count: the row's ``attempt_count`` after the claim incremented it (≥ 1).
        schedule: the table; past its end the last entry repeats forever (§7.4).

    Returns:
        Delay in seconds.
    """
    if not schedule:
        raise ValueError("publish backoff schedule is empty")
    index = min(max(attempt_count, 1), len(schedule)) - 1
    return float(schedule[index])


def retry_backoff(
    attempt_count: int,
    rand: float,
    schedule: Sequence[float] = RETRY_BACKOFF_SECONDS,
    jitter: float = RETRY_JITTER,
) -> float:
    """Seconds until an automatic retry of a failed execution may run (§9.2).

    Args:
        attempt_count: executions so far, including the one that just failed (≥ 1).
        rand: a uniform random number in [0, 1) supplied by the caller (keeps this pure).
        schedule: base delays; past the end the last entry repeats.
        jitter: relative spread; 0.2 gives a delay in [0.8, 1.2) × base.

    Returns:
        Delay in seconds, never negative.
    """
    if not schedule:
        raise ValueError("retry backoff schedule is empty")
    base = float(schedule[min(max(attempt_count, 1), len(schedule)) - 1])
    return max(0.0, base * (1 - jitter + 2 * jitter * rand))


def should_retry(attempt_count: int, max_attempts: int) -> bool:
    """True if a failed execution gets another automatic attempt (§9.2, §8.5-2).

    ``attempt_count`` already includes the failed attempt, so with ``max_attempts`` 3 the
    attempts 1 and 2 are retried and attempt 3 ends FAILED.
    """
    return attempt_count < max_attempts
