"""Transitions that settle a run, as ``actors.core.settlement`` decides and
``actors/supervised/execution.py`` carries it out: complete (the final commit, §8.4), fail
(§9.1), schedule a retry (§9.2) or hand back (``actors.core.handback``). Each is fenced by
id, version, owner and status, and says why re-running it after a lost COMMIT gives the
same answer.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from actors.core.backoff import should_retry
from actors.core.command_message import Command
from actors.core.data_warning import DataWarning, warnings_to_json
from actors.core.events import MAX_TASK_EVENTS, TaskEventKind
from actors.core.handback import (
    DEFAULT_MAX_HANDBACKS,
    HandBack,
    HandBackCause,
    HandBackFate,
    decide_hand_back,
    hand_back_message,
)
from actors.core.messages import failure_code
from actors.core.models import Task, TaskStatus
from actors.core.outcomes import RetryOutcome
from db.store.base import StoreBase, fenced
from db.store.retry import retrying


class SettlementTransitions(StoreBase):
    """End one attempt: SUCCEEDED, FAILED, PENDING at a new version (§8.4, §9.1, §9.2)."""

    @retrying
    async def complete_task(
        self,
        task: Task,
        owner: str,
        *,
        file_name: str,
        object_key: str,
        content_type: str,
        size_bytes: int,
        rows: int,
        retention_seconds: float,
        total_rows: int | None = None,
        warnings: Sequence[DataWarning] = (),
    ) -> bool:
        """§8.4 final commit, fenced by version, owner, status and deadline. False means
        the caller must delete its file.

        ``warnings`` (the run's data warnings, each with its kind) are stored with the
        SUCCEEDED status in the same fenced statement, as JSON
        (:func:`~actors.core.data_warning.warnings_to_json`; ``NULL`` when none).

        ``rows`` becomes ``processed_rows``; ``total_rows`` (default: ``rows``) keeps a
        Provider's announced figure when fewer rows came than it announced (§10.2).

        Re-run: a commit that landed before its answer was lost makes the fenced update
        match 0 rows the second time — and the caller would then delete the file a
        SUCCEEDED task references. So a 0-row answer re-reads the task: SUCCEEDED at this
        version with *this* ``object_key`` (a fresh key per attempt, so no one else's)
        means the commit is ours, and the answer is True."""
        async with self.db.transaction() as tx:
            if await fenced(
                tx,
                self._sql.COMPLETE_TASK,
                {
                    **self._fence(task, owner),
                    "file_name": file_name,
                    "object_key": object_key,
                    "content_type": content_type,
                    "size_bytes": size_bytes,
                    "total_rows": rows if total_rows is None else total_rows,
                    "processed_rows": rows,
                    "retention_seconds": retention_seconds,
                    "warnings_json": warnings_to_json(warnings),
                },
            ):
                done = await tx.fetchone(self._sql.GET_TASK, {"id": task.id})
                assert done is not None
                started = self.db.dialect.to_datetime(done["started_at"])
                ended = self.db.dialect.to_datetime(done["completed_at"])
                await self._record(
                    tx,
                    task.id,
                    TaskEventKind.SUCCEEDED,
                    version=task.dispatch_version,
                    rows=rows,
                    bytes=size_bytes,
                    seconds=(
                        round((ended - started).total_seconds(), 3)
                        if started is not None and ended is not None
                        else None
                    ),
                )
                return True
            return await self._now_in(tx, task, TaskStatus.SUCCEEDED, object_key=object_key)

    @retrying
    async def fail_task(
        self, task: Task, owner: str, failure_message: str, error_class: str | None = None
    ) -> bool:
        """Permanent failure (§9.1): FAILED at once, fenced. True if this call failed it.

        Re-run: after a commit that landed, the update matches 0 rows; the re-read finds
        the task FAILED at this version with exactly this message (the reconciler and the
        DLQ handler write messages of their own), so the answer is True again."""
        message = failure_message[:1000]
        async with self.db.transaction() as tx:
            failure = {"failure_message": message, "failure_code": failure_code(error_class)}
            if await fenced(tx, self._sql.FAIL_TASK, {**self._fence(task, owner), **failure}):
                await self._attempt_failed(tx, task, message, error_class, final=True)
                return True
            return await self._now_in(tx, task, TaskStatus.FAILED, failure_message=message)

    async def _attempt_failed(
        self, tx: Any, task: Task, message: str, error_class: str | None, *, final: bool
    ) -> None:
        await self._record(
            tx,
            task.id,
            TaskEventKind.ATTEMPT_FAILED,
            version=task.dispatch_version,
            attempt=task.attempt_count,
            errorClass=error_class,
            code=failure_code(error_class),
            message=message,
            final=final,
        )

    async def schedule_retry(
        self,
        task: Task,
        owner: str,
        failure_message: str,
        backoff_seconds: float,
        error_class: str | None = None,
    ) -> RetryOutcome:
        """Transient failure (§9.2) in one transaction: FAILED if the attempts are spent,
        else PENDING with ``dispatch_version + 1``, ``next_retry_at`` by DB time, progress
        reset, ``failure_message`` kept, and a new outbox row whose ``next_retry_at``
        equals the task's (so the publisher cannot send it early). The caller has already
        deleted its partial file (§9.5).

        Re-run: the new version's command (and its unique event id) is drawn once, before
        the first attempt. After a commit that landed, the task is no longer RUNNING under
        this fence; the re-run then finds its own outbox row by event id (SCHEDULED), or the
        task FAILED at this version with this message (FAILED), and never inserts a second
        row (the unique key on task and version would refuse it anyway)."""
        drawn = self._new_command(task, task.dispatch_version + 1)
        return await self._schedule_retry(
            task, owner, failure_message, backoff_seconds, drawn, error_class
        )

    @retrying
    async def _schedule_retry(
        self,
        task: Task,
        owner: str,
        failure_message: str,
        backoff_seconds: float,
        drawn: tuple[Command, int],
        error_class: str | None,
    ) -> RetryOutcome:
        fence = self._fence(task, owner)
        message = failure_message[:1000]
        failure = {"failure_message": message, "failure_code": failure_code(error_class)}
        async with self.db.transaction() as tx:
            row = await tx.fetchone(self._sql.GET_TASK, {"id": task.id})
            if (
                row is None
                or row["status"] != TaskStatus.RUNNING
                or row["dispatch_version"] != task.dispatch_version
                or row["lease_owner"] != owner
            ):
                if await self._outbox_landed(tx, drawn[0]):
                    return RetryOutcome.SCHEDULED
                if await self._now_in(tx, task, TaskStatus.FAILED, failure_message=message):
                    return RetryOutcome.FAILED
                return RetryOutcome.LOST
            if not should_retry(int(row["attempt_count"]), int(row["max_attempts"])):
                failed = await fenced(tx, self._sql.FAIL_TASK, {**fence, **failure})
                if failed:
                    await self._attempt_failed(tx, task, message, error_class, final=True)
                return RetryOutcome.FAILED if failed else RetryOutcome.LOST
            if not await fenced(
                tx,
                self._sql.SCHEDULE_RETRY,
                {**fence, **failure, "backoff_seconds": backoff_seconds},
            ):
                return RetryOutcome.LOST
            after = await tx.fetchone(self._sql.GET_TASK, {"id": task.id})
            assert after is not None
            # The command was drawn for the version SCHEDULE_RETRY has just set.
            assert int(after["dispatch_version"]) == drawn[0].dispatch_version
            await self._insert_drawn_outbox(tx, drawn, after["next_retry_at"])
            await self._attempt_failed(tx, task, message, error_class, final=False)
            await self._record(
                tx,
                task.id,
                TaskEventKind.RETRY_SCHEDULED,
                version=int(after["dispatch_version"]),
                at=self._iso(after["next_retry_at"]),
            )
        return RetryOutcome.SCHEDULED

    async def release_lease(
        self,
        task: Task,
        owner: str,
        *,
        cause: HandBackCause = HandBackCause.SHUTDOWN,
        max_handbacks: int = DEFAULT_MAX_HANDBACKS,
    ) -> HandBack | None:
        """Hand a RUNNING task back, used when a shutdown, a database fault or a watchdog
        outage, not the export, ended the run. ``actors.core.handback.decide_hand_back``
        decides from the task as claimed (``task``: no one else writes its attempt and
        hand-back counts while this fence holds, and the fenced update proves it still
        does): up to ``max_handbacks`` in a row, PENDING at a new version with a new outbox
        row and the attempt not counted (``RELEASE_LEASE``); past it, the same with the
        attempt counted (``HAND_BACK_COUNTED``), or FAILED when it was the last
        (``HAND_BACK_FAIL``), with a message saying why. Every hand-back adds one to
        ``handback_count`` and a ``handed_back`` event to the history.

        Args:
            task: the task as this executor claimed it.
            owner: this instance's ``lease_owner`` (the fence).
            cause: why the run is handed back (the event and the message name it).
            max_handbacks: ``FILE_EXPORT_MAX_HANDBACKS``.

        Returns:
            The decision carried out, or ``None`` if the lease was already lost (nothing
            written).

        Re-run: the command is drawn once, before the first attempt; after a commit that
        landed the fenced update matches 0 rows and the re-read finds the outbox row by
        its event id (or, for the last attempt, the task FAILED at this version with this
        hand-back counted): the same decision again."""
        drawn = self._new_command(task, task.dispatch_version + 1)
        return await self._release_lease(task, owner, drawn, cause, max_handbacks)

    @retrying
    async def _release_lease(
        self,
        task: Task,
        owner: str,
        drawn: tuple[Command, int],
        cause: HandBackCause,
        max_handbacks: int,
    ) -> HandBack | None:
        decision = decide_hand_back(
            cause,
            handback_count=task.handback_count,
            attempt_count=task.attempt_count,
            max_attempts=task.max_attempts,
            max_handbacks=max_handbacks,
        )
        fence = self._fence(task, owner)
        async with self.db.transaction() as tx:
            if decision.fate != HandBackFate.REFUNDED:
                # Counted: the message names the causes of the whole row.
                earlier = await self._earlier_hand_back_causes(tx, task.id, decision.in_a_row - 1)
                decision = replace(
                    decision,
                    message=hand_back_message(
                        decision.in_a_row,
                        [*earlier, cause.value],
                        decision.attempt,
                        decision.max_attempts,
                    ),
                )
            assert decision.fate == HandBackFate.REFUNDED or decision.message is not None
            if decision.fate == HandBackFate.FAILED:
                if not await fenced(
                    tx, self._sql.HAND_BACK_FAIL, {**fence, "failure_message": decision.message}
                ):
                    row = await tx.fetchone(self._sql.GET_TASK, {"id": task.id})
                    landed = (
                        row is not None
                        and row["status"] == TaskStatus.FAILED
                        and int(row["dispatch_version"]) == task.dispatch_version
                        and int(row["handback_count"]) == decision.in_a_row
                    )
                    return decision if landed else None
                version = task.dispatch_version
            else:
                sql = (
                    self._sql.RELEASE_LEASE
                    if decision.fate == HandBackFate.REFUNDED
                    else self._sql.HAND_BACK_COUNTED
                )
                message = {} if decision.message is None else {"failure_message": decision.message}
                if not await fenced(tx, sql, {**fence, **message}):
                    return decision if await self._outbox_landed(tx, drawn[0]) else None
                await self._insert_drawn_outbox(tx, drawn)
                version = task.dispatch_version + 1
            await self._record(
                tx,
                task.id,
                TaskEventKind.HANDED_BACK,
                instance=owner,
                version=version,
                cause=cause.value,
                inARow=decision.in_a_row,
                attempt=decision.attempt if decision.fate != HandBackFate.REFUNDED else None,
                counted=decision.fate != HandBackFate.REFUNDED or None,
                final=decision.fate == HandBackFate.FAILED or None,
                message=decision.message,
            )
        return decision

    async def _earlier_hand_back_causes(self, tx: Any, task_id: int, count: int) -> list[str]:
        """The causes of the task's last ``count`` hand-backs, oldest first, as far as its
        history (newest events, ``LIST_TASK_EVENTS``) still has them."""
        if count <= 0:
            return []
        rows = await tx.fetchall(
            self._sql.LIST_TASK_EVENTS,
            {"task_id": task_id, "limit": min(MAX_TASK_EVENTS, 8 * count + 8)},
        )
        causes: list[str] = []
        for row in rows:  # newest first
            if row["kind"] != TaskEventKind.HANDED_BACK:
                continue
            causes.append(str(json.loads(row["detail_json"]).get("cause") or ""))
            if len(causes) == count:
                break
        return causes[::-1]
