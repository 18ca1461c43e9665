"""Supervision: restart an actor after an unexpected exception, with capped backoff (§14).

A crash in one consumer slot never takes the process down; it is logged with its
traceback, counted in ``export_actor_restarts_total{actor}``, and the actor starts again.
Cancellation is not a crash and passes straight through.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio

from actors.metrics import Metrics

log = logging.getLogger("actors.supervisor")


async def supervise(
    name: str,
    actor: Callable[[], Awaitable[object]],
    metrics: Metrics,
    *,
    initial_backoff: float = 0.5,
    max_backoff: float = 30.0,
) -> None:
    """Run ``actor`` until it returns; restart it after each unexpected exception.

    Args:
        name: label for logs and the restart metric.
        actor: an async callable taking no arguments.
        initial_backoff: seconds before the first restart; doubles per consecutive crash.
        max_backoff: cap for the restart delay, seconds.
    """
    backoff = initial_backoff
    while True:
        started = trio.current_time()
        try:
            await actor()
            return
        except Exception:
            log.exception("actor %s crashed; restarting in %.1fs", name, backoff)
            metrics.actor_restarts.labels(name).inc()
        # An actor that ran a while before crashing restarts promptly again.
        if trio.current_time() - started > max_backoff:
            backoff = initial_backoff
        await trio.sleep(backoff)
        backoff = min(backoff * 2, max_backoff)
