"""A running task's lease, kept: the lease watchdog, the deadline guard, and settling
writes bounded by the lease margin (§8.3, §8.3.1, §8.4).

The executor (``actors/supervised/execution.py``) starts :meth:`LeaseKeeper.watchdog` and
:meth:`LeaseKeeper.deadline_guard` beside the export in the run's nursery. Neither writes
anything but the fenced lease renewal: each ends the run by ``RunContext.abort``, which
cancels the run's scope (a structured abort; the export worker process dies with it), and
records why, for the executor to settle. The settling writes after the run go through
:meth:`LeaseKeeper.settle_write`, which gives up at the lease margin rather than write
past a lease this instance may no longer hold.

The maths (when to renew, give up, abort, pause) are ``actors/core/lease.py``; this module
reads trio's clock and keeps the scopes and sleeps. Times are readings of that monotonic
clock, seconds, counted from ``RunContext.lease_renewed_at``; the lease itself is timed by
the database clock.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import trio

from actors.core import lease
from actors.core.errors import TransientDatabaseError
from actors.core.lease import WatchdogStep
from actors.core.log_context import task_fields
from actors.core.outcomes import AbortReason
from actors.core.ports.store import ExecutionStore
from actors.pipeline.attempt import RunContext
from actors.plumbing.config import Settings

# The run's lines keep the logger they have always had, whichever module writes them:
# operators and tests select a run's lines by it.
log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Unsettled:
    """A settling write that did not land before the lease margin; ``error`` is the last
    reason (a database fault, or a bug)."""

    error: BaseException


class LeaseKeeper:
    """Keeps the lease of whatever run it is given, for one executor.

    Args:
        store: the store; only ``renew_lease`` and ``own_run_past_deadline`` are used.
        settings: ``FILE_EXPORT_TASK_LEASE_SECONDS`` and ``…_HEARTBEAT_SECONDS``.
        owner: this instance's ``lease_owner``.
    """

    def __init__(self, store: ExecutionStore, settings: Settings, owner: str) -> None:
        self.store = store
        self.settings = settings
        self.owner = owner

    async def watchdog(self, ctx: RunContext) -> None:
        """Renew the lease every heartbeat for the whole run (§8.3), independent of
        batch progress. Zero rows → abort at once. A renewal that raises is retried until
        the lease would run out, then aborts: a dead watchdog must never leave the run
        unprotected."""
        heartbeat = self.settings.task_heartbeat_seconds
        lease_seconds = self.settings.task_lease_seconds
        while True:
            # Every heartbeat, or at once when the task was cancelled through this
            # process's API (``LocalClaims.cancelled``): the renewal then matches 0 rows.
            with trio.move_on_after(heartbeat):
                await ctx.renew_now.wait()
            ctx.renew_now = trio.Event()
            # Keep trying (the store backs off inside the call) until one heartbeat
            # before the lease would run out, then abort: never run unprotected.
            abort_at = lease.watchdog_abort_at(ctx.lease_renewed_at, lease_seconds, heartbeat)
            failure: BaseException | None = None
            renewed: bool | None = None
            with trio.move_on_after(lease.renewal_budget(trio.current_time(), abort_at)):
                try:
                    renewed = await self.store.renew_lease(ctx.task, self.owner, lease_seconds)
                except TransientDatabaseError as exc:
                    failure = exc
                    log.warning(
                        "lease renewal failed",
                        extra=task_fields(ctx.task.id, ctx.task.dispatch_version, error=str(exc)),
                    )
                except Exception as exc:
                    failure = exc
                    log.exception(
                        "lease renewal failed",
                        extra=task_fields(ctx.task.id, ctx.task.dispatch_version),
                    )
            step = lease.after_renewal(renewed, trio.current_time(), abort_at, heartbeat)
            if step == WatchdogStep.KEEP_TRYING:
                continue
            if step == WatchdogStep.ABORT_UNRENEWED:
                log.warning(
                    "no lease renewal in time; aborting the run",
                    extra=task_fields(
                        ctx.task.id,
                        ctx.task.dispatch_version,
                        seconds=round(trio.current_time() - ctx.lease_renewed_at),
                        reason=failure or "renewal still in flight",
                    ),
                )
                ctx.abort(AbortReason.WATCHDOG_FAILED)
                return
            if step == WatchdogStep.LOST:
                # Lease lost, version bumped, or the deadline passed (§8.3.1 folds the
                # deadline into the renewal); tell the two apart for the settle step.
                if ctx.cancel_requested:
                    log.info(
                        "task cancelled; aborting the run",
                        extra=task_fields(ctx.task.id, ctx.task.dispatch_version),
                    )
                    ctx.abort(AbortReason.CANCELLED)
                    return
                try:
                    past_deadline = await self.store.own_run_past_deadline(ctx.task, self.owner)
                except TransientDatabaseError:
                    past_deadline = False  # cannot tell: treat as lost, write nothing
                log.warning(
                    "lease renewal matched 0 rows; aborting the run",
                    extra=task_fields(
                        ctx.task.id,
                        ctx.task.dispatch_version,
                        reason="deadline passed"
                        if past_deadline
                        else "lease lost or task cancelled",
                    ),
                )
                ctx.abort(AbortReason.DEADLINE if past_deadline else AbortReason.LEASE_LOST)
                return
            ctx.lease_renewed_at = trio.current_time()

    async def deadline_guard(self, ctx: RunContext) -> None:
        """Abort when the run reaches its deadline (§8.3.1).

        The deadline was computed by the DB clock at claim; here it becomes a duration on
        trio's monotonic clock, so instance clock skew cannot move it. The fenced final
        commit re-checks it by DB time, so this guard only makes the abort prompt."""
        delay = lease.deadline_delay(ctx.task.started_at, ctx.task.execution_deadline_at)
        if delay is None:
            return
        await trio.sleep(delay)
        ctx.abort(AbortReason.DEADLINE)

    async def settle_write(
        self, ctx: RunContext, what: str, write: Callable[[], Awaitable[T]], *, margin: float
    ) -> T | Unsettled:
        """Run one settling write until it lands, or until ``margin`` seconds before the
        lease runs out (counted from the last renewal the watchdog, still running, got
        through). A database fault is retried (the store backs off inside each call); any
        other error is a bug that no retry cures and ends the wait at once.

        Args:
            ctx: the run; its ``lease_renewed_at`` moves the margin as renewals land.
            what: what the write records, for the log lines ("the result", "the retry" …).
            write: the fenced store call, made anew for each try.
            margin: seconds to keep before the lease runs out (the settlement's margin).

        Returns:
            The write's answer, or ``Unsettled`` with the last error. Then the outcome is
            unknown to this executor: it may even have landed (a lost COMMIT), so the
            caller must not act as if it had failed — the reconciler recovers the lease.
        """
        task = ctx.task
        last: BaseException | None = None
        warned = False

        def left() -> float:
            return lease.time_left(
                trio.current_time(), ctx.lease_renewed_at, self.settings.task_lease_seconds, margin
            )

        while left() > 0:
            try:
                answer = await self._within_lease(ctx, margin, write)
            except TransientDatabaseError as exc:
                last = exc
            except Exception as exc:
                log.exception(
                    "recording the outcome failed",
                    extra=task_fields(task.id, task.dispatch_version, what=what),
                )
                return Unsettled(exc)
            else:
                if answer:
                    return answer[0]
                break  # the margin passed while the write was in flight
            if not warned:
                warned = True
                log.warning(
                    "could not record the outcome yet; retrying until the lease margin",
                    extra=task_fields(task.id, task.dispatch_version, what=what, error=str(last)),
                )
            if left() > 0:
                await trio.sleep(lease.settle_retry_pause(left()))
        error = last or TimeoutError("the lease margin passed while the database was busy")
        log.warning(
            "outcome not recorded before the lease margin; leaving the task to the reconciler",
            extra=task_fields(task.id, task.dispatch_version, what=what, error=str(error)),
        )
        return Unsettled(error)

    def _margin_at(self, ctx: RunContext, margin: float) -> float:
        """``trio.current_time()`` at which the lease is ``margin`` seconds from running
        out, counted from the last renewal that landed."""
        return lease.margin_at(ctx.lease_renewed_at, self.settings.task_lease_seconds, margin)

    async def _within_lease(
        self, ctx: RunContext, margin: float, write: Callable[[], Awaitable[T]]
    ) -> list[T]:
        """Run ``write`` until it returns or the lease margin passes; the margin moves
        with every renewal the watchdog lands meanwhile. The store's retries see the
        margin as the trio deadline and give up before it.

        Returns:
            ``[answer]``, or ``[]`` if the margin cut the write off.

        Raises:
            Whatever ``write`` raises.
        """
        out: list[T] = []
        errors: list[Exception] = []
        async with trio.open_nursery() as nursery:
            scope = nursery.cancel_scope
            scope.deadline = self._margin_at(ctx, margin)

            async def follow_renewals() -> None:
                while True:
                    await trio.sleep(
                        lease.renewal_follow_period(self.settings.task_heartbeat_seconds)
                    )
                    scope.deadline = self._margin_at(ctx, margin)

            async def run() -> None:
                try:
                    out.append(await write())
                except Exception as exc:
                    errors.append(exc)
                scope.cancel()

            nursery.start_soon(follow_renewals)
            nursery.start_soon(run)
        if errors:
            raise errors[0]
        return out
