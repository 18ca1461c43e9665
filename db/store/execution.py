"""Transitions of one execution attempt while it runs: the lease, the key of its file and
its progress, every write fenced by id, version, owner and status; and the deadline check
of a run that is still ours. The lease keeper and the export runner call them.

The claim that starts an attempt is ``db.store.claim``'s; settling the run (complete,
fail, retry, hand back) is ``db.store.settlement``'s.
"""

from __future__ import annotations

from actors.core.models import Task, TaskStatus
from db.store.base import StoreBase, fenced
from db.store.retry import retrying

#: Retry budget of the display-only progress write, seconds: one immediate retry on a fresh
#: connection fits; a database that is down is not waited for (the run goes on).
PROGRESS_RETRY_SECONDS = 0.5


class ExecutionTransitions(StoreBase):
    """The fenced writes of a running attempt (§8.3, §8.3.1)."""

    @retrying
    async def renew_lease(self, task: Task, owner: str, lease_seconds: float) -> bool:
        """§8.3.1 renewal. False means: lease lost, version changed or deadline passed.

        Re-run: the fenced update matches the same row again (rows *matched* are counted)
        and only moves the lease a little further: same answer."""
        async with self.db.transaction() as tx:
            return await fenced(
                tx,
                self._sql.RENEW_LEASE,
                {**self._fence(task, owner), "lease_seconds": lease_seconds},
            )

    @retrying
    async def record_object_key(self, task: Task, owner: str, object_key: str) -> bool:
        """Record the key of the file this attempt is about to write (fenced).

        Re-run: writes the same key into the same row again: same answer."""
        async with self.db.transaction() as tx:
            return await fenced(
                tx,
                self._sql.RECORD_OBJECT_KEY,
                {**self._fence(task, owner), "object_key": object_key},
            )

    @retrying(budget=PROGRESS_RETRY_SECONDS)
    async def report_progress(
        self, task: Task, owner: str, processed_rows: int, total_rows: int | None
    ) -> bool:
        """Display-only progress of a run (fenced). Retried only briefly
        (``PROGRESS_RETRY_SECONDS``): the caller skips a write that fails, the next batch
        writes a newer figure anyway.

        Re-run: writes the same figures into the same row again: same answer."""
        async with self.db.transaction() as tx:
            return await fenced(
                tx,
                self._sql.REPORT_PROGRESS,
                {
                    **self._fence(task, owner),
                    "processed_rows": processed_rows,
                    "total_rows": total_rows,
                },
            )

    @retrying
    async def own_run_past_deadline(self, task: Task, owner: str) -> bool:
        """After a final commit matched 0 rows: is this still our RUNNING attempt whose
        deadline has passed (§8.4 → timeout retry), rather than a lost lease? Read-only."""
        async with self.db.transaction() as tx:
            row = await tx.fetchone(self._sql.GET_TASK, {"id": task.id})
        if row is None:
            return False
        t = self.task_from_row(row)
        now = self.db.dialect.to_datetime(row["db_now"])
        return (
            t.status == TaskStatus.RUNNING
            and t.dispatch_version == task.dispatch_version
            and t.lease_owner == owner
            and t.execution_deadline_at is not None
            and now is not None
            and t.execution_deadline_at <= now
        )
