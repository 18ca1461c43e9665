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
   run by cancelling its scope — a structured abort — and sets a thread-safe flag so a
   worker thread writing the XLSX stops at its next write.
4. Settle: commit fenced by version, owner, status and deadline (§8.4); on failure delete
   the file and fail or reschedule by error class (§9.1, §9.2). A lost lease writes
   nothing (invariant 8).

Before waiting for the next command, a slot that has become free *pulls*: it claims the
fairest due PENDING task from the database (``ClaimGate.claim_next``) and runs it, until
nothing may run here. That is how deferred tasks run as soon as a slot frees, and why a
deferral never leaves a slot idle while someone else's task waits.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable

import trio

from actors.claim_gate import ClaimGate
from actors.config import Settings
from actors.core.backoff import retry_backoff
from actors.core.errors import (
    CommandDecodeError,
    DeadlineExceededError,
    ExportAbortedError,
    ExportError,
    PermanentExportError,
    TransientExportError,
)
from actors.core.models import Command, Task
from actors.metrics import Metrics
from actors.pipeline.context import AbortReason, ExportResult, RunContext
from actors.pipeline.storage import ExportStorage
from actors.transport.base import CommandTransport, Delivery
from db.store import ExportStore, RetryOutcome

log = logging.getLogger("actors.consumer")


#: The pipeline: given a run context, produce the file or raise an ExportError.
Pipeline = Callable[[RunContext], Awaitable[ExportResult]]


class ConsumerSlot:
    """One of ``FILE_EXPORT_CONSUMER_CONCURRENCY`` slots.

    Args:
        pipeline: the export body (``actors.pipeline.runner``); injectable so watchdog
            tests can drive a run with trio's mock clock.
        stopping: set when the process stops taking commands (SIGTERM, §14).
        rand: uniform [0, 1) source for retry jitter.
        gate: the claim gate shared by all slots of this instance (fair share); a slot
            built without one gets its own, which applies the rules without the shared
            lock (tests of a single slot).
    """

    def __init__(
        self,
        name: str,
        store: ExportStore,
        transport: CommandTransport,
        storage: ExportStorage,
        settings: Settings,
        metrics: Metrics,
        pipeline: Pipeline,
        stopping: trio.Event,
        rand: Callable[[], float] = random.random,
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
                task = await self.gate.claim_next()
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
            await self.execute(task)

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
        try:
            claim = await self.gate.claim_commanded(command)
        except Exception:
            # Not a poison message: never let it reach the DLQ. Ack; if the task stays
            # PENDING the reconciler re-sends the same version (§8.5-1 case B).
            log.exception(
                "claim of task %s failed; acking, the reconciler will redispatch", command.task_id
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
        await self.execute(claim.task)

    async def execute(self, task: Task) -> None:
        """Run a claimed task under its watchdog and settle the outcome."""
        ctx = RunContext(task, self.owner)
        self.current = ctx
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
            except ExportError as exc:
                error = exc
            except Exception as exc:  # a bug must not strand the task: treat as transient
                log.exception("task %s: unexpected error in the export pipeline", ctx.task.id)
                error = TransientExportError(f"internal error: {type(exc).__name__}: {exc}")
        if ctx.abort_reason is not None:
            error = self._abort_error(ctx.abort_reason)
            result = None
        if result is not None:
            await self._commit(ctx, result)
        else:
            assert error is not None
            await self._settle_failure(ctx, error)

    def _abort_error(self, reason: AbortReason) -> ExportError:
        if reason == AbortReason.DEADLINE:
            return DeadlineExceededError(self._deadline_message())
        return ExportAbortedError(f"export aborted: {reason.value}")

    def _deadline_message(self) -> str:
        minutes = self.settings.max_duration_minutes
        unit = "minute" if minutes == 1 else "minutes"
        return f"execution exceeded the maximum duration of {minutes:g} {unit}"

    async def _commit(self, ctx: RunContext, result: ExportResult) -> None:
        task = ctx.task
        ok = await self.store.complete_task(
            task,
            self.owner,
            file_name=result.file_name,
            object_key=result.object_key,
            content_type=result.content_type,
            size_bytes=result.size_bytes,
            rows=result.rows,
            retention_seconds=self.settings.retention_days * 86400,
        )
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
        if await self.store.own_run_past_deadline(task, self.owner):
            await self._reschedule(ctx, DeadlineExceededError(self._deadline_message()))
        else:
            log.warning(
                "task %s v%d: final commit lost (version, owner or status changed); file deleted",
                task.id,
                task.dispatch_version,
            )

    async def _settle_failure(self, ctx: RunContext, error: BaseException) -> None:
        task = ctx.task
        await self._delete_file(ctx)
        if isinstance(error, ExportAbortedError):
            if ctx.abort_reason == AbortReason.SHUTDOWN:
                # Hand the task back now instead of letting the lease run out (§14); the
                # shield lets this one write finish even as the process winds down.
                with trio.CancelScope(shield=True), trio.move_on_after(10):
                    released = await self.store.release_lease(task, self.owner)
                    log.warning(
                        "task %s v%d interrupted by shutdown; %s",
                        task.id,
                        task.dispatch_version,
                        "handed back as a new version" if released else "lease already lost",
                    )
                return
            log.warning(
                "task %s v%d aborted: %s; nothing written", task.id, task.dispatch_version, error
            )
            return
        if isinstance(error, PermanentExportError):
            if await self.store.fail_task(task, self.owner, str(error)):
                self.metrics.task_completed.labels(task.export_type, "FAILED").inc()
                log.warning("task %s v%d FAILED: %s", task.id, task.dispatch_version, error)
            return
        await self._reschedule(ctx, error)

    async def _reschedule(self, ctx: RunContext, error: BaseException) -> None:
        task = ctx.task
        # attempt_count was incremented by the claim: it counts the failed attempt.
        delay = retry_backoff(task.attempt_count, self.rand(), self.settings.retry_backoff_seconds)
        outcome = await self.store.schedule_retry(task, self.owner, str(error), delay)
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
        lease = self.settings.task_lease_seconds
        last_ok = trio.current_time()
        while True:
            await trio.sleep(heartbeat)
            try:
                renewed = await self.store.renew_lease(ctx.task, self.owner, lease)
            except Exception:
                log.exception("task %s: lease renewal failed", ctx.task.id)
                if trio.current_time() - last_ok + heartbeat >= lease:
                    ctx.abort(AbortReason.WATCHDOG_FAILED)
                    return
                continue
            if not renewed:
                # Lease lost, version bumped, or the deadline passed (§8.3.1 folds the
                # deadline into the renewal); tell the two apart for the settle step.
                past_deadline = await self.store.own_run_past_deadline(ctx.task, self.owner)
                log.warning(
                    "task %s v%d: lease renewal matched 0 rows (%s); aborting run",
                    ctx.task.id,
                    ctx.task.dispatch_version,
                    "deadline passed" if past_deadline else "lease lost",
                )
                ctx.abort(AbortReason.DEADLINE if past_deadline else AbortReason.LEASE_LOST)
                return
            last_ok = trio.current_time()

    async def _deadline_guard(self, ctx: RunContext) -> None:
        """Abort when the run reaches its deadline (§8.3.1).

        The deadline was computed by the DB clock at claim; here it becomes a duration on
        trio's monotonic clock, so instance clock skew cannot move it. The fenced final
        commit re-checks it by DB time, so this guard only makes the abort prompt."""
        task = ctx.task
        if task.execution_deadline_at is None or task.started_at is None:
            return
        remaining = (task.execution_deadline_at - task.started_at).total_seconds()
        await trio.sleep(max(0.0, remaining))
        ctx.abort(AbortReason.DEADLINE)
