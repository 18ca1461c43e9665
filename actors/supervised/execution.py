"""Executing one claimed task (§8.3, §8.4): run the export under its lease, then settle.

A consumer slot (``actors/supervised/consumer.py``) hands each task it has claimed to its
:class:`TaskExecutor`, which returns once the run is settled:

1. Run the export in a per-run nursery beside the **lease watchdog**, which renews the
   lease every ``heartbeat`` seconds (§8.3), and the **deadline guard** (§8.3.1), both
   in ``actors/supervised/lease_keeper.py``. Either one aborts the run by cancelling its scope — a
   structured abort: the cancel kills the run's export worker process
   (``actors/pipeline/worker/handle.py``) before the executor settles. A lost lease, the
   deadline, a user's cancel and a shutdown hand-back all end a run this one way.
2. Settle: commit fenced by version, owner, status and deadline (§8.4); on failure delete
   the file and fail or reschedule by error class (§9.1, §9.2). A lost lease writes
   nothing (invariant 8). The decision is ``actors/core/settlement.py``; this module
   carries it out.

Database blips cost no attempt and crash nothing. Every settling write (success, retry,
failure, hand-back) is retried until it lands or the lease margin is reached
(``LeaseKeeper.settle_write``) — then the executor gives up with a WARNING, notes the real
cause for the reconciler (``LocalClaims``) and keeps the file, which a landed commit may
reference. A database error that escapes the run itself (the store gave up on a write it
needed) hands the task back without counting the attempt, as a shutdown does.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Awaitable, Callable
from dataclasses import replace

import trio

from actors.core.backoff import retry_backoff
from actors.core.errors import (
    DatabaseError,
    DeadlineExceededError,
    ExportError,
    TransientDatabaseError,
    run_failure,
)
from actors.core.events import error_class
from actors.core.handback import HandBack, HandBackCause, HandBackFate
from actors.core.log_context import bind_context, task_fields
from actors.core.models import Task
from actors.core.outcomes import AbortReason, ExportResult, RetryOutcome
from actors.core.ports.storage import ExportStorage
from actors.core.ports.store import ExecutionStore
from actors.core.settlement import (
    SHUTDOWN_RELEASE_SECONDS,
    Ending,
    FileFate,
    Settlement,
    Write,
    abort_error,
    deadline_message,
    ending_of,
    hand_back_cause,
    settle,
    settle_lost_commit,
)
from actors.core.tracing import run_trace_id
from actors.pipeline.attempt import RunContext, RunFile
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.supervised.lease_keeper import LeaseKeeper, Unsettled
from actors.supervised.local_claims import LocalClaims

# The run's lines keep the logger they have always had, whichever module writes them:
# operators and tests select a run's lines by it.
log = logging.getLogger(__name__)

#: The pipeline: given a run context, produce the file or raise an ExportError.
Pipeline = Callable[[RunContext], Awaitable[ExportResult]]


class TaskExecutor:
    """Executes the tasks one consumer slot claims, one at a time.

    Args:
        store: the store; the lease and the settling writes, all fenced.
        storage: where the run's file is (deleted when the run produced none).
        settings: lease, heartbeat, deadline, back-off and retention settings.
        metrics: ``export_task_completed_total``, ``export_task_duration_seconds``.
        pipeline: the export body (``actors.pipeline.runner``); injectable so watchdog
            tests can drive a run with trio's mock clock.
        local: what this process's slots hold: the run registers its cancel wake-up
            there, and notes why a run ended when its outcome could not be written.
        rand: uniform [0, 1) source for retry jitter.
    """

    def __init__(
        self,
        store: ExecutionStore,
        storage: ExportStorage,
        settings: Settings,
        metrics: Metrics,
        pipeline: Pipeline,
        local: LocalClaims,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.store = store
        self.storage = storage
        self.settings = settings
        self.metrics = metrics
        self.pipeline = pipeline
        self.local = local
        self.rand = rand
        self.owner = settings.instance_id
        self.lease = LeaseKeeper(store, settings, self.owner)
        #: The run in progress, if any: the runtime aborts it at shutdown (§14).
        self.current: RunContext | None = None

    async def execute(self, task: Task, command_trace_id: str | None = None) -> None:
        """Run a claimed task under its watchdog and settle the outcome.

        Every log line of the run carries the task's identifiers and its trace id (the
        task's; for a task created before trace ids were stored, the command's or a new
        one: ``actors.core.tracing.run_trace_id``).

        Args:
            task: the task as this instance claimed it (RUNNING at its
                ``dispatch_version`` under this instance's lease).
            command_trace_id: the ``traceId`` of the command that led to the claim, if
                any (a task pulled from the queue has none).

        Returns once the outcome is settled, or left to the reconciler when it could not
        be written before the lease margin.
        """
        task = replace(task, trace_id=run_trace_id(task.trace_id, command_trace_id, os.urandom))
        with bind_context(
            taskId=str(task.id),
            dispatchVersion=task.dispatch_version,
            exportType=task.export_type,
            tenantId=str(task.tenant_id),
            traceId=task.trace_id,
        ):
            await self._execute(task)

    async def _execute(self, task: Task) -> None:
        ctx = RunContext(
            task,
            self.owner,
            RunFile(task, self.owner, self.store, self.storage),
            lease_renewed_at=trio.current_time(),
        )
        self.current = ctx
        self.local.track_run(task.id, ctx.wake_for_cancel)
        started = trio.current_time()
        log.info(
            "attempt started",
            extra=task_fields(task.id, task.dispatch_version, attempt=task.attempt_count),
        )
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self.lease.watchdog, ctx)
                nursery.start_soon(self.lease.deadline_guard, ctx)
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
                    log.warning(
                        "database error during the run",
                        extra=task_fields(ctx.task.id, ctx.task.dispatch_version, error=str(exc)),
                    )
                elif not isinstance(exc, ExportError):
                    log.exception(
                        "unexpected error in the export pipeline",
                        extra=task_fields(ctx.task.id, ctx.task.dispatch_version),
                    )
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
        ok = await self.lease.settle_write(
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
                "task succeeded",
                extra=task_fields(
                    task.id, task.dispatch_version, rows=result.rows, bytes=result.size_bytes
                ),
            )
            return
        # Lost commit (§8.4): the file is an orphan; delete it, then see why.
        await ctx.file.discard()
        past_deadline = await self.lease.settle_write(
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
                "final commit lost (version, owner or status changed); file deleted",
                extra=task_fields(task.id, task.dispatch_version),
            )

    async def _settle_failure(
        self, ctx: RunContext, error: BaseException, settlement: Settlement
    ) -> None:
        """Carry out the settlement of a run that produced no file."""
        task = ctx.task
        if settlement.file == FileFate.DELETE:
            await ctx.file.discard()
        if settlement.write == Write.RELEASE_SHIELDED:
            # Hand the task back now instead of letting the lease run out (§14); the
            # shield lets this one write finish even as the process winds down.
            with trio.CancelScope(shield=True), trio.move_on_after(SHUTDOWN_RELEASE_SECONDS):
                try:
                    handed = await self.store.release_lease(
                        task,
                        self.owner,
                        cause=HandBackCause.SHUTDOWN,
                        max_handbacks=self.settings.max_handbacks,
                    )
                except TransientDatabaseError as exc:
                    log.warning(
                        "interrupted by shutdown; could not hand the task back, its lease "
                        "will expire",
                        extra=task_fields(task.id, task.dispatch_version, error=str(exc)),
                    )
                    return
                self._handed_back(ctx, "interrupted by shutdown", handed)
            return
        if settlement.write == Write.NOTHING:
            # A user's cancel is an outcome, not a fault: INFO. A lost lease stays a WARNING.
            level = logging.INFO if ctx.abort_reason == AbortReason.CANCELLED else logging.WARNING
            log.log(
                level,
                "run aborted; nothing written",
                extra=task_fields(task.id, task.dispatch_version, reason=str(error)),
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
            await self._hand_back(
                ctx, hand_back_cause(settlement.ending), cause, margin=settlement.margin
            )
            return
        if settlement.write == Write.FAIL:
            failed = await self.lease.settle_write(
                ctx,
                "the failure",
                lambda: self.store.fail_task(task, self.owner, str(error), error_class(error)),
                margin=settlement.margin,
            )
            if isinstance(failed, Unsettled):
                self._note_unsettled(ctx, str(error), failed)
            elif failed:
                self.metrics.task_completed.labels(task.export_type, "FAILED").inc()
                log.warning(
                    "task failed",
                    extra=task_fields(task.id, task.dispatch_version, error=str(error)),
                )
            return
        await self._reschedule(ctx, error, settlement)

    async def _hand_back(
        self, ctx: RunContext, kind: HandBackCause, cause: str, *, margin: float
    ) -> None:
        """PENDING at a new version with the attempt not counted (``release_lease``): the
        run was ended by the database, which is no fault of the export. Past
        ``FILE_EXPORT_MAX_HANDBACKS`` in a row the attempt counts (the store decides)."""
        task = ctx.task
        handed = await self.lease.settle_write(
            ctx,
            "the hand-back",
            lambda: self.store.release_lease(
                task, self.owner, cause=kind, max_handbacks=self.settings.max_handbacks
            ),
            margin=margin,
        )
        if isinstance(handed, Unsettled):
            self._note_unsettled(ctx, f"the run stopped because {cause}", handed)
            return
        self._handed_back(ctx, f"stopped because {cause}", handed)

    def _handed_back(self, ctx: RunContext, why: str, handed: HandBack | None) -> None:
        """Log (and count, when it ended the task) a hand-back the store carried out."""
        task = ctx.task
        if handed is None:
            log.warning(
                "run ended; lease already lost",
                extra=task_fields(task.id, task.dispatch_version, reason=why),
            )
        elif handed.fate == HandBackFate.REFUNDED:
            log.warning(
                "task handed back as a new version, attempt not counted",
                extra=task_fields(
                    task.id, task.dispatch_version, reason=why, inARow=handed.in_a_row
                ),
            )
        elif handed.fate == HandBackFate.COUNTED:
            log.warning(
                "task handed back as a new version",
                extra=task_fields(task.id, task.dispatch_version, reason=why, error=handed.message),
            )
        else:
            self.metrics.task_completed.labels(task.export_type, "FAILED").inc()
            log.warning(
                "task failed",
                extra=task_fields(task.id, task.dispatch_version, reason=why, error=handed.message),
            )

    async def _reschedule(
        self, ctx: RunContext, error: BaseException, settlement: Settlement
    ) -> None:
        task = ctx.task
        assert settlement.write == Write.SCHEDULE_RETRY and settlement.margin is not None
        # attempt_count was incremented by the claim: it counts the failed attempt.
        delay = retry_backoff(task.attempt_count, self.rand(), self.settings.retry_backoff_seconds)
        outcome = await self.lease.settle_write(
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
                "task failed after its last attempt",
                extra=task_fields(
                    task.id, task.dispatch_version, attempt=task.attempt_count, error=str(error)
                ),
            )
        elif outcome == RetryOutcome.SCHEDULED:
            log.warning(
                "transient failure; retry scheduled",
                extra=task_fields(
                    task.id,
                    task.dispatch_version,
                    error=str(error),
                    nextVersion=task.dispatch_version + 1,
                    retryInSeconds=round(delay),
                ),
            )
        else:
            log.warning(
                "retry not recorded; lease already lost",
                extra=task_fields(task.id, task.dispatch_version),
            )
