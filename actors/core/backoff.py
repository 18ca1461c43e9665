"""Retry schedules as pure values (§7.4, §9.2).

Persisted schedules — their delays become a ``next_*_at`` column, so they survive a restart.
Two independent schedules, never to be mixed (§7.4: the outbox ``attempt_count`` counts
send attempts of one row; the task ``attempt_count`` counts executions):

* publish backoff: 5 s, 15 s, 1 min, 5 min, 15 min, then 15 min forever. Indexed by the
  outbox row's attempt count *as incremented by the claim*, so the first failure waits
  5 s rather than skipping to 15 s. There is no terminal state: sending never gives up.
* execution retry backoff: 1 min, then 15 min, each with ±20 % jitter (§9.2). Indexed by
  the task's attempt count after the failed attempt (1 → first entry).

In-process retry loops — nothing persisted; a restart starts the loop afresh.
:class:`LoopBackoff` gives the actors' delays: the supervisor's restart delay
(:data:`SUPERVISOR_RESTART_BACKOFF`), the DLQ handler's database retries
(:data:`DLQ_RETRY_BACKOFF`) and the publisher's pause after a database fault
(:meth:`LoopBackoff.constant`). The store's retry of a database fault inside one
transition has its own short doubling (50 ms to 1 s, bounded by the call's budget):
``actors/core/db_retry.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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


@dataclass(frozen=True, slots=True)
class LoopBackoff:
    """Delays of an in-process retry loop: exponential, capped.

    The delay before retry number ``failures`` (the count of consecutive failures so far,
    ≥ 1) is ``min(initial × factor ** (failures - 1), maximum)`` seconds: with the
    defaults of :data:`SUPERVISOR_RESTART_BACKOFF` 0.5 s, 1 s, 2 s … 16 s, then 30 s
    forever. ``factor`` 1 gives a constant pause.

    Args:
        initial: delay after the first failure, seconds (> 0).
        maximum: cap of the delay, seconds (≥ ``initial``).
        factor: growth per consecutive failure (≥ 1).

    Raises:
        ValueError: a bound is out of range.
    """

    initial: float
    maximum: float
    factor: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.initial <= self.maximum:
            raise ValueError(f"need 0 < initial <= maximum, got {self.initial}, {self.maximum}")
        if self.factor < 1:
            raise ValueError(f"factor must be at least 1, got {self.factor}")

    @classmethod
    def constant(cls, seconds: float) -> LoopBackoff:
        """The same pause after every failure."""
        return cls(seconds, seconds, 1.0)

    def delay(self, failures: int) -> float:
        """Seconds to wait before the next try after ``failures`` consecutive failures.

        Args:
            failures: consecutive failures including the one just seen; values below 1
                count as 1.

        Returns:
            The delay in seconds, in ``[initial, maximum]``.
        """
        exponent = max(failures, 1) - 1
        # The cap is reached after a few dozen failures at most; stop multiplying there so
        # a loop failing for days cannot overflow the float.
        delay = self.initial
        for _ in range(exponent):
            delay *= self.factor
            if delay >= self.maximum:
                return self.maximum
        return min(delay, self.maximum)

    def forgives(self, ran_seconds: float) -> bool:
        """Whether a run that lasted ``ran_seconds`` before failing counts as a fresh
        first failure: it ran longer than the longest delay, so it was healthy for a
        while and restarts promptly again.

        Args:
            ran_seconds: how long the attempt ran before it failed, seconds.
        """
        return ran_seconds > self.maximum


#: Restart delay of a crashed actor (``actors.plumbing.supervisor``).
SUPERVISOR_RESTART_BACKOFF = LoopBackoff(initial=0.5, maximum=30.0)
#: Retry delay of the DLQ handler's quarantine transaction (``actors.supervised.dlq``).
DLQ_RETRY_BACKOFF = LoopBackoff(initial=0.5, maximum=30.0)
