"""Transitions of a claim: a consumer slot takes a task for one execution attempt (§8.2,
§8.3.1), and its claim gate reads what the instance's slots hold and what waits (fair
share). The attempt's writes while it runs are ``db.store.execution``'s; how it ends,
``db.store.settlement``'s.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from actors.core import dispatch, fairness
from actors.core.events import TaskEventKind
from actors.core.models import TaskStatus
from actors.core.outcomes import ClaimResult
from db.store.base import StoreBase, fenced
from db.store.retry import replaying, retrying


class ClaimTransitions(StoreBase):
    """Claim one attempt, and the fair-share read behind a claim from the database (§8.2)."""

    @retrying
    async def claim_task(
        self,
        task_id: int,
        dispatch_version: int,
        owner: str,
        lease_seconds: float,
        max_duration_seconds: float,
    ) -> ClaimResult:
        """The atomic claim of §8.2 with the deadline of §8.3.1, all by DB time. On 0 rows
        the task is re-read and the branch classified (every branch acks).

        Re-run: a claim whose COMMIT answer was lost may have landed. The re-run then
        matches 0 rows and finds the task RUNNING at this version under ``owner``; that is
        this call's own claim, returned as claimed, so the task neither runs twice nor
        waits for its lease to expire. This relies on the caller: no other executor of
        this process may claim the same task meanwhile (the consumer slots share a
        registry of the tasks they hold, ``actors.supervised.local_claims.LocalClaims``)."""
        async with self.db.transaction() as tx:
            claimed = await fenced(
                tx,
                self._sql.CLAIM_TASK,
                {
                    "id": task_id,
                    "dispatch_version": dispatch_version,
                    "owner": owner,
                    "lease_seconds": lease_seconds,
                    "max_duration_seconds": max_duration_seconds,
                },
            )
            row = await tx.fetchone(self._sql.GET_TASK, {"id": task_id})
            if claimed and row is not None:
                # Claimed before its command was sent (from the database): never send it.
                await tx.execute(
                    self._sql.CLOSE_UNSENT_OUTBOX_OF_CLAIM,
                    {"task_id": task_id, "dispatch_version": dispatch_version},
                )
                await self._record(
                    tx,
                    task_id,
                    TaskEventKind.CLAIMED,
                    instance=owner,
                    version=dispatch_version,
                    attempt=int(row["attempt_count"]),
                )
        if claimed and row is not None:
            return ClaimResult(self.task_from_row(row), None)
        if row is None:
            return ClaimResult(None, dispatch.NoClaim.TASK_MISSING)
        task = self.task_from_row(row)
        if (
            replaying()
            and task.status == TaskStatus.RUNNING
            and task.dispatch_version == dispatch_version
            and task.lease_owner == owner
        ):
            return ClaimResult(task, None)
        now = self.db.dialect.to_datetime(row["db_now"])
        assert now is not None
        return ClaimResult(None, dispatch.classify_no_claim(task, dispatch_version, now))

    @retrying
    async def mark_command_seen(self, task_id: int, dispatch_version: int) -> bool:
        """A slot acked a delivery of this version without claiming its task, which waits
        for a slot (``actors.core.dispatch.marks_command_seen``): its outbox row is marked
        seen, by DB time, so the reconciler never sends it again (§8.5-1). ``False`` when
        the row was already marked, or there is none.

        Re-run: after a commit that landed the row is marked and the update matches 0 rows
        (``False``: nothing but the answer differs)."""
        async with self.db.transaction() as tx:
            return await fenced(
                tx,
                self._sql.MARK_COMMAND_SEEN,
                {"task_id": task_id, "dispatch_version": dispatch_version},
            )

    @retrying
    async def fair_share_load(self, owner: str, limit: int = 500) -> fairness.SlotLoad:
        """What ``owner``'s slots hold and what waits, by DB time, in one read.

        Args:
            owner: this instance's ``lease_owner``.
            limit: most due tasks to read, oldest first. Admission keeps the active set
                small (per-user and per-type limits), so the list is normally complete.

        Returns:
            RUNNING tasks leased to ``owner`` counted by requester (a slot that crashed
            mid-run keeps counting until its lease expires), and the due PENDING tasks
            ordered by (``next_retry_at``, id).
        """
        async with self.db.transaction() as tx:
            running = await tx.fetchall(
                self._sql.SELECT_RUNNING_REQUESTERS_OF_OWNER, {"owner": owner}
            )
            due = await tx.fetchall(self._sql.SELECT_DUE_PENDING_TASKS, {"limit": limit})
        to_dt = self.db.dialect.to_datetime

        def requester(row: Mapping[str, Any]) -> fairness.Requester:
            return fairness.Requester(
                int(row["tenant_id"]), str(row["app_code"]), int(row["requested_by"])
            )

        due_tasks = []
        for r in due:
            at = to_dt(r["next_retry_at"])
            assert at is not None
            due_tasks.append(
                fairness.DueTask(int(r["id"]), int(r["dispatch_version"]), requester(r), at)
            )
        return fairness.SlotLoad(dict(Counter(requester(r) for r in running)), due_tasks)
