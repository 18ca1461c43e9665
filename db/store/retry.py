"""How store transitions ride out database faults: the ``retrying`` wrapper and ``DbHealth``.

The decision (retry or give up, and after how long) is ``actors.core.db_retry``; this
module carries it out around one transition and tells operators about a blip once.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import random
from collections.abc import Callable, Coroutine
from contextvars import ContextVar
from typing import Any, Concatenate, ParamSpec, Protocol, TypeAlias, TypeVar, overload

import trio

from actors.core.db_retry import DbFault, DbRetryPolicy, db_retry_delay
from actors.core.errors import TransientDatabaseError

log = logging.getLogger(__name__)

#: True while a transition re-runs after a lost COMMIT (``CommitUnknownError``) in the
#: same call: the earlier attempt may have landed, so a 0-row answer may be its own work.
_REPLAY: ContextVar[bool] = ContextVar("export_store_replay", default=False)


def replaying() -> bool:
    """Is this attempt a re-run after a commit whose outcome was lost?"""
    return _REPLAY.get()


class DbHealth:
    """The database's health as this process's store sees it, for operators: one WARNING
    when transitions start failing on connection faults, one when they work again (with
    how long the blip lasted), instead of one line per attempt. Shared by every copy of
    a store (``ExportStore.with_retry_budget``).

    Attributes:
        faulty_since: ``trio.current_time()`` of the first fault of the current blip, or
            ``None`` while healthy.
        blips: durations of the blips seen so far, seconds (the last 100).
        faults: connection-level faults seen in total.
    """

    def __init__(self) -> None:
        self.faulty_since: float | None = None
        self.blips: list[float] = []
        self.faults = 0
        self._attempts_in_blip = 0

    def fault(self, where: str, exc: TransientDatabaseError, budget: float) -> None:
        """Count a connection-level fault of transition ``where``; the first of a blip is
        logged, with the retry ``budget`` in seconds."""
        self.faults += 1
        self._attempts_in_blip += 1
        if self.faulty_since is None:
            self.faulty_since = trio.current_time()
            log.warning(
                "database fault in %s (%s: %s); store transitions retry for up to %gs",
                where,
                exc.fault.value,
                exc,
                budget,
            )

    def ok(self) -> None:
        """A transition landed: ends the current blip, if any, with one log line."""
        if self.faulty_since is None:
            return
        lasted = trio.current_time() - self.faulty_since
        self.blips = [*self.blips[-99:], lasted]
        log.warning(
            "database reachable again after %.2fs (%d failed attempts)",
            lasted,
            self._attempts_in_blip,
        )
        self.faulty_since = None
        self._attempts_in_blip = 0


class Retried(Protocol):
    """What ``retrying`` reads from the store whose transition it wraps."""

    retry_policy: DbRetryPolicy
    health: DbHealth


S = TypeVar("S", bound=Retried)
P = ParamSpec("P")
R = TypeVar("R")
#: A store transition: an ``async`` method of a store taking ``P`` and answering ``R``.
Transition: TypeAlias = Callable[Concatenate[S, P], Coroutine[Any, Any, R]]


@overload
def retrying(
    method: Transition[S, P, R],
) -> Transition[S, P, R]: ...


@overload
def retrying(*, budget: float) -> Callable[[Transition[S, P, R]], Transition[S, P, R]]: ...


def retrying(
    method: Transition[S, P, R] | None = None,
    *,
    budget: float | None = None,
) -> Any:
    """Re-run a transition whose attempt hit a ``TransientDatabaseError``, as long as
    ``actors.core.db_retry.db_retry_delay`` allows: deadlocks a few times, fast;
    connection faults (a killed or dead connection, a server restarting, a lost COMMIT)
    until the store's retry budget (``FILE_EXPORT_DB_RETRY_SECONDS``) or the caller's
    trio deadline, whichever comes first — never sleeping into a cancellation.

    Safe because a decorated method is one transaction (or a sequence of independently
    safe ones) whose effects roll back together when it fails before COMMIT; after a lost
    COMMIT each method tells "my earlier attempt landed" from "someone else changed it"
    by re-reading state, as its docstring explains (``replaying()`` is true then).

    Used bare (``@retrying``) or with a budget (``@retrying(budget=0.5)``).

    Args:
        method: the transition, an ``async`` method of the store.
        budget: seconds, to use a shorter budget than the store's for this method (a
            display-only write that should be skipped rather than waited for).

    Raises:
        TransientDatabaseError: the last fault, once the schedule gives up.
    """

    def decorate(
        fn: Transition[S, P, R],
    ) -> Transition[S, P, R]:
        @functools.wraps(fn)
        async def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
            policy = self.retry_policy
            if budget is not None and budget < policy.budget_seconds:
                policy = dataclasses.replace(policy, budget_seconds=budget)
            started = trio.current_time()
            replay = False
            attempt = 0
            while True:
                attempt += 1
                token = _REPLAY.set(replay)
                try:
                    result = await fn(self, *args, **kwargs)
                except TransientDatabaseError as exc:
                    now = trio.current_time()
                    delay = db_retry_delay(
                        exc.fault,
                        attempt,
                        now - started,
                        random.random(),
                        policy,
                        trio.current_effective_deadline() - now,
                    )
                    if exc.fault == DbFault.ROLLED_BACK:
                        log.info(
                            "%s rolled back by the database (attempt %d)", fn.__name__, attempt
                        )
                    else:
                        self.health.fault(fn.__name__, exc, policy.budget_seconds)
                    if delay is None:
                        log.info(
                            "%s gave up after %d attempts over %.2fs: %s",
                            fn.__name__,
                            attempt,
                            now - started,
                            exc,
                        )
                        raise
                    replay = replay or exc.fault == DbFault.COMMIT_UNKNOWN
                    await trio.sleep(delay)
                    continue
                finally:
                    _REPLAY.reset(token)
                self.health.ok()
                return result

        return wrapper

    return decorate(method) if method is not None else decorate
