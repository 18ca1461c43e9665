"""Table tests of the lease and deadline maths (actors/core/lease.py): the watchdog,
the run's deadline, the settle step's lease margin."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from actors.core.lease import (
    WatchdogStep,
    after_renewal,
    deadline_delay,
    default_instance_id,
    is_predecessor_lease,
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


def test_default_instance_id_names_host_pid_and_pid_namespace() -> None:
    assert default_instance_id("web-1", 4242, 4026531836) == "web-1:4242/4026531836"
    assert default_instance_id("web-1", 4242, None) == "web-1:4242"


ME = {"instance_id": "web-1:100/777", "host": "web-1", "pid": 100, "pid_namespace": 777}
DEAD, LIVE = 200, 300


@pytest.mark.parametrize(
    ("owner", "me", "predecessor"),
    [
        ("web-1:200/777", ME, True),  # this host and namespace, its process gone
        ("web-1:300/777", ME, False),  # ... still running
        ("web-1:100/777", ME, True),  # our own id: we hold nothing yet
        ("web-1:100/778", ME, False),  # our PID in another namespace: unknown
        ("web-1:200/778", ME, False),  # another container with our host name
        ("web-2:200/777", ME, False),  # another host
        ("web-1:200", ME, False),  # no namespace part: cannot be checked here
        ("web-1:2x0/777", ME, False),  # not a PID
        ("web-1:²/777", ME, False),  # a digit to str.isdigit, not to int
        ("worker-a", ME, False),  # an explicit id of another instance
        (None, ME, False),  # no owner
        # An explicit, stable FILE_EXPORT_INSTANCE_ID: the predecessor used the same one.
        ("exporter-0", {**ME, "instance_id": "exporter-0"}, True),
        # A system without PID namespaces: only our own id can be told.
        ("web-1:200/777", {**ME, "pid_namespace": None}, False),
        ("web-1:100", {**ME, "instance_id": "web-1:100", "pid_namespace": None}, True),
        # Our own PID under a default id in our namespace, with an explicit id of ours: the
        # process that had the PID before us is gone.
        ("web-1:100/777", {**ME, "instance_id": "exporter-0"}, True),
    ],
)
def test_is_predecessor_lease(owner: str | None, me: dict[str, Any], predecessor: bool) -> None:
    assert is_predecessor_lease(owner, alive=lambda pid: pid != DEAD, **me) is predecessor
