"""Supervision: restart an actor after an unexpected exception, with capped backoff
(docs/architecture.md, "Processes and the nursery tree").

A crash in one consumer slot never takes the process down; it is logged with its
traceback, counted in ``export_actor_restarts_total{actor}``, and the actor starts again.
Cancellation is not a crash and passes straight through.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio

from actors.core.backoff import SUPERVISOR_RESTART_BACKOFF, LoopBackoff
from actors.plumbing.metrics import Metrics

log = logging.getLogger(__name__)


async def supervise(
    name: str,
    actor: Callable[[], Awaitable[object]],
    metrics: Metrics,
    *,
    backoff: LoopBackoff = SUPERVISOR_RESTART_BACKOFF,
) -> None:
    """Run ``actor`` until it returns; restart it after each unexpected exception.

    Args:
        name: label for logs and the restart metric.
        actor: an async callable taking no arguments.
        backoff: restart delays by consecutive crashes (0.5 s doubling up to 30 s by
            default); an actor that ran longer than the longest delay before crashing
            counts as crashing for the first time again.
    """
    crashes = 0
    while True:
        started = trio.current_time()
        try:
            await actor()
            return
        except Exception:
            # An actor that ran a while before crashing restarts promptly again.
            ran = trio.current_time() - started
            crashes = 1 if backoff.forgives(ran) else crashes + 1
            delay = backoff.delay(crashes)
            log.exception("actor %s crashed; restarting in %.1fs", name, delay)
            metrics.actor_restarts.labels(name).inc()
        await trio.sleep(delay)
