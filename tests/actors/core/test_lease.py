"""Table tests of the lease and deadline maths (actors/core/lease.py): the watchdog,
the run's deadline, the settle step's lease margin."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from actors.core.lease import (
    WatchdogStep,
    after_renewal,
    deadline_delay,
    margin_at,
    renewal_budget,
    renewal_follow_period,
    settle_retry_pause,
    time_left,
    watchdog_abort_at,
)


@pytest.mark.parametrize(
    ("renewed_at", "lease", "margin", "now", "at", "left"),
    [
        (100.0, 60.0, 10.0, 100.0, 150.0, 50.0),
        (100.0, 60.0, 0.0, 130.0, 160.0, 30.0),  # margin 0: to the lease's end
        (100.0, 60.0, 10.0, 150.0, 150.0, 0.0),  # at the margin
        (100.0, 60.0, 10.0, 155.0, 150.0, -5.0),  # past it
        (0.0, 3.0, 1.0, 0.5, 2.0, 1.5),  # test-sized timings
    ],
)
def test_margin(
    renewed_at: float, lease: float, margin: float, now: float, at: float, left: float
) -> None:
    assert margin_at(renewed_at, lease, margin) == at
    assert time_left(now, renewed_at, lease, margin) == left


@pytest.mark.parametrize(
    ("left", "pause"),
    [(5.0, 1.0), (1.0, 1.0), (0.25, 0.25)],
)
def test_settle_retry_pause(left: float, pause: float) -> None:
    assert settle_retry_pause(left) == pause


@pytest.mark.parametrize(("heartbeat", "period"), [(10.0, 5.0), (1.0, 0.5)])
def test_renewal_follow_period(heartbeat: float, period: float) -> None:
    assert renewal_follow_period(heartbeat) == period


@pytest.mark.parametrize(
    ("renewed_at", "lease", "heartbeat", "now", "abort_at", "budget"),
    [
        (100.0, 60.0, 10.0, 110.0, 150.0, 40.0),  # one heartbeat in: 40 s to try
        (100.0, 60.0, 10.0, 149.0, 150.0, 1.0),
        (100.0, 60.0, 10.0, 151.0, 150.0, 0.0),  # never negative
    ],
)
def test_watchdog_abort_at_and_budget(
    renewed_at: float, lease: float, heartbeat: float, now: float, abort_at: float, budget: float
) -> None:
    assert watchdog_abort_at(renewed_at, lease, heartbeat) == abort_at
    assert renewal_budget(now, abort_at) == budget


@pytest.mark.parametrize(
    ("renewed", "now", "abort_at", "heartbeat", "step"),
    [
        (True, 110.0, 150.0, 10.0, WatchdogStep.RENEWED),
        (True, 149.9, 150.0, 10.0, WatchdogStep.RENEWED),  # landed late: still renewed
        (False, 110.0, 150.0, 10.0, WatchdogStep.LOST),
        (None, 110.0, 150.0, 10.0, WatchdogStep.KEEP_TRYING),  # failed, time left
        (None, 140.0, 150.0, 10.0, WatchdogStep.KEEP_TRYING),  # exactly one heartbeat left
        (None, 140.1, 150.0, 10.0, WatchdogStep.ABORT_UNRENEWED),  # the next try ends late
        (None, 150.0, 150.0, 10.0, WatchdogStep.ABORT_UNRENEWED),  # budget ran out
    ],
)
def test_after_renewal(
    renewed: bool | None, now: float, abort_at: float, heartbeat: float, step: WatchdogStep
) -> None:
    assert after_renewal(renewed, now, abort_at, heartbeat) == step


T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("started", "deadline", "delay"),
    [
        (T0, T0 + timedelta(minutes=30), 1800.0),
        (T0, T0 + timedelta(milliseconds=1500), 1.5),
        (T0, T0 - timedelta(seconds=5), 0.0),  # already past: abort at once
        (None, T0, None),  # unknown: no guard
        (T0, None, None),
    ],
)
def test_deadline_delay(
    started: datetime | None, deadline: datetime | None, delay: float | None
) -> None:
    assert deadline_delay(started, deadline) == delay
