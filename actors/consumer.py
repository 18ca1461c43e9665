"""Consumer slots (§8.1 – §8.4): claim, ack, run the export under a lease watchdog, settle.

Each slot takes one delivery at a time, which is where backpressure comes from: with N
slots at most N exports run, and further commands wait in the transport.

Per delivery:

1. Decode. An undecodable body is the only thing that is *not* acked (§6.4): it is
   rejected, redelivered, and dead-lettered after ``maxReconsumeTimes``.
2. Claim with the full §8.2 update, through the instance's ``ClaimGate``, which first
   applies fair share: a task whose requester already holds its share of the slots is
   deferred (left PENDING, nothing written). Whatever the outcome (claimed, deferred, any
   of the seven no-claim branches, even a database error) the command is acked right
   after: the queue never holds a message for the length of an export, and the
   reconciler is the only re-dispatch path (DESIGN invariant 5).
3. Run the export in a per-run nursery beside a **watchdog** that renews the lease every
   ``heartbeat`` seconds (§8.3) and a **deadline guard** (§8.3.1). Either one aborts the
   run by cancelling its scope — a structured abort: the cancel kills the run's export
   worker process (``actors/pipeline/export_worker.py``) before the slot settles.
4. Settle: commit fenced by version, owner, status and deadline (§8.4); on failure delete
   the file and fail or reschedule by error class (§9.1, §9.2). A lost lease writes
   nothing (invariant 8). The decision is ``actors/core/settlement.py``; the lease and
   deadline maths are ``actors/core/lease.py``. This module carries them out.

Database blips cost no attempt and crash nothing. Every settling write (success, retry,
failure, hand-back) is retried until it lands or the lease margin is reached — then the
slot gives up with a WARNING, notes the real cause for the reconciler (``LocalClaims``)
and keeps the file, which a landed commit may reference. A database error that escapes
the run itself (the store gave up on a write it needed) hands the task back without
counting the attempt, as a shutdown does.

Before waiting for the next command, a slot that has become free *pulls*: it claims the
fairest due PENDING task from the database (``ClaimGate.claim_next``) and runs it, until
nothing may run here. That is how deferred tasks run as soon as a slot frees, and why a
deferral never leaves a slot idle while someone else's task waits.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TypeVar

import trio

from actors.claim_gate import ClaimGate
from actors.config import Settings
from actors.core import lease
from actors.core.backoff import retry_backoff
from actors.core.dispatch import NoClaim
from actors.core.errors import (
    CommandDecodeError,
    DatabaseError,
    DeadlineExceededError,
    ExportError,
    TransientDatabaseError,
    run_failure,
)
from actors.core.events import error_class
from actors.core.lease import WatchdogStep
from actors.core.log_context import bind_context
from actors.core.models import Command, Task
from actors.core.outcomes import AbortReason, ExportResult, RetryOutcome
from actors.core.ports import CommandTransport, Delivery, ExecutionStore, ExportStorage
from actors.core.settlement import (
    SHUTDOWN_RELEASE_SECONDS,
    Ending,
    FileFate,
    Settlement,
    Write,
    abort_error,
    deadline_message,
    ending_of,
    settle,
    settle_lost_commit,
)
from actors.core.tracing import run_trace_id
from actors.local_claims import LocalClaims
from actors.metrics import Metrics
from actors.pipeline.context import RunContext

log = logging.getLogger("actors.consumer")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Unsettled:
    """A settling write that did not land before the lease margin; ``error`` is the last
    reason (a database fault, or a bug)."""

    error: BaseException


#: The pipeline: given a run context, produce the file or raise an ExportError.
Pipeline = Callable[[RunContext], Awaitable[ExportResult]]


class ConsumerSlot:
    """One of ``FILE_EXPORT_CONSUMER_CONCURRENCY`` slots.

    Args:
        pipeline: the export body (``actors.pipeline.runner``); injectable so watchdog
            tests can drive a run with trio's mock clock.
        stopping: set when the process stops taking commands (SIGTERM, §14).
        rand: uniform [0, 1) source for retry jitter.
        local: what this process's slots hold, shared by all of them and the reconciler
            (a slot given none keeps its own, which is enough for a single slot).
        gate: the claim gate shared by all slots of this instance (fair share); a slot
            built without one gets its own, which applies the rules without the shared
            lock (tests of a single slot).
    """

    def __init__(
        self,
        name: str,
        store: ExecutionStore,
        transport: CommandTransport,
        storage: ExportStorage,
        settings: Settings,
        metrics: Metrics,
        pipeline: Pipeline,
        stopping: trio.Event,
        rand: Callable[[], float] = random.random,
        local: LocalClaims | None = None,
        gate: ClaimGate | None = None,
    ) -> None:
        self.name = name
        self.store = store
        self.transport = transport
        self.storage = storage
        self.settings = settings
        self.metrics = metrics
        self.pipeline = pipeline
        self.stopping = stopping
        self.rand = rand
        self.owner = settings.instance_id
        self.gate = gate or ClaimGate(store, settings)
        self.current: RunContext | None = None
        self.local = local if local is not None else LocalClaims()

    async def run(self) -> None:
        """Take deliveries until the process starts stopping."""
        while not self.stopping.is_set():
            delivery: Delivery | None = None
            with trio.CancelScope() as receive_scope:
                self._receive_scope = receive_scope
                if self.stopping.is_set():  # stop arrived between the loop test and here
                    receive_scope.cancel()
                delivery = await self.transport.receive()
            if delivery is None:
                return  # stop requested while idle
            await self.handle(delivery)
            await self.run_pulled()

    async def run_pulled(self) -> None:
        """While this slot is free, claim and run the fairest due task the gate allows.

        A database error ends the pulling (logged); the next command or freed slot tries
        again, and the reconciler's re-send of a stale command remains the backstop."""
        while not self.stopping.is_set():
            try:
                task = await self.gate.claim_next(self.local)
            except TransientDatabaseError as exc:
                log.warning("%s: claiming the next due task failed (%s)", self.name, exc)
                return
            except Exception:
                log.exception("%s: claiming the next due task failed", self.name)
                return
            if task is None:
                return
            log.info(
                "task %s v%d claimed from the queue by %s (fair share)",
                task.id,
                task.dispatch_version,
                self.name,
            )
            try:
                await self.execute(task)
            finally:
                self.local.release(task.id)

    def stop_receiving(self) -> None:
        """Stop waiting for new commands; a running export continues (§14)."""
        scope = getattr(self, "_receive_scope", None)
        if scope is not None:
            scope.cancel()

    async def handle(self, delivery: Delivery) -> None:
        """Decode, claim, ack, then run and settle a claimed export."""
        try:
            command = Command.from_json(delivery.body)
        except CommandDecodeError as exc:
            log.error(
                "undecodable command (message %s, reconsume %d): %s",
                delivery.message_id,
                delivery.reconsume_times,
                exc,
            )
            await delivery.reject()  # the only unacked path: ends in the DLQ (§6.4)
            return
        with bind_context(
            eventId=command.event_id,
            taskId=str(command.task_id),
            dispatchVersion=command.dispatch_version,
            exportType=command.export_type,
            traceId=command.trace_id or None,
        ):
            await self._handle_command(command, delivery)

    async def _handle_command(self, command: Command, delivery: Delivery) -> None:
        if not self.local.take(command.task_id):
            # Another slot of this process is claiming or running this task: a duplicate.
            await delivery.ack()
            self.metrics.consumer_no_claim.labels(NoClaim.RUNNING_ELSEWHERE.value).inc()
            log.info(
                "task %s v%d already held by another slot",
                command.task_id,
                command.dispatch_version,
            )
            return
        try:
            await self._claim_and_run(command, delivery)
        finally:
            self.local.release(command.task_id)

    async def _claim_and_run(self, command: Command, delivery: Delivery) -> None:
        try:
            claim = await self.gate.claim_commanded(command)
        except Exception as exc:
            # Not a poison message: never let it reach the DLQ. Ack; if the task stays
            # PENDING the reconciler re-sends the same version (§8.5-1 case B).
            if isinstance(exc, TransientDatabaseError):
                log.warning(
                    "claim of task %s failed (%s); acking, the reconciler will redispatch",
                    command.task_id,
                    exc,
                )
            else:
                log.exception(
                    "claim of task %s failed; acking, the reconciler will redispatch",
                    command.task_id,
                )
            await delivery.ack()
            return
        await delivery.ack()  # ack early: right after the claim committed (DESIGN §3)
        if claim.task is None:
            assert claim.no_claim is not None
            self.metrics.consumer_no_claim.labels(claim.no_claim.value).inc()
            level = logging.WARNING if claim.no_claim == "task_missing" else logging.INFO
            log.log(
                level,
                "task %s v%d not claimed: %s",
                command.task_id,
                command.dispatch_version,
                claim.no_claim.value,
            )
            return
        await self.execute(claim.task, command.trace_id)

    async def execute(self, task: Task, command_trace_id: str | None = None) -> None:
        """Run a claimed task under its watchdog and settle the outcome.

        Every log line of the run carries the task's identifiers and its trace id (the
        task's; for a task created before trace ids were stored, the command's or a new
        one: ``actors.core.tracing.run_trace_id``).
        """
        task = replace(task, trace_id=run_trace_id(task.trace_id, command_trace_id))
        with bind_context(
            taskId=str(task.id),
            dispatchVersion=task.dispatch_version,
            exportType=task.export_type,
            tenantId=str(task.tenant_id),
            traceId=task.trace_id,
        ):
            await self._execute(task)

    async def _execute(self, task: Task) -> None:
        ctx = RunContext(task, self.owner, lease_renewed_at=trio.current_time())
        self.current = ctx
        self.local.track_run(task.id, ctx.wake_for_cancel)
        started = trio.current_time()
        log.info(
            "task %s v%d attempt %d started", task.id, task.dispatch_version, task.attempt_count
        )
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._watchdog, ctx)
                nursery.start_soon(self._deadline_guard, ctx)
                await self._run_and_settle(ctx)
                nursery.cancel_scope.cancel()
        finally:
            self.local.untrack_run(task.id)
            self.current = None
            self.metrics.task_duration.labels(task.export_type).observe(
                trio.current_time() - started
            )

    async def _run_and_settle(self, ctx: RunContext) -> None:
        result: ExportResult | None = None
        error: BaseException | None = None
        with ctx.scope:
            try:
                result = await self.pipeline(ctx)
            except Exception as exc:
                error = run_failure(exc)  # every class of the error tree, a bug as transient
                if isinstance(exc, DatabaseError):  # the database, not the export, failed
                    log.warning("task %s: database error during the run: %s", ctx.task.id, exc)
                elif not isinstance(exc, ExportError):
                    log.exception("task %s: unexpected error in the export pipeline", ctx.task.id)
        if ctx.abort_reason is not None:
            error = abort_error(ctx.abort_reason, self.settings.max_duration_minutes)
            result = None
        settlement = self._settlement(
            ending_of(
                finished=result is not None,
                error=error,
                abort_reason=ctx.abort_reason,
                database_fault=isinstance(error, TransientDatabaseError),
            ),
            ctx.task,
        )
        if settlement.write == Write.COMPLETE:
            assert result is not None
            await self._commit(ctx, result, settlement)
        else:
            assert error is not None
            await self._settle_failure(ctx, error, settlement)

    def _settlement(self, ending: Ending, task: Task) -> Settlement:
        return settle(
            ending,
            attempt_count=task.attempt_count,
            max_attempts=task.max_attempts,
            heartbeat_seconds=self.settings.task_heartbeat_seconds,
        )

    async def _settle(
        self, ctx: RunContext, what: str, write: Callable[[], Awaitable[T]], *, margin: float
    ) -> T | Unsettled:
        """Run one settling write until it lands, or until ``margin`` seconds before the
        lease runs out (counted from the last renewal the watchdog, still running, got
        through). A database fault is retried (the store backs off inside each call); any
        other error is a bug that no retry cures and ends the wait at once.

        Returns:
            The write's answer, or ``Unsettled`` with the last error. Then the outcome is
            unknown to this slot: it may even have landed (a lost COMMIT), so the caller
            must not act as if it had failed — the reconciler recovers the lease.
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
                    "task %s v%d: recording %s failed", task.id, task.dispatch_version, what
                )
                return Unsettled(exc)
            else:
                if answer:
                    return answer[0]
                break  # the margin passed while the write was in flight
            if not warned:
                warned = True
                log.warning(
                    "task %s v%d: could not record %s yet (%s); retrying until the lease margin",
                    task.id,
                    task.dispatch_version,
                    what,
                    last,
                )
            if left() > 0:
                await trio.sleep(lease.settle_retry_pause(left()))
        error = last or TimeoutError("the lease margin passed while the database was busy")
        log.warning(
            "task %s v%d: %s not recorded before the lease margin (%s); leaving the task "
            "to the reconciler",
            task.id,
            task.dispatch_version,
            what,
            error,
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

    def _note_unsettled(self, ctx: RunContext, cause: str, unsettled: Unsettled) -> None:
        self.local.note_unsettled(
            ctx.task.id,
            ctx.task.dispatch_version,
            f"{cause} (could not be recorded: {unsettled.error})",
        )

    async def _commit(self, ctx: RunContext, result: ExportResult, settlement: Settlement) -> None:
        task = ctx.task
        assert settlement.write == Write.COMPLETE and settlement.margin is not None
        assert settlement.file == FileFate.KEEP
        margin = settlement.margin
        ok = await self._settle(
            ctx,
            "the result",
            lambda: self.store.complete_task(
                task,
                self.owner,
                file_name=result.file_name,
                object_key=result.object_key,
                content_type=result.content_type,
                size_bytes=result.size_bytes,
                rows=result.rows,
                total_rows=result.total_rows,
                warnings=result.warnings,
                retention_seconds=self.settings.retention_days * 86400,
            ),
            margin=margin,
        )
        if isinstance(ok, Unsettled):
            # The commit may have landed: keep the file. If it did not, lease recovery
            # deletes it (its key was recorded before the first byte).
            self._note_unsettled(
                ctx, f"the export finished ({result.rows} rows) but its result was not saved", ok
            )
            return
        if ok:
            self.metrics.task_completed.labels(task.export_type, "SUCCEEDED").inc()
            log.info(
                "task %s v%d SUCCEEDED: %d rows, %d bytes",
                task.id,
                task.dispatch_version,
                result.rows,
                result.size_bytes,
            )
            return
        # Lost commit (§8.4): the file is an orphan; delete it, then see why.
        await self._delete_file(ctx)
        past_deadline = await self._settle(
            ctx,
            "the deadline check",
            lambda: self.store.own_run_past_deadline(task, self.owner),
            margin=margin,
        )
        lost = settle_lost_commit(
            past_deadline if isinstance(past_deadline, bool) else None,
            attempt_count=task.attempt_count,
            max_attempts=task.max_attempts,
            heartbeat_seconds=self.settings.task_heartbeat_seconds,
        )
        if lost.write == Write.SCHEDULE_RETRY:
            error = DeadlineExceededError(deadline_message(self.settings.max_duration_minutes))
            await self._reschedule(ctx, error, lost)
        else:
            log.warning(
                "task %s v%d: final commit lost (version, owner or status changed); file deleted",
                task.id,
                task.dispatch_version,
            )

    async def _settle_failure(
        self, ctx: RunContext, error: BaseException, settlement: Settlement
    ) -> None:
        """Carry out the settlement of a run that produced no file."""
        task = ctx.task
        if settlement.file == FileFate.DELETE:
            await self._delete_file(ctx)
        if settlement.write == Write.RELEASE_SHIELDED:
            # Hand the task back now instead of letting the lease run out (§14); the
            # shield lets this one write finish even as the process winds down.
            with trio.CancelScope(shield=True), trio.move_on_after(SHUTDOWN_RELEASE_SECONDS):
                try:
                    released = await self.store.release_lease(task, self.owner)
                except TransientDatabaseError as exc:
                    log.warning(
                        "task %s v%d interrupted by shutdown; could not hand it back (%s): "
                        "its lease will expire",
                        task.id,
                        task.dispatch_version,
                        exc,
                    )
                    return
                log.warning(
                    "task %s v%d interrupted by shutdown; %s",
                    task.id,
                    task.dispatch_version,
                    "handed back as a new version" if released else "lease already lost",
                )
            return
        if settlement.write == Write.NOTHING:
            # A user's cancel is an outcome, not a fault: INFO. A lost lease stays a WARNING.
            level = logging.INFO if ctx.abort_reason == AbortReason.CANCELLED else logging.WARNING
            log.log(
                level,
                "task %s v%d aborted: %s; nothing written",
                task.id,
                task.dispatch_version,
                error,
            )
            return
        assert settlement.margin is not None
        if settlement.write == Write.HAND_BACK:
            # The database, not the export, stopped the run: hand the task back without
            # counting the attempt if the database answers before the margin; else the
            # reconciler recovers it, told why.
            cause = (
                "its lease could not be renewed"
                if settlement.ending == Ending.WATCHDOG_FAILED
                else f"the database was unavailable during the run ({error})"
            )
            await self._hand_back(ctx, cause, margin=settlement.margin)
            return
        if settlement.write == Write.FAIL:
            failed = await self._settle(
                ctx,
                "the failure",
                lambda: self.store.fail_task(task, self.owner, str(error), error_class(error)),
                margin=settlement.margin,
            )
            if isinstance(failed, Unsettled):
                self._note_unsettled(ctx, str(error), failed)
            elif failed:
                self.metrics.task_completed.labels(task.export_type, "FAILED").inc()
                log.warning("task %s v%d FAILED: %s", task.id, task.dispatch_version, error)
            return
        await self._reschedule(ctx, error, settlement)

    async def _hand_back(self, ctx: RunContext, cause: str, *, margin: float) -> None:
        """PENDING at a new version with the attempt not counted (``release_lease``): the
        run was ended by the database, which is no fault of the export."""
        task = ctx.task
        released = await self._settle(
            ctx,
            "the hand-back",
            lambda: self.store.release_lease(task, self.owner),
            margin=margin,
        )
        if isinstance(released, Unsettled):
            self._note_unsettled(ctx, f"the run stopped because {cause}", released)
            return
        log.warning(
            "task %s v%d stopped because %s; %s",
            task.id,
            task.dispatch_version,
            cause,
            "handed back as a new version, attempt not counted"
            if released
            else "lease already lost",
        )

    async def _reschedule(
        self, ctx: RunContext, error: BaseException, settlement: Settlement
    ) -> None:
        task = ctx.task
        assert settlement.write == Write.SCHEDULE_RETRY and settlement.margin is not None
        # attempt_count was incremented by the claim: it counts the failed attempt.
        delay = retry_backoff(task.attempt_count, self.rand(), self.settings.retry_backoff_seconds)
        outcome = await self._settle(
            ctx,
            "the retry",
            lambda: self.store.schedule_retry(
                task, self.owner, str(error), delay, error_class(error)
            ),
            margin=settlement.margin,
        )
        if isinstance(outcome, Unsettled):
            self._note_unsettled(ctx, str(error), outcome)
            return
        if outcome == RetryOutcome.FAILED:
            self.metrics.task_completed.labels(task.export_type, "FAILED").inc()
            log.warning(
                "task %s v%d FAILED after %d attempts: %s",
                task.id,
                task.dispatch_version,
                task.attempt_count,
                error,
            )
        elif outcome == RetryOutcome.SCHEDULED:
            log.warning(
                "task %s v%d transient failure (%s); retry v%d in %.0fs",
                task.id,
                task.dispatch_version,
                error,
                task.dispatch_version + 1,
                delay,
            )
        else:
            log.warning(
                "task %s v%d: retry not recorded, lease already lost",
                task.id,
                task.dispatch_version,
            )

    async def _delete_file(self, ctx: RunContext) -> None:
        if ctx.object_key is None:
            return
        try:
            await self.storage.delete(ctx.object_key)
        except Exception:
            # §9.5: a failed delete is only a WARN; the orphan scan removes it later.
            log.warning("could not delete %s; the orphan scan will", ctx.object_key, exc_info=True)

    async def _watchdog(self, ctx: RunContext) -> None:
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
                    log.warning("task %s: lease renewal failed: %s", ctx.task.id, exc)
                except Exception as exc:
                    failure = exc
                    log.exception("task %s: lease renewal failed", ctx.task.id)
            step = lease.after_renewal(renewed, trio.current_time(), abort_at, heartbeat)
            if step == WatchdogStep.KEEP_TRYING:
                continue
            if step == WatchdogStep.ABORT_UNRENEWED:
                log.warning(
                    "task %s v%d: no lease renewal for %.0fs (%s); aborting the run",
                    ctx.task.id,
                    ctx.task.dispatch_version,
                    trio.current_time() - ctx.lease_renewed_at,
                    failure or "renewal still in flight",
                )
                ctx.abort(AbortReason.WATCHDOG_FAILED)
                return
            if step == WatchdogStep.LOST:
                # Lease lost, version bumped, or the deadline passed (§8.3.1 folds the
                # deadline into the renewal); tell the two apart for the settle step.
                if ctx.cancel_requested:
                    log.info(
                        "task %s v%d cancelled; aborting the run",
                        ctx.task.id,
                        ctx.task.dispatch_version,
                    )
                    ctx.abort(AbortReason.CANCELLED)
                    return
                try:
                    past_deadline = await self.store.own_run_past_deadline(ctx.task, self.owner)
                except TransientDatabaseError:
                    past_deadline = False  # cannot tell: treat as lost, write nothing
                log.warning(
                    "task %s v%d: lease renewal matched 0 rows (%s); aborting run",
                    ctx.task.id,
                    ctx.task.dispatch_version,
                    "deadline passed" if past_deadline else "lease lost or task cancelled",
                )
                ctx.abort(AbortReason.DEADLINE if past_deadline else AbortReason.LEASE_LOST)
                return
            ctx.lease_renewed_at = trio.current_time()

    async def _deadline_guard(self, ctx: RunContext) -> None:
        """Abort when the run reaches its deadline (§8.3.1).

        The deadline was computed by the DB clock at claim; here it becomes a duration on
        trio's monotonic clock, so instance clock skew cannot move it. The fenced final
        commit re-checks it by DB time, so this guard only makes the abort prompt."""
        delay = lease.deadline_delay(ctx.task.started_at, ctx.task.execution_deadline_at)
        if delay is None:
            return
        await trio.sleep(delay)
        ctx.abort(AbortReason.DEADLINE)
