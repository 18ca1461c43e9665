"""Read-only queries of the operator's tools (``export-center tasks`` and ``inspect``).

Nothing here writes: an operator's cancel and retry go through the same transitions as
the API's (``db.store.api``). The reads see every tenant and app, because the
operator works on the database, not as a user.

The SQL texts live here rather than in ``db.transitions`` (which holds the service's
transitions) and are rendered for the dialect like them. A task is read by its primary
key, its outbox rows by ``uk_file_export_outbox_task_version``, its events by
``idx_file_export_task_event_task``. A list in one status of one type walks
``idx_file_export_type_status``, whose entries end in the primary key, so newest first
needs no sort; every task reads the primary key backwards up to the page. A list in one
status of every type, or of one type in every status, reads that index range and sorts
it: cheap for the live statuses (PENDING, RUNNING), growing with the history for a
finished one — an operator's occasional look, not a hot path.
"""

from __future__ import annotations

import json

from actors.core.events import TaskEvent, TaskEventKind, TaskInspection
from actors.core.models import Task, TaskStatus
from db.store.base import StoreBase
from db.store.retry import retrying
from db.transitions.columns import TASK_COLUMNS

_LIST = f"SELECT {TASK_COLUMNS} FROM file_export_task"
_NEWEST = " ORDER BY id DESC LIMIT :limit"

#: Every task, newest first.
LIST_ALL = _LIST + _NEWEST
#: One status, newest first.
LIST_IN_STATUS = _LIST + " WHERE status = :status" + _NEWEST
#: One export type, newest first.
LIST_OF_TYPE = _LIST + " WHERE export_type = :export_type" + _NEWEST
#: One export type in one status, newest first.
LIST_OF_TYPE_IN_STATUS = _LIST + " WHERE export_type = :export_type AND status = :status" + _NEWEST


class InspectionQueries(StoreBase):
    """The operator's reads: list tasks across tenants, inspect one task."""

    @retrying
    async def operator_list(
        self,
        statuses: tuple[TaskStatus, ...] = (),
        export_type: str | None = None,
        limit: int = 50,
    ) -> list[Task]:
        """Tasks of every tenant and app, newest first (by id).

        Args:
            statuses: only these statuses; empty for all.
            export_type: only this export type; ``None`` for all.
            limit: at most this many tasks.

        Returns:
            Up to ``limit`` tasks, newest first.
        """
        render = self.db.dialect.render
        params: dict[str, object] = {"limit": limit}
        if export_type is not None:
            params["export_type"] = export_type
        rows = []
        async with self.db.transaction() as tx:
            if not statuses:
                sql = LIST_OF_TYPE if export_type is not None else LIST_ALL
                rows = await tx.fetchall(render(sql), params)
            else:
                sql = LIST_OF_TYPE_IN_STATUS if export_type is not None else LIST_IN_STATUS
                for status in dict.fromkeys(statuses):
                    rows += await tx.fetchall(render(sql), {**params, "status": status.value})
        tasks = sorted((self.task_from_row(r) for r in rows), key=lambda t: t.id, reverse=True)
        return tasks[:limit]

    @retrying
    async def inspect_task(self, task_id: int, event_limit: int = 50) -> TaskInspection | None:
        """The task, its outbox rows and its newest events with the DB clock, read in one
        transaction so that they agree with each other.

        Args:
            task_id: the task.
            event_limit: at most this many events, the newest (oldest first).

        Returns:
            The inspection, or ``None`` if there is no such task.
        """
        async with self.db.transaction() as tx:
            row = await tx.fetchone(self._sql.GET_TASK, {"id": task_id})
            if row is None:
                return None
            outbox = await tx.fetchall(self._sql.LIST_OUTBOX_FOR_TASK, {"task_id": task_id})
            events = await tx.fetchall(
                self._sql.LIST_TASK_EVENTS, {"task_id": task_id, "limit": event_limit}
            )
        to_dt = self.db.dialect.to_datetime
        now = to_dt(row["db_now"])
        assert now is not None
        return TaskInspection(
            task=self.task_from_row(row),
            outbox=tuple(self.outbox_from_row(r) for r in outbox),
            events=tuple(
                TaskEvent(
                    int(e["id"]),
                    int(e["task_id"]),
                    TaskEventKind(e["kind"]),
                    to_dt(e["created_at"]) or now,
                    json.loads(e["detail_json"]),
                )
                for e in reversed(events)  # read newest first: the newest ``event_limit``
            ),
            db_now=now,
        )
