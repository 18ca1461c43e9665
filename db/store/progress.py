"""The reads behind the progress stream (``web/progress.py``): a stream's first read (one
statement pair), and the instance's one read per interval of what changed
(``web/progress_feed.py``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from actors.core.models import Task
from actors.core.principal import Principal
from db.store.base import StoreBase
from db.store.retry import retrying


class ProgressReads(StoreBase):
    """The caller's live tasks and its newest ones, for the progress stream."""

    @retrying
    async def tasks_for_progress(
        self, principal: Principal, *, all_users: bool, newest: int, limit: int
    ) -> list[Task]:
        """The tasks one poll of the progress stream compares (``actors/core/http/progress.py``).

        Args:
            principal: the caller; its tenant and app bound the read.
            all_users: every requester of the tenant and app (``platform:download:all``),
                not only the caller's own tasks.
            newest: how many of the newest tasks to read besides the live ones, so a task
                that started and finished between two polls is still seen.
            limit: the most live tasks to read (a bound, not a page).

        Returns:
            The live (PENDING, RUNNING) tasks and the ``newest`` newest, each once, in no
            particular order. Both reads are index ranges (``tests/db/test_query_plans.py``)
            in one transaction, so they agree with each other.
        """
        params: dict[str, Any] = {
            "tenant_id": principal.tenant_id,
            "app_code": principal.app_code.value,
        }
        if not all_users:
            params["requested_by"] = principal.user_id
        sql = self._sql
        live_sql, newest_sql = (
            (sql.LIVE_TASKS_OF_SCOPE, sql.NEWEST_TASKS_OF_SCOPE)
            if all_users
            else (sql.LIVE_TASKS_OF_REQUESTER, sql.NEWEST_TASKS_OF_REQUESTER)
        )
        async with self.db.transaction() as tx:
            live = await tx.fetchall(live_sql, {**params, "limit": limit})
            recent = await tx.fetchall(newest_sql, {**params, "limit": newest})
        by_id = {int(row["id"]): row for row in [*recent, *live]}
        return [self.task_from_row(row) for row in by_id.values()]

    @retrying
    async def tasks_changed_since(self, since: datetime, after_id: int, limit: int) -> list[Task]:
        """The tasks written at or after a time, for the progress feed (``web/progress_feed.py``).

        Args:
            since: a time of the database's clock (every write sets ``updated_at`` to it).
            after_id: of the tasks written exactly at ``since``, only those with a greater
                id (the key of the last row of a full page; 0 for all of them).
            limit: the most tasks returned (a page).

        Returns:
            The tasks whose ``(updated_at, id)`` comes after ``(since, after_id)``, in that
            order; one range of ``idx_file_export_updated`` (``tests/db/test_query_plans.py``).
        """
        params = {
            "since": self.db.dialect.from_datetime(since),
            "after_id": after_id,
            "limit": limit,
        }
        async with self.db.transaction() as tx:
            rows = await tx.fetchall(self._sql.TASKS_CHANGED_SINCE, params)
        return [self.task_from_row(row) for row in rows]
