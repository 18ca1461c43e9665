"""Supervision (docs/architecture.md, "Processes and the nursery tree"): restart after a
crash with capped backoff, counted and logged."""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing

from actors.core.backoff import LoopBackoff
from actors.plumbing.metrics import Metrics
from actors.plumbing.supervisor import supervise


async def test_crashing_actor_is_restarted_with_backoff_and_counted(
    autojump_clock: trio.testing.MockClock,
    metrics: Metrics,
    caplog: pytest.LogCaptureFixture,
) -> None:
    starts: list[float] = []

    async def flaky() -> None:
        starts.append(trio.current_time())
        if len(starts) <= 3:
            raise RuntimeError("boom")

    with caplog.at_level(logging.ERROR, logger="actors.plumbing.supervisor"):
        await supervise("flaky", flaky, metrics, backoff=LoopBackoff(initial=0.5, maximum=1.5))
    gaps = [round(b - a, 3) for a, b in zip(starts, starts[1:], strict=False)]
    assert gaps == [0.5, 1.0, 1.5]  # doubling, capped
    assert metrics.actor_restarts.labels("flaky")._value.get() == 3
    assert all(r.exc_info for r in caplog.records)  # logged with the traceback


async def test_cancellation_is_not_a_crash(
    autojump_clock: trio.testing.MockClock,
    metrics: Metrics,
) -> None:
    with trio.move_on_after(10):
        await supervise("sleeper", trio.sleep_forever, metrics)
    assert metrics.actor_restarts.labels("sleeper")._value.get() == 0
