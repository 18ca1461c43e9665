"""Transitions the API calls: create, list and read tasks, manual retry, cancel.

Create and manual retry run under the create guard lock and admit the new active task
in one place (``_admit``), with the counts read in the same transaction.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from actors.core.admission import ActiveCounts, CreateLimits, admit
from actors.core.cancel import cancel_outcome
from actors.core.command_message import Command
from actors.core.events import TaskEvent, TaskEventKind
from actors.core.ids import task_number
from actors.core.models import Task, TaskStatus
from actors.core.outcomes import (
    CancelOutcome,
    CancelResult,
    CreateOutcome,
    CreateResult,
    ManualRetryOutcome,
    NewTask,
)
from actors.core.principal import Principal
from actors.core.task_list import TaskFilter
from db.database import DuplicateKeyError, Tx
from db.dialect import Dialect
from db.store.base import StoreBase, fenced
from db.store.retry import replaying, retrying
from db.transitions.reads import ListShape, list_tasks_templates

_DEFAULT_LIMITS = CreateLimits()
_NO_FILTER = TaskFilter()


@functools.cache
def _list_statements(dialect: Dialect, shape: ListShape) -> tuple[str, str]:
    """The list page and count statements of ``shape`` rendered for ``dialect``, once
    each (2 scopes x 7 status counts x 8 other combinations at most)."""
    page, count = list_tasks_templates(shape)
    return dialect.render(page), dialect.render(count)


def _requester(tenant_id: int, app_code: str, requested_by: int) -> dict[str, Any]:
    """The SQL parameters that name a requester (tenant, app, user)."""
    return {"tenant_id": tenant_id, "app_code": app_code, "requested_by": requested_by}


class ApiTransitions(StoreBase):
    """Create, list, read, manually retry and cancel tasks (the routes of ``web.api``)."""

    @retrying
    async def get_task(self, task_id: int) -> Task | None:
        """The task, or ``None`` if there is none with this id."""
        async with self.db.transaction() as tx:
            row = await tx.fetchone(self._sql.GET_TASK, {"id": task_id})
        return self.task_from_row(row) if row else None

    @retrying
    async def list_tasks(
        self,
        principal: Principal,
        *,
        all_users: bool,
        filters: TaskFilter = _NO_FILTER,
        limit: int,
        offset: int,
    ) -> tuple[list[Task], int]:
        """Tasks visible to ``principal`` (§12 ownership), newest first by
        (``requested_at``, ``id``), and their total.

        Args:
            all_users: every requester of the principal's tenant and app, not only the
                principal's own tasks; only then does ``filters.requested_by`` apply.
            filters: statuses, export type, requested-at range, requester
                (``actors/core/task_list.py``).
            limit: page size, rows.
            offset: rows to skip.

        Returns:
            The page and the total, counted up to ``LIST_TOTAL_CAP + 1``.

        The statement is put together for the filters present (``list_tasks_templates``
        in ``db.transitions``) and reads through the index of its scope and status, so a
        page costs the same however many tasks the tenant has finished."""
        params: dict[str, Any] = {
            "tenant_id": principal.tenant_id,
            "app_code": principal.app_code.value,
            "limit": limit,
            "offset": offset,
        }
        requester = filters.requested_by if all_users else principal.user_id
        if requester is not None:
            params["requested_by"] = requester
        statuses = filters.statuses
        if len(statuses) == 1:
            params["status"] = statuses[0]
        elif len(statuses) > 1:
            params.update({f"status_{i}": s for i, s in enumerate(statuses)})
            params["window"] = offset + limit
        if filters.export_type is not None:
            params["export_type"] = filters.export_type
        dialect = self.db.dialect
        if filters.requested_from is not None:
            params["requested_from"] = dialect.from_datetime(filters.requested_from)
        if filters.requested_to is not None:
            params["requested_to"] = dialect.from_datetime(filters.requested_to)
        page_sql, count_sql = _list_statements(
            self.db.dialect,
            ListShape(
                of_requester=requester is not None,
                statuses=len(statuses),
                export_type=filters.export_type is not None,
                requested_from=filters.requested_from is not None,
                requested_to=filters.requested_to is not None,
            ),
        )
        async with self.db.transaction() as tx:
            rows = await tx.fetchall(page_sql, params)
            total = await tx.fetchone(count_sql, params)
        return [self.task_from_row(r) for r in rows], int(total["n"]) if total else 0

    # -- create (§7.2, §14) -------------------------------------------------------------

    async def create_task(
        self, new: NewTask, limits: CreateLimits = _DEFAULT_LIMITS
    ) -> CreateResult:
        """Create a task and its first outbox row in one transaction under the guard lock.

        Order inside the transaction (§7.2): lock ``GLOBAL_CREATE``; 60-second duplicate
        check and active counts, decided by ``actors.core.admission.admit`` (duplicate →
        the existing active task; user limit, type limit, kept places → refused); insert
        task; insert outbox row (same version 1). Nothing is sent here (invariant 2).

        Re-run: the task id is drawn once, before the first attempt. A re-run after a lost
        COMMIT first looks for that id: found, the earlier attempt landed and its task is
        returned as CREATED — not as a duplicate of itself, and not counted against the
        limits it now fills. Not found, nothing was written and the create runs afresh.
        """
        return await self._create_task(new, limits, self.ids.next_id())

    @retrying
    async def _create_task(self, new: NewTask, limits: CreateLimits, task_id: int) -> CreateResult:
        p = new.principal
        async with self.db.transaction() as tx:
            await tx.fetchone(self._sql.LOCK_CREATE_GUARD)
            if replaying() and (mine := await tx.fetchone(self._sql.GET_TASK, {"id": task_id})):
                return CreateResult(CreateOutcome.CREATED, self.task_from_row(mine))
            scope = _requester(p.tenant_id, p.app_code.value, p.user_id)
            outcome, dup = await self._admit(
                tx, scope, new.export_type, limits, parameters_hash=new.parameters.sha256
            )
            if outcome == CreateOutcome.DUPLICATE:
                assert dup is not None
                return CreateResult(outcome, self.task_from_row(dup))
            if outcome != CreateOutcome.CREATED:
                return CreateResult(outcome, None)
            await tx.execute(
                self._sql.INSERT_TASK,
                {
                    **scope,
                    "id": task_id,
                    "task_no": task_number(task_id),
                    "export_type": new.export_type,
                    "task_name": new.task_name,
                    "format": new.format,
                    "parameters_json": new.parameters.json,
                    "parameters_hash": new.parameters.sha256,
                    "max_attempts": new.max_attempts,
                    "trace_id": new.trace_id,
                    "requester_name": new.principal.name,
                },
            )
            await self._insert_outbox(
                tx, task_id, new.export_type, 1, next_retry_at=None, trace_id=new.trace_id
            )
            await self._record(
                tx, task_id, TaskEventKind.CREATED, by=p.user_id, exportType=new.export_type
            )
            row = await tx.fetchone(self._sql.GET_TASK, {"id": task_id})
        assert row is not None
        return CreateResult(CreateOutcome.CREATED, self.task_from_row(row))

    async def _admit(
        self,
        tx: Tx,
        scope: dict[str, Any],
        export_type: str,
        limits: CreateLimits,
        *,
        parameters_hash: str | None = None,
    ) -> tuple[CreateOutcome, dict[str, Any] | None]:
        """Admission of one more active task for a requester (``scope``) and type, inside
        ``tx`` under the guard lock: the one place a create and a manual retry read what
        ``actors.core.admission.admit`` decides on.

        Args:
            scope: the requester (``_requester``).
            export_type: the type of the new active task.
            limits: the admission settings.
            parameters_hash: a create's parameters hash, to look for an identical active
                task within ``limits.duplicate_window_seconds`` first; ``None`` for a
                manual retry, which has no duplicate check.

        Returns:
            The outcome and, for ``DUPLICATE``, the row of the existing task (the newest,
            should a manual retry have made two of them active); else ``None``.
        """
        dup: dict[str, Any] | None = None
        if parameters_hash is not None:
            duplicates = await tx.fetchall(
                self._sql.FIND_DUPLICATE_ACTIVE,
                {
                    **scope,
                    "export_type": export_type,
                    "parameters_hash": parameters_hash,
                    "window_seconds": limits.duplicate_window_seconds,
                },
            )
            dup = max(duplicates, key=lambda r: int(r["id"]), default=None)
        row = await tx.fetchone(
            self._sql.COUNT_ACTIVE_FOR_ADMISSION, {**scope, "export_type": export_type}
        )
        assert row is not None
        counts = ActiveCounts(
            by_user=int(row["by_user"] or 0),
            by_type=int(row["by_type"] or 0),
            by_user_in_type=int(row["by_user_in_type"] or 0),
        )
        return admit(counts, limits, duplicate=dup is not None), dup

    # -- manual retry (§9.3) ------------------------------------------------------------

    async def manual_retry(
        self, task: Task, limits: CreateLimits = _DEFAULT_LIMITS
    ) -> tuple[ManualRetryOutcome, Task | None]:
        """FAILED or CANCELLED → PENDING with a new version and a new outbox row, attempts
        reset (§9.3).

        Runs under the create guard and applies the same admission as a create (without
        the duplicate check) to the task's requester and type, so retries cannot exceed
        what creates may. Returns (RETRIED, task) on success, (USER_LIMIT | TYPE_LIMIT |
        TYPE_RESERVED, None) when admission refuses, and (CHANGED, None) if the task
        was no longer FAILED at that version (a concurrent retry won). Authorisation and
        ``enabled`` are checked by the caller; the caller deletes any leftover file.

        Re-run: the new version's command is drawn once, before the first attempt. A
        re-run after a lost COMMIT first looks for its outbox row by event id: found, the
        retry landed and is RETRIED (not refused by the limits it now fills, nor reported
        as a concurrent retry).
        """
        drawn = self._new_command(task, task.dispatch_version + 1)
        return await self._manual_retry(task, limits, drawn)

    @retrying
    async def _manual_retry(
        self, task: Task, limits: CreateLimits, drawn: tuple[Command, int]
    ) -> tuple[ManualRetryOutcome, Task | None]:
        async with self.db.transaction() as tx:
            await tx.fetchone(self._sql.LOCK_CREATE_GUARD)
            if replaying() and await self._outbox_landed(tx, drawn[0]):
                row = await tx.fetchone(self._sql.GET_TASK, {"id": task.id})
                assert row is not None
                return ManualRetryOutcome.RETRIED, self.task_from_row(row)
            scope = _requester(task.tenant_id, task.app_code, task.requested_by)
            outcome, _ = await self._admit(tx, scope, task.export_type, limits)
            if outcome != CreateOutcome.CREATED:
                return ManualRetryOutcome(outcome.value), None
            if not await fenced(
                tx,
                self._sql.MANUAL_RETRY,
                {"id": task.id, "dispatch_version": task.dispatch_version},
            ):
                return ManualRetryOutcome.CHANGED, None
            try:
                await self._insert_drawn_outbox(tx, drawn)
            except DuplicateKeyError:
                pass  # a row for this version exists already: the unique key absorbed it
            row = await tx.fetchone(self._sql.GET_TASK, {"id": task.id})
            assert row is not None
            await self._record(
                tx,
                task.id,
                TaskEventKind.RETRY_SCHEDULED,
                version=task.dispatch_version + 1,
                at=self._iso(row["next_retry_at"]),
                manual=True,
            )
        assert row is not None
        return ManualRetryOutcome.RETRIED, self.task_from_row(row)

    # -- cancel (actors/core/cancel.py) ---------------------------------------------------

    @retrying
    async def cancel_task(
        self, task_id: int, failure_message: str, *, by: int | None = None
    ) -> CancelResult | None:
        """PENDING or RUNNING → CANCELLED, with the task's unsent outbox rows closed, in
        one transaction.

        A RUNNING attempt is not waited for: its lease is cleared with the status, so its
        next fenced write (progress, lease renewal, final commit) matches 0 rows and the
        run aborts like one whose lease was lost. Against a final commit in flight the
        row lock decides: exactly one of SUCCEEDED and CANCELLED lands.

        Args:
            task_id: the task (the caller has checked the ownership rule).
            failure_message: what the task shows as its message
                (``actors.core.cancel.cancel_message``).
            by: the user who cancelled it, for the task's history.

        Returns:
            The outcome (``actors.core.cancel.cancel_outcome``) and the task as it is now,
            or ``None`` if there is no such task.

        Re-run: after a commit that landed, the update matches 0 rows; the re-read finds
        the task CANCELLED with this very message, which is this call's own cancel.
        """
        message = failure_message[:1000]
        async with self.db.transaction() as tx:
            changed = await fenced(
                tx, self._sql.CANCEL_TASK, {"id": task_id, "failure_message": message}
            )
            if changed:
                await tx.execute(self._sql.CLOSE_UNSENT_OUTBOX_OF_TASK, {"task_id": task_id})
                await self._record(tx, task_id, TaskEventKind.CANCELLED, by=by)
            row = await tx.fetchone(self._sql.GET_TASK, {"id": task_id})
        if row is None:
            return None
        task = self.task_from_row(row)
        if not changed and replaying() and task.failure_message == message:
            changed = task.status == TaskStatus.CANCELLED
        outcome = cancel_outcome(task.status, changed=changed)
        assert outcome != CancelOutcome.CANCELLED or task.status == TaskStatus.CANCELLED
        return CancelResult(outcome, task)

    # -- history (actors/core/events.py) --------------------------------------------------

    @retrying
    async def list_task_events(self, task_id: int, limit: int = 1000) -> list[TaskEvent]:
        """The task's newest ``limit`` events, oldest first (one index range, read
        backwards): a task retried and cancelled many times keeps its latest history."""
        async with self.db.transaction() as tx:
            rows = await tx.fetchall(
                self._sql.LIST_TASK_EVENTS, {"task_id": task_id, "limit": limit}
            )
        events = []
        for r in rows:
            at = self.db.dialect.to_datetime(r["created_at"])
            assert at is not None
            events.append(
                TaskEvent(
                    int(r["id"]),
                    int(r["task_id"]),
                    TaskEventKind(r["kind"]),
                    at,
                    json.loads(r["detail_json"]),
                )
            )
        return events[::-1]

    @retrying
    async def record_download(self, task_id: int, user_id: int) -> None:
        """A user started downloading the task's file: a ``downloaded`` event.

        Re-run: after a lost COMMIT the event may be written twice (two downloads shown
        for one); nothing else depends on it."""
        async with self.db.transaction() as tx:
            await self._record(tx, task_id, TaskEventKind.DOWNLOADED, by=user_id)
