"""Transitions of outbox rows: the publisher's claim and send results (§7.4), the
quarantine of a dead-lettered command (§9.4.2), and the embedded bus's start-up requeue."""

from __future__ import annotations

from typing import Any

from actors.core.events import TaskEventKind
from actors.core.models import OutboxRow, OutboxStatus, TaskStatus
from actors.core.outcomes import QuarantineOutcome
from db.database import RetryableDatabaseError
from db.store.base import StoreBase, fenced
from db.store.retry import replaying, retrying


class _Mismatch(Exception):
    """A transition that must change one row of each table matched another count: roll
    the transaction back."""


class OutboxTransitions(StoreBase):
    """The outbox rows' side of the store: publisher, DLQ handler, embedded start-up."""

    @retrying
    async def list_outbox(self, task_id: int) -> list[OutboxRow]:
        """Every outbox row of a task (tests and tools)."""
        async with self.db.transaction() as tx:
            rows = await tx.fetchall(self._sql.LIST_OUTBOX_FOR_TASK, {"task_id": task_id})
        return [self.outbox_from_row(r) for r in rows]

    # -- publisher (§7.4) ---------------------------------------------------------------

    @retrying
    async def _due_outbox_ids(self, limit: int) -> list[int]:
        async with self.db.transaction() as tx:
            rows = await tx.fetchall(self._sql.SELECT_DUE_OUTBOX, {"limit": limit})
        return [int(r["id"]) for r in rows]

    async def claim_due_outbox(
        self, owner: str, lease_seconds: float, limit: int
    ) -> list[OutboxRow]:
        """Claim due PENDING rows in two steps (select ids, then a conditional update per
        id), so the lock range stays one row (§7.4). Returns the rows this owner won, with
        ``attempt_count`` already incremented. A row that keeps deadlocking is left for
        the next round; any other database fault ends the round (raised)."""
        ids = await self._due_outbox_ids(limit)
        won: list[OutboxRow] = []
        for outbox_id in ids:
            try:
                row = await self._claim_one_outbox(outbox_id, owner, lease_seconds)
            except RetryableDatabaseError:
                continue  # still PENDING: the next round claims it
            if row is not None:
                won.append(self.outbox_from_row(row))
        return won

    @retrying
    async def _claim_one_outbox(
        self, outbox_id: int, owner: str, lease_seconds: float
    ) -> dict[str, Any] | None:
        """Step 2 of §7.4 for one row: the conditional claim, then the claimed row.

        Re-run: a claim that landed before its COMMIT answer was lost finds the row
        CLAIMED by this owner and returns it (the row was PENDING when this round selected
        it, and one publisher per process claims, so that claim is this call's);
        otherwise the claim simply runs again."""
        async with self.db.transaction() as tx:
            claimed = await fenced(
                tx,
                self._sql.CLAIM_OUTBOX,
                {"id": outbox_id, "owner": owner, "lease_seconds": lease_seconds},
            )
            row = await tx.fetchone(self._sql.GET_OUTBOX, {"id": outbox_id})
        if claimed or (
            replaying()
            and row is not None
            and row["status"] == OutboxStatus.CLAIMED
            and row["lease_owner"] == owner
        ):
            return row
        return None

    @retrying
    async def mark_outbox_sent(self, outbox_id: int, owner: str) -> bool:
        """CLAIMED → SENT, fenced by this publisher's claim. True if the row is SENT
        afterwards; False if this claim was lost and the row is elsewhere.

        Re-run: after a COMMIT that landed the row is already SENT; it matches 0 rows and
        the re-read reports SENT, so the answer is the same."""
        async with self.db.transaction() as tx:
            if await fenced(tx, self._sql.MARK_OUTBOX_SENT, {"id": outbox_id, "owner": owner}):
                sent = await tx.fetchone(self._sql.GET_OUTBOX, {"id": outbox_id})
                assert sent is not None
                await self._record(
                    tx,
                    int(sent["task_id"]),
                    TaskEventKind.DISPATCHED,
                    version=int(sent["dispatch_version"]),
                    eventId=sent["event_id"],
                )
                return True
            row = await tx.fetchone(self._sql.GET_OUTBOX, {"id": outbox_id})
        return row is not None and row["status"] == OutboxStatus.SENT

    @retrying
    async def mark_outbox_send_failed(
        self, outbox_id: int, owner: str, backoff_seconds: float, error: str
    ) -> bool:
        """CLAIMED → PENDING with backoff by DB time, fenced by this publisher's claim.

        Re-run: after a COMMIT that landed the row is PENDING already and the update
        matches 0 rows (False). Nothing depends on the answer: the row waits its backoff
        either way, and the next claim re-checks it."""
        async with self.db.transaction() as tx:
            return await fenced(
                tx,
                self._sql.MARK_OUTBOX_SEND_FAILED,
                {
                    "id": outbox_id,
                    "owner": owner,
                    "backoff_seconds": backoff_seconds,
                    "last_error": error[:1000],
                },
            )

    # -- DLQ (§9.4.2) -------------------------------------------------------------------

    @retrying
    async def quarantine(
        self, event_id: str, task_id: int, dispatch_version: int, reason: str
    ) -> QuarantineOutcome:
        """Quarantine the outbox row and fail the task in one transaction, asserting one
        row each; on any other count roll back and report a mismatch (a stale version or
        a foreign event id must not touch the current attempt).

        Re-run: after a commit that landed both updates would match 0 rows (a mismatch);
        so a re-run after a lost COMMIT first re-reads the row of ``event_id``: QUARANTINED
        for this task and version, with the task FAILED at that version, is this call's
        own work, reported as QUARANTINED."""
        try:
            async with self.db.transaction() as tx:
                if replaying():
                    row = await tx.fetchone(self._sql.GET_OUTBOX_BY_EVENT, {"event_id": event_id})
                    task = await tx.fetchone(self._sql.GET_TASK, {"id": task_id})
                    if (
                        row is not None
                        and row["status"] == OutboxStatus.QUARANTINED
                        and (int(row["task_id"]), int(row["dispatch_version"]))
                        == (task_id, dispatch_version)
                        and task is not None
                        and task["status"] == TaskStatus.FAILED
                        and int(task["dispatch_version"]) == dispatch_version
                    ):
                        return QuarantineOutcome.QUARANTINED
                outbox_quarantined = await fenced(
                    tx,
                    self._sql.QUARANTINE_OUTBOX,
                    {
                        "event_id": event_id,
                        "task_id": task_id,
                        "dispatch_version": dispatch_version,
                        "last_error": f"DLQ quarantine: {reason}"[:1000],
                    },
                )
                task_failed = await fenced(
                    tx,
                    self._sql.FAIL_QUARANTINED_TASK,
                    {
                        "id": task_id,
                        "dispatch_version": dispatch_version,
                        "failure_message": "the export command message was corrupted; "
                        "please start the export again",
                    },
                )
                if not (outbox_quarantined and task_failed):
                    raise _Mismatch
                await self._record(
                    tx,
                    task_id,
                    TaskEventKind.QUARANTINED,
                    version=dispatch_version,
                    eventId=event_id,
                    reason=reason,
                )
        except _Mismatch:
            return QuarantineOutcome.MISMATCH
        return QuarantineOutcome.QUARANTINED

    # -- embedded start-up --------------------------------------------------------------

    @retrying
    async def requeue_sent_of_pending_tasks(self) -> int:
        """At start-up of an embedded instance: SENT rows whose task is still PENDING at
        that version go back to PENDING (same row, same version), because the in-process
        bus that held them is gone. Not a row a slot saw (``seen_at``): that command was
        acked, not held, and its task waits for a slot (§8.5-1). A duplicate, if another
        process still holds one, is absorbed by the claim. Returns rows requeued.

        The rows are found from the PENDING tasks, not from the SENT rows (nearly all of
        them history), and reset one by one in one transaction, each with the condition
        checked again.

        Re-run: conditional updates in one transaction; after a commit that landed nothing
        is left to requeue and the count (used for a log line only) is 0."""
        async with self.db.transaction() as tx:
            rows = await tx.fetchall(self._sql.SELECT_SENT_OF_PENDING_TASKS)
            requeued = 0
            for row in rows:
                requeued += await tx.execute(self._sql.REQUEUE_SENT, {"id": row["id"]})
            return requeued
