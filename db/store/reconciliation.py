"""Transitions of the reconciler: re-dispatch, lease recovery, expiry, pruning, gauges
(§8.5, §13, §15). Each pass works in small independent transactions, so a row that keeps
deadlocking is left for the next pass instead of stopping the others."""

from __future__ import annotations

from typing import Any

from actors.core.backoff import should_retry
from actors.core.command_message import Command
from actors.core.events import TaskEventKind
from actors.core.models import Task, TaskStatus
from actors.core.orphans import FileHold
from actors.core.outcomes import QueueSample, RetryOutcome
from db.database import DuplicateKeyError, RetryableDatabaseError
from db.store.base import StoreBase, fenced
from db.store.retry import replaying, retrying


class ReconciliationTransitions(StoreBase):
    """What the reconciler repairs and cleans up, by DB time."""

    async def redispatch_missing_outbox(self, grace_seconds: float, limit: int) -> int:
        """Case A of §8.5-1: PENDING tasks past the grace with no outbox row for their
        current version get one, *same version*. The unique key absorbs a racing insert.
        Returns rows inserted.

        Re-run: each insert is its own transaction; after one that landed, the re-run hits
        the unique key on task and version and counts nothing (the count is for metrics).
        A row that keeps deadlocking is left for the next pass."""
        rows = await self._tasks_without_outbox(grace_seconds, limit)
        inserted = 0
        for task_id, export_type, version, trace_id in rows:
            try:
                inserted += await self._redispatch_one(task_id, export_type, version, trace_id)
            except RetryableDatabaseError:
                pass  # rolled back: the next pass sees it again
        return inserted

    @retrying
    async def _tasks_without_outbox(
        self, grace_seconds: float, limit: int
    ) -> list[tuple[int, str, int, str | None]]:
        async with self.db.transaction() as tx:
            rows = await tx.fetchall(
                self._sql.SELECT_TASKS_WITHOUT_OUTBOX,
                {"grace_seconds": grace_seconds, "limit": limit},
            )
        return [
            (int(r["id"]), r["export_type"], int(r["dispatch_version"]), r["trace_id"])
            for r in rows
        ]

    @retrying
    async def _redispatch_one(
        self, task_id: int, export_type: str, version: int, trace_id: str | None
    ) -> int:
        try:
            async with self.db.transaction() as tx:
                await self._insert_outbox(
                    tx, task_id, export_type, version, next_retry_at=None, trace_id=trace_id
                )
        except DuplicateKeyError:
            return 0  # already there
        return 1

    async def redispatch_stale_sent(
        self, stale_seconds: float, grace_seconds: float, limit: int
    ) -> int:
        """Case B of §8.5-1: a SENT row whose task is still PENDING at that version after
        ``stale_seconds``, that no slot saw (``seen_at``) and that was not sent again yet
        (``resent_at``), goes back to PENDING (same row, same version) and records the
        re-send (``actors.core.dispatch.command_state``). Returns rows reset.

        Re-run: each reset re-checks the whole condition; after one that landed the row is
        PENDING and the re-run matches nothing (the count is for metrics). A row that keeps
        deadlocking is left for the next pass."""
        params = {"stale_seconds": stale_seconds, "grace_seconds": grace_seconds}
        reset = 0
        for outbox_id in await self._stale_sent_ids(params, limit):
            try:
                reset += await self._redispatch_stale_one(params, outbox_id)
            except RetryableDatabaseError:
                continue  # the next pass sees it again
        return reset

    @retrying
    async def _stale_sent_ids(self, params: dict[str, Any], limit: int) -> list[int]:
        async with self.db.transaction() as tx:
            rows = await tx.fetchall(self._sql.SELECT_STALE_SENT_OUTBOX, {**params, "limit": limit})
        return [int(r["id"]) for r in rows]

    @retrying
    async def _redispatch_stale_one(self, params: dict[str, Any], outbox_id: int) -> int:
        async with self.db.transaction() as tx:
            return await tx.execute(self._sql.REDISPATCH_STALE_SENT, {**params, "id": outbox_id})

    @retrying
    async def expired_leases(self, limit: int) -> list[Task]:
        """RUNNING tasks whose lease has expired by DB time (§8.5-2)."""
        async with self.db.transaction() as tx:
            rows = await tx.fetchall(self._sql.SELECT_EXPIRED_LEASES, {"limit": limit})
        return [self.task_from_row(r) for r in rows]

    @retrying
    async def live_leases(self, limit: int) -> list[Task]:
        """RUNNING tasks whose lease has not expired by DB time, soonest expiry first."""
        async with self.db.transaction() as tx:
            rows = await tx.fetchall(self._sql.SELECT_LIVE_LEASES, {"limit": limit})
        return [self.task_from_row(r) for r in rows]

    @retrying
    async def expire_lease(self, task: Task) -> bool:
        """End ``task``'s lease now, fenced by its version and ``lease_owner``, so that
        lease recovery takes it; ``False`` when the task changed meanwhile."""
        async with self.db.transaction() as tx:
            return await fenced(
                tx,
                self._sql.EXPIRE_LEASE,
                {
                    "id": task.id,
                    "dispatch_version": task.dispatch_version,
                    "owner": task.lease_owner,
                },
            )

    async def recover_expired_lease(
        self, task: Task, failure_message: str, exhausted_message: str
    ) -> RetryOutcome:
        """§8.5-2 for one task, in one transaction: new version + new outbox row if
        attempts remain, else FAILED. ``LOST`` if the lease was renewed meanwhile (or
        another reconciler recovered it first).

        Re-run: the new version's command is drawn once, before the first attempt. After
        a commit that landed, the fenced update matches 0 rows; the re-run finds its own
        outbox row by event id (SCHEDULED) or, only when re-running after a lost COMMIT,
        the task FAILED at this version with ``exhausted_message`` (FAILED). The answer
        decides whether the dead run's file is deleted, so a landed recovery must not
        come back as LOST."""
        drawn = self._new_command(task, task.dispatch_version + 1)
        return await self._recover_expired_lease(task, failure_message, exhausted_message, drawn)

    @retrying
    async def _recover_expired_lease(
        self,
        task: Task,
        failure_message: str,
        exhausted_message: str,
        drawn: tuple[Command, int],
    ) -> RetryOutcome:
        params = {"id": task.id, "dispatch_version": task.dispatch_version}
        exhausted = exhausted_message[:1000]
        async with self.db.transaction() as tx:
            if should_retry(task.attempt_count, task.max_attempts):
                if not await fenced(
                    tx,
                    self._sql.RECOVER_LEASE_RETRY,
                    {**params, "failure_message": failure_message[:1000]},
                ):
                    landed = await self._outbox_landed(tx, drawn[0])
                    return RetryOutcome.SCHEDULED if landed else RetryOutcome.LOST
                await self._insert_drawn_outbox(tx, drawn)
                await self._record(
                    tx,
                    task.id,
                    TaskEventKind.LEASE_RECOVERED,
                    instance=task.lease_owner,
                    version=task.dispatch_version,
                    nextVersion=task.dispatch_version + 1,
                    message=failure_message,
                )
                return RetryOutcome.SCHEDULED
            if await fenced(
                tx, self._sql.RECOVER_LEASE_FAIL, {**params, "failure_message": exhausted}
            ):
                await self._record(
                    tx,
                    task.id,
                    TaskEventKind.LEASE_RECOVERED,
                    instance=task.lease_owner,
                    version=task.dispatch_version,
                    message=exhausted,
                    final=True,
                )
                return RetryOutcome.FAILED
            if replaying() and await self._now_in(
                tx, task, TaskStatus.FAILED, failure_message=exhausted
            ):
                return RetryOutcome.FAILED
            return RetryOutcome.LOST

    @retrying
    async def release_expired_outbox_claims(self) -> int:
        """§8.5-3: CLAIMED rows whose publisher lease expired go back to PENDING.

        Re-run: set-based and conditional; after a commit that landed nothing is left and
        the count (metrics only) is 0."""
        async with self.db.transaction() as tx:
            return await tx.execute(self._sql.RELEASE_EXPIRED_OUTBOX_CLAIMS)

    @retrying
    async def expired_files(self, limit: int) -> list[tuple[int, str | None]]:
        """SUCCEEDED tasks past ``expires_at``: (task id, object key)."""
        async with self.db.transaction() as tx:
            rows = await tx.fetchall(self._sql.SELECT_EXPIRED_FILES, {"limit": limit})
        return [(int(r["id"]), r["object_key"]) for r in rows]

    @retrying
    async def mark_expired(self, task_id: int) -> bool:
        """SUCCEEDED past ``expires_at`` → EXPIRED (§15), after its file was deleted.

        Re-run: after a commit that landed the task is EXPIRED and the update matches 0
        rows (False: one expiry fewer in the metrics, nothing else)."""
        async with self.db.transaction() as tx:
            if not await fenced(tx, self._sql.MARK_EXPIRED, {"id": task_id}):
                return False
            await self._record(tx, task_id, TaskEventKind.EXPIRED)
            return True

    @retrying
    async def file_hold(self, task_id: int) -> FileHold | None:
        """What task ``task_id`` holds of its files (status, key, a live lease), for the
        orphan scan's rule (``actors/core/orphans.py``); ``None`` when there is no such
        task. Read-only."""
        async with self.db.transaction() as tx:
            row = await tx.fetchone(self._sql.GET_TASK_FILE_HOLD, {"id": task_id})
        if row is None:
            return None
        return FileHold(TaskStatus(row["status"]), row["object_key"], bool(row["lease_alive"]))

    @retrying
    async def prune_sent_outbox(self, retention_seconds: float, chunk: int = 5000) -> int:
        """Delete SENT rows older than the retention, at most ``chunk`` (§15).

        The oldest go first: the ``chunk``-th candidate in (``sent_at``, id) order bounds
        the delete, so it reads an index range of ``chunk`` rows, not every SENT row.

        Re-run: deletes whatever old SENT rows are left; the count is for a log line."""
        params: dict[str, Any] = {"retention_seconds": retention_seconds}
        async with self.db.transaction() as tx:
            bound = await tx.fetchone(self._sql.SELECT_PRUNE_BOUND, {**params, "offset": chunk - 1})
            if bound is None:  # fewer than ``chunk`` candidates: delete them all
                return await tx.execute(self._sql.PRUNE_ALL_SENT_OUTBOX, params)
            params.update(max_sent_at=bound["sent_at"], max_id=bound["id"])
            return await tx.execute(self._sql.PRUNE_SENT_OUTBOX, params)

    @retrying
    async def prune_task_events(self, retention_seconds: float, chunk: int = 5000) -> int:
        """Delete history events older than the retention, at most ``chunk``, oldest
        first (one index range by age, bounded like :meth:`prune_sent_outbox`).

        Re-run: deletes whatever old events are left; the count is for a log line."""
        params: dict[str, Any] = {"retention_seconds": retention_seconds}
        async with self.db.transaction() as tx:
            bound = await tx.fetchone(
                self._sql.SELECT_EVENT_PRUNE_BOUND, {**params, "offset": chunk - 1}
            )
            if bound is None:  # fewer than ``chunk`` candidates: delete them all
                return await tx.execute(self._sql.PRUNE_ALL_TASK_EVENTS, params)
            params.update(max_created_at=bound["created_at"], max_id=bound["id"])
            return await tx.execute(self._sql.PRUNE_TASK_EVENTS, params)

    @retrying
    async def sample_queues(self) -> QueueSample:
        """The queue gauges, by DB time (``QueueSample``)."""
        async with self.db.transaction() as tx:
            now_row = await tx.fetchone(self._sql.DB_NOW)
            q = await tx.fetchone(self._sql.SAMPLE_QUEUE)
            o = await tx.fetchone(self._sql.SAMPLE_OUTBOX)
        to_dt = self.db.dialect.to_datetime
        assert now_row is not None and q is not None and o is not None
        now = to_dt(now_row["db_now"])
        assert now is not None

        def age(value: Any) -> float:
            at = to_dt(value)
            return max(0.0, (now - at).total_seconds()) if at is not None else 0.0

        return QueueSample(
            age(q["oldest"]), int(o["pending"] or 0), age(o["oldest"]), int(o["max_attempt"] or 0)
        )
