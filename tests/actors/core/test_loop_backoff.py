"""The in-process retry loops' backoff object (supervisor, DLQ handler, publisher)."""

from __future__ import annotations

import pytest

from actors.core.backoff import (
    DLQ_RETRY_BACKOFF,
    SUPERVISOR_RESTART_BACKOFF,
    LoopBackoff,
)


@pytest.mark.parametrize(
    ("backoff", "failures", "delay"),
    [
        # supervisor restarts and DLQ retries: 0.5 s doubling, capped at 30 s
        (SUPERVISOR_RESTART_BACKOFF, 1, 0.5),
        (SUPERVISOR_RESTART_BACKOFF, 2, 1.0),
        (SUPERVISOR_RESTART_BACKOFF, 3, 2.0),
        (SUPERVISOR_RESTART_BACKOFF, 6, 16.0),
        (SUPERVISOR_RESTART_BACKOFF, 7, 30.0),
        (SUPERVISOR_RESTART_BACKOFF, 10_000, 30.0),
        (SUPERVISOR_RESTART_BACKOFF, 0, 0.5),  # below 1 counts as the first failure
        (DLQ_RETRY_BACKOFF, 1, 0.5),
        (DLQ_RETRY_BACKOFF, 4, 4.0),
        (DLQ_RETRY_BACKOFF, 8, 30.0),
        # a tighter cap: the supervisor test's 0.5 / 1.5
        (LoopBackoff(0.5, 1.5), 1, 0.5),
        (LoopBackoff(0.5, 1.5), 2, 1.0),
        (LoopBackoff(0.5, 1.5), 3, 1.5),
        # the publisher's constant pause after a database fault
        (LoopBackoff.constant(1.0), 1, 1.0),
        (LoopBackoff.constant(1.0), 50, 1.0),
        (LoopBackoff.constant(0.01), 3, 0.01),
        (LoopBackoff(1.0, 100.0, factor=3.0), 3, 9.0),
    ],
)
def test_delay_by_consecutive_failures(backoff: LoopBackoff, failures: int, delay: float) -> None:
    assert backoff.delay(failures) == delay


@pytest.mark.parametrize(
    ("ran_seconds", "forgiven"),
    [(0.0, False), (29.9, False), (30.0, False), (30.1, True), (3600.0, True)],
)
def test_a_long_run_counts_as_a_fresh_first_failure(ran_seconds: float, forgiven: bool) -> None:
    assert SUPERVISOR_RESTART_BACKOFF.forgives(ran_seconds) is forgiven


@pytest.mark.parametrize(
    ("initial", "maximum", "factor"),
    [(0.0, 1.0, 2.0), (-1.0, 1.0, 2.0), (2.0, 1.0, 2.0), (1.0, 2.0, 0.5)],
)
def test_out_of_range_bounds_are_refused(initial: float, maximum: float, factor: float) -> None:
    with pytest.raises(ValueError):
        LoopBackoff(initial, maximum, factor)
