"""The export store: every state transition of tasks and outbox rows, dialect-neutral.

Each public method is one transaction built from the SQL texts in ``db.transitions``. The
store makes no decisions of its own beyond the ones the seed puts inside a transaction
(limits under the guard lock, the attempt ceiling of an automatic retry); the decisions are
pure functions in ``actors.core`` and the actors carry them out.
"""

from __future__ import annotations

import functools
import json
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

import trio

from actors.core import dispatch, fairness
from actors.core.admission import ActiveCounts, CreateLimits, CreateOutcome, admit
from actors.core.backoff import should_retry
from actors.core.errors import ConfigError
from actors.core.ids import IdGenerator
from actors.core.limits import NormalisedParameters
from actors.core.models import (
    COMMAND_TAG,
    Command,
    OutboxRow,
    OutboxStatus,
    Principal,
    Task,
    TaskStatus,
)
from db import transitions as T
from db.database import Database, DuplicateKeyError, RetryableDatabaseError, Tx

log = logging.getLogger("db.store")
F = TypeVar("F", bound=Callable[..., Awaitable[Any]])

_TASK_TIMES = (
    "next_retry_at",
    "lease_until",
    "last_heartbeat_at",
    "execution_deadline_at",
    "requested_at",
    "started_at",
    "completed_at",
    "expires_at",
    "updated_at",
)
_OUTBOX_TIMES = ("next_retry_at", "lease_until", "sent_at", "created_at", "updated_at")


class _Sql:
    """All transition texts rendered once for one dialect."""

    def __init__(self, db: Database) -> None:
        for name in dir(T):
            value = getattr(T, name)
            if (
                name.isupper()
                and not name.startswith("_")
                and isinstance(value, str)
                and not name.endswith("_COLUMNS")
            ):
                setattr(self, name, db.dialect.render(value))


@dataclass(frozen=True, slots=True)
class NewTask:
    """What the API has validated for a create (§5)."""

    export_type: str
    task_name: str
    format: str
    parameters: NormalisedParameters
    principal: Principal
    max_attempts: int


@dataclass(frozen=True, slots=True)
class CreateResult:
    outcome: CreateOutcome
    task: Task | None


@dataclass(frozen=True, slots=True)
class ClaimResult:
    """Result of a claim (§8.2): ``task`` when claimed, else the no-claim branch."""

    task: Task | None
    no_claim: dispatch.NoClaim | None


class QuarantineOutcome(StrEnum):
    QUARANTINED = "quarantined"  # outbox QUARANTINED + task FAILED, one row each
    MISMATCH = "mismatch"  # stale version / event id mismatch: nothing changed


@dataclass(frozen=True, slots=True)
class QueueSample:
    """Gauge values (§13), seconds and counts by DB time."""

    queue_age_seconds: float
    outbox_pending: int
    outbox_oldest_age_seconds: float
    outbox_max_attempt: int


class RetryOutcome(StrEnum):
    SCHEDULED = "scheduled"  # PENDING with a new version and a new outbox row
    FAILED = "failed"  # attempts exhausted: FAILED
    LOST = "lost"  # fencing matched nothing: another owner or version


_RETRY_ATTEMPTS = 6
_DEFAULT_LIMITS = CreateLimits()


def retrying(method: F) -> F:
    """Retry a transition the database rolled back for a retryable reason (a deadlock, a
    lock wait timeout, a busy SQLite file), with short jittered backoff. Safe because a
    decorated method is one transaction whose effects all roll back together."""

    @functools.wraps(method)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        delay = 0.005
        for attempt in range(1, _RETRY_ATTEMPTS + 1):
            try:
                return await method(*args, **kwargs)
            except RetryableDatabaseError:
                if attempt == _RETRY_ATTEMPTS:
                    raise
                log.info(
                    "%s rolled back by the database (attempt %d); retrying",
                    method.__name__,
                    attempt,
                )
                await trio.sleep(delay * (1 + random.random()))
                delay *= 3
        raise AssertionError("unreachable")

    return wrapper  # type: ignore[return-value]


class ExportStore:
    """Transitions over a ``Database``.

    Args:
        db: the SQLite or MySQL database.
        ids: snowflake generator for task and outbox ids.
        topic: the command topic written into outbox rows, with ``MQ_TOPIC_PREFIX`` (§6.2).
        clock_label: returns an ISO-8601 instance-clock time, used only for the command's
            ``occurredAt`` label (§8.6 allows instance clocks for labels).
    """

    def __init__(
        self, db: Database, ids: IdGenerator, *, topic: str, clock_label: Any = None
    ) -> None:
        self.db = db
        self.ids = ids
        self.topic = topic
        self._sql = _Sql(db)
        self._label = clock_label or (lambda: datetime.now(UTC).isoformat(timespec="milliseconds"))

    @property
    def sql(self) -> Any:
        """The rendered SQL texts (for tests and for the reconciler)."""
        return self._sql

    # -- conversions --------------------------------------------------------------------

    def task_from_row(self, row: Mapping[str, Any]) -> Task:
        d = dict(row)
        d.pop("db_now", None)
        for key in _TASK_TIMES:
            d[key] = self.db.dialect.to_datetime(d.get(key))
        d["status"] = TaskStatus(d["status"])
        for key in ("id", "tenant_id", "requested_by"):
            d[key] = int(d[key])
        return Task(**d)

    def outbox_from_row(self, row: Mapping[str, Any]) -> OutboxRow:
        d = dict(row)
        for key in _OUTBOX_TIMES:
            d[key] = self.db.dialect.to_datetime(d.get(key))
        d["status"] = OutboxStatus(d["status"])
        d["id"] = int(d["id"])
        d["task_id"] = int(d["task_id"])
        if not isinstance(d["payload_json"], str):
            d["payload_json"] = json.dumps(d["payload_json"])
        return OutboxRow(**d)

    # -- basics -------------------------------------------------------------------------

    @retrying
    async def db_now(self) -> datetime:
        """The database clock (§8.6)."""
        async with self.db.transaction() as tx:
            row = await tx.fetchone(self._sql.DB_NOW)
        assert row is not None
        now = self.db.dialect.to_datetime(row["db_now"])
        assert now is not None
        return now

    @retrying
    async def check_guard_row(self) -> None:
        """Start-up check (§7.2): the ``GLOBAL_CREATE`` guard row must exist.

        Raises:
            ConfigError: the row is missing; task creation could not be serialised.
        """
        async with self.db.transaction() as tx:
            row = await tx.fetchone(self._sql.LOCK_CREATE_GUARD)
        if row is None:
            raise ConfigError(
                "file_export_task_guard has no GLOBAL_CREATE row; run `export-center migrate`"
            )

    @retrying
    async def get_task(self, task_id: int) -> Task | None:
        async with self.db.transaction() as tx:
            row = await tx.fetchone(self._sql.GET_TASK, {"id": task_id})
        return self.task_from_row(row) if row else None

    @retrying
    async def list_tasks(
        self,
        principal: Principal,
        *,
        all_users: bool,
        status: str | None,
        limit: int,
        offset: int,
    ) -> tuple[list[Task], int]:
        """Tasks visible to ``principal`` (§12 ownership), newest first, and the total."""
        params = {
            "tenant_id": principal.tenant_id,
            "app_code": principal.app_code.value,
            "requested_by": principal.user_id,
            "all_users": 1 if all_users else 0,
            "status": status,
            "limit": limit,
            "offset": offset,
        }
        async with self.db.transaction() as tx:
            rows = await tx.fetchall(self._sql.LIST_TASKS_SCOPED, params)
            total = await tx.fetchone(self._sql.COUNT_TASKS_SCOPED, params)
        return [self.task_from_row(r) for r in rows], int(total["n"]) if total else 0

    @retrying
    async def list_outbox(self, task_id: int) -> list[OutboxRow]:
        async with self.db.transaction() as tx:
            rows = await tx.fetchall(self._sql.LIST_OUTBOX_FOR_TASK, {"task_id": task_id})
        return [self.outbox_from_row(r) for r in rows]

    # -- create (§7.2, §14) -------------------------------------------------------------

    @retrying
    async def create_task(
        self, new: NewTask, limits: CreateLimits = _DEFAULT_LIMITS
    ) -> CreateResult:
        """Create a task and its first outbox row in one transaction under the guard lock.

        Order inside the transaction (§7.2): lock ``GLOBAL_CREATE``; 60-second duplicate
        check and active counts, decided by ``actors.core.admission.admit`` (duplicate →
        the existing active task; user limit, type limit, kept places → refused); insert
        task; insert outbox row (same version 1). Nothing is sent here (invariant 2).
        """
        p = new.principal
        async with self.db.transaction() as tx:
            await tx.fetchone(self._sql.LOCK_CREATE_GUARD)
            scope = {
                "tenant_id": p.tenant_id,
                "app_code": p.app_code.value,
                "requested_by": p.user_id,
            }
            dup = await tx.fetchone(
                self._sql.FIND_DUPLICATE_ACTIVE,
                {
                    **scope,
                    "export_type": new.export_type,
                    "parameters_hash": new.parameters.sha256,
                    "window_seconds": limits.duplicate_window_seconds,
                },
            )
            counts = await self._active_counts(tx, scope, new.export_type)
            outcome = admit(counts, limits, duplicate=dup is not None)
            if outcome == CreateOutcome.DUPLICATE:
                assert dup is not None
                return CreateResult(outcome, self.task_from_row(dup))
            if outcome != CreateOutcome.CREATED:
                return CreateResult(outcome, None)
            task_id = self.ids.next_id()
            await tx.execute(
                self._sql.INSERT_TASK,
                {
                    **scope,
                    "id": task_id,
                    "task_no": f"EXP{task_id}",
                    "export_type": new.export_type,
                    "task_name": new.task_name,
                    "format": new.format,
                    "parameters_json": new.parameters.json,
                    "parameters_hash": new.parameters.sha256,
                    "max_attempts": new.max_attempts,
                },
            )
            await self._insert_outbox(tx, task_id, new.export_type, 1, next_retry_at=None)
            row = await tx.fetchone(self._sql.GET_TASK, {"id": task_id})
        assert row is not None
        return CreateResult(CreateOutcome.CREATED, self.task_from_row(row))

    async def _active_counts(
        self, tx: Tx, scope: Mapping[str, Any], export_type: str
    ) -> ActiveCounts:
        """The admission counts for a requester (``scope``) and type, inside ``tx``."""
        row = await tx.fetchone(
            self._sql.COUNT_ACTIVE_FOR_ADMISSION, {**scope, "export_type": export_type}
        )
        assert row is not None
        return ActiveCounts(
            by_user=int(row["by_user"] or 0),
            by_type=int(row["by_type"] or 0),
            by_user_in_type=int(row["by_user_in_type"] or 0),
        )

    async def _insert_outbox(
        self, tx: Tx, task_id: int, export_type: str, version: int, next_retry_at: Any
    ) -> Command:
        """Insert the outbox row for (task, version); ``next_retry_at`` is a raw DB value
        to copy (§9.2 step 4) or ``None`` for "now". Raises DuplicateKeyError if a row for
        this version exists (the unique key, §7.2)."""
        cmd = Command.new(task_id, export_type, version, self._label())
        params = {
            "id": self.ids.next_id(),
            "event_id": cmd.event_id,
            "task_id": task_id,
            "dispatch_version": version,
            "topic": self.topic,
            "tag": COMMAND_TAG,
            "message_key": str(task_id),
            "payload_json": cmd.to_json(),
        }
        if next_retry_at is None:
            await tx.execute(self._sql.INSERT_OUTBOX_NOW, params)
        else:
            await tx.execute(self._sql.INSERT_OUTBOX_AT, {**params, "next_retry_at": next_retry_at})
        return cmd

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
        ``attempt_count`` already incremented."""
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
        """Step 2 of §7.4 for one row: the conditional claim, then the claimed row."""
        async with self.db.transaction() as tx:
            n = await tx.execute(
                self._sql.CLAIM_OUTBOX,
                {"id": outbox_id, "owner": owner, "lease_seconds": lease_seconds},
            )
            return await tx.fetchone(self._sql.GET_OUTBOX, {"id": outbox_id}) if n else None

    @retrying
    async def mark_outbox_sent(self, outbox_id: int, owner: str) -> bool:
        async with self.db.transaction() as tx:
            return (
                await tx.execute(self._sql.MARK_OUTBOX_SENT, {"id": outbox_id, "owner": owner}) == 1
            )

    @retrying
    async def mark_outbox_send_failed(
        self, outbox_id: int, owner: str, backoff_seconds: float, error: str
    ) -> bool:
        async with self.db.transaction() as tx:
            return (
                await tx.execute(
                    self._sql.MARK_OUTBOX_SEND_FAILED,
                    {
                        "id": outbox_id,
                        "owner": owner,
                        "backoff_seconds": backoff_seconds,
                        "last_error": error[:1000],
                    },
                )
                == 1
            )

    # -- consumer (§8.2 – §8.4, §9.2) ---------------------------------------------------

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
        the task is re-read and the branch classified (every branch acks)."""
        async with self.db.transaction() as tx:
            n = await tx.execute(
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
        if n == 1 and row is not None:
            return ClaimResult(self.task_from_row(row), None)
        if row is None:
            return ClaimResult(None, dispatch.NoClaim.TASK_MISSING)
        now = self.db.dialect.to_datetime(row["db_now"])
        assert now is not None
        return ClaimResult(
            None, dispatch.classify_no_claim(self.task_from_row(row), dispatch_version, now)
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
                self._sql.COUNT_RUNNING_BY_REQUESTER_OF_OWNER, {"owner": owner}
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
        return fairness.SlotLoad({requester(r): int(r["n"]) for r in running}, due_tasks)

    def _fence(self, task: Task, owner: str) -> dict[str, Any]:
        return {"id": task.id, "dispatch_version": task.dispatch_version, "owner": owner}

    @retrying
    async def renew_lease(self, task: Task, owner: str, lease_seconds: float) -> bool:
        """§8.3.1 renewal. False means: lease lost, version changed or deadline passed."""
        async with self.db.transaction() as tx:
            return (
                await tx.execute(
                    self._sql.RENEW_LEASE,
                    {**self._fence(task, owner), "lease_seconds": lease_seconds},
                )
                == 1
            )

    @retrying
    async def record_object_key(self, task: Task, owner: str, object_key: str) -> bool:
        """Record the key of the file this attempt is about to write (fenced)."""
        async with self.db.transaction() as tx:
            return (
                await tx.execute(
                    self._sql.RECORD_OBJECT_KEY,
                    {**self._fence(task, owner), "object_key": object_key},
                )
                == 1
            )

    @retrying
    async def report_progress(
        self, task: Task, owner: str, processed_rows: int, total_rows: int | None
    ) -> bool:
        async with self.db.transaction() as tx:
            return (
                await tx.execute(
                    self._sql.REPORT_PROGRESS,
                    {
                        **self._fence(task, owner),
                        "processed_rows": processed_rows,
                        "total_rows": total_rows,
                    },
                )
                == 1
            )

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
    ) -> bool:
        """§8.4 final commit, fenced by version, owner, status and deadline. False means
        the caller must delete its file."""
        async with self.db.transaction() as tx:
            return (
                await tx.execute(
                    self._sql.COMPLETE_TASK,
                    {
                        **self._fence(task, owner),
                        "file_name": file_name,
                        "object_key": object_key,
                        "content_type": content_type,
                        "size_bytes": size_bytes,
                        "total_rows": rows,
                        "processed_rows": rows,
                        "retention_seconds": retention_seconds,
                    },
                )
                == 1
            )

    @retrying
    async def fail_task(self, task: Task, owner: str, failure_message: str) -> bool:
        """Permanent failure (§9.1): FAILED at once, fenced."""
        async with self.db.transaction() as tx:
            return (
                await tx.execute(
                    self._sql.FAIL_TASK,
                    {**self._fence(task, owner), "failure_message": failure_message[:1000]},
                )
                == 1
            )

    @retrying
    async def schedule_retry(
        self, task: Task, owner: str, failure_message: str, backoff_seconds: float
    ) -> RetryOutcome:
        """Transient failure (§9.2) in one transaction: FAILED if the attempts are spent,
        else PENDING with ``dispatch_version + 1``, ``next_retry_at`` by DB time, progress
        reset, ``failure_message`` kept, and a new outbox row whose ``next_retry_at``
        equals the task's (so the publisher cannot send it early). The caller has already
        deleted its partial file (§9.5)."""
        fence = self._fence(task, owner)
        message = failure_message[:1000]
        async with self.db.transaction() as tx:
            row = await tx.fetchone(self._sql.GET_TASK, {"id": task.id})
            if (
                row is None
                or row["status"] != TaskStatus.RUNNING
                or row["dispatch_version"] != task.dispatch_version
                or row["lease_owner"] != owner
            ):
                return RetryOutcome.LOST
            if not should_retry(int(row["attempt_count"]), int(row["max_attempts"])):
                n = await tx.execute(self._sql.FAIL_TASK, {**fence, "failure_message": message})
                return RetryOutcome.FAILED if n == 1 else RetryOutcome.LOST
            n = await tx.execute(
                self._sql.SCHEDULE_RETRY,
                {**fence, "failure_message": message, "backoff_seconds": backoff_seconds},
            )
            if n != 1:
                return RetryOutcome.LOST
            after = await tx.fetchone(self._sql.GET_TASK, {"id": task.id})
            assert after is not None
            await self._insert_outbox(
                tx,
                task.id,
                task.export_type,
                int(after["dispatch_version"]),
                next_retry_at=after["next_retry_at"],
            )
        return RetryOutcome.SCHEDULED

    @retrying
    async def own_run_past_deadline(self, task: Task, owner: str) -> bool:
        """After a final commit matched 0 rows: is this still our RUNNING attempt whose
        deadline has passed (§8.4 → timeout retry), rather than a lost lease?"""
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

    # -- manual retry (§9.3) ------------------------------------------------------------

    @retrying
    async def manual_retry(
        self, task: Task, limits: CreateLimits = _DEFAULT_LIMITS
    ) -> tuple[CreateOutcome, Task | None]:
        """FAILED → PENDING with a new version and a new outbox row, attempts reset (§9.3).

        Runs under the create guard and applies the same admission as a create (without
        the duplicate check) to the task's requester and type, so retries cannot exceed
        what creates may. Returns (CREATED, task) on success, (USER_LIMIT | TYPE_LIMIT |
        TYPE_RESERVED, None) when admission refuses, and (DUPLICATE, None) if the task
        was no longer FAILED at that version (a concurrent retry won). Authorisation and
        ``enabled`` are checked by the caller; the caller deletes any leftover file.
        """
        async with self.db.transaction() as tx:
            await tx.fetchone(self._sql.LOCK_CREATE_GUARD)
            scope = {
                "tenant_id": task.tenant_id,
                "app_code": task.app_code,
                "requested_by": task.requested_by,
            }
            outcome = admit(await self._active_counts(tx, scope, task.export_type), limits)
            if outcome != CreateOutcome.CREATED:
                return outcome, None
            n = await tx.execute(
                self._sql.MANUAL_RETRY, {"id": task.id, "dispatch_version": task.dispatch_version}
            )
            if n != 1:
                return CreateOutcome.DUPLICATE, None
            try:
                await self._insert_outbox(
                    tx, task.id, task.export_type, task.dispatch_version + 1, next_retry_at=None
                )
            except DuplicateKeyError:
                pass  # a row for this version exists already: the unique key absorbed it
            row = await tx.fetchone(self._sql.GET_TASK, {"id": task.id})
        assert row is not None
        return CreateOutcome.CREATED, self.task_from_row(row)

    # -- embedded start-up and shutdown -------------------------------------------------

    @retrying
    async def requeue_sent_of_pending_tasks(self) -> int:
        """At start-up of an embedded instance: SENT rows whose task is still PENDING at
        that version go back to PENDING (same row, same version), because the in-process
        bus that held them is gone. A duplicate, if another process still holds one, is
        absorbed by the claim. Returns rows requeued."""
        async with self.db.transaction() as tx:
            return await tx.execute(self._sql.REQUEUE_SENT_OF_PENDING_TASKS)

    @retrying
    async def release_lease(self, task: Task, owner: str) -> bool:
        """Hand a RUNNING task back after a shutdown cancelled its run: PENDING at a new
        version with a new outbox row, the attempt not counted. Fenced; False if the
        lease was already lost."""
        async with self.db.transaction() as tx:
            n = await tx.execute(self._sql.RELEASE_LEASE, self._fence(task, owner))
            if n != 1:
                return False
            await self._insert_outbox(
                tx, task.id, task.export_type, task.dispatch_version + 1, next_retry_at=None
            )
        return True

    # -- reconciler (§8.5, §15) ---------------------------------------------------------

    async def redispatch_missing_outbox(self, grace_seconds: float, limit: int) -> int:
        """Case A of §8.5-1: PENDING tasks past the grace with no outbox row for their
        current version get one, *same version*. The unique key absorbs a racing insert.
        Returns rows inserted."""
        async with self.db.transaction() as tx:
            rows = await tx.fetchall(
                self._sql.SELECT_TASKS_WITHOUT_OUTBOX,
                {"grace_seconds": grace_seconds, "limit": limit},
            )
        inserted = 0
        for r in rows:
            try:
                async with self.db.transaction() as tx:
                    await self._insert_outbox(
                        tx,
                        int(r["id"]),
                        r["export_type"],
                        int(r["dispatch_version"]),
                        next_retry_at=None,
                    )
                inserted += 1
            except (DuplicateKeyError, RetryableDatabaseError):
                pass  # already there, or rolled back: the next pass sees it again
        return inserted

    async def redispatch_stale_sent(
        self, stale_seconds: float, grace_seconds: float, limit: int
    ) -> int:
        """Case B of §8.5-1: a SENT row whose task is still PENDING at that version after
        ``stale_seconds`` goes back to PENDING (same row, same version). Returns rows reset."""
        params = {"stale_seconds": stale_seconds, "grace_seconds": grace_seconds}
        async with self.db.transaction() as tx:
            ids = [
                r["id"]
                for r in await tx.fetchall(
                    self._sql.SELECT_STALE_SENT_OUTBOX, {**params, "limit": limit}
                )
            ]
        reset = 0
        for outbox_id in ids:
            try:
                async with self.db.transaction() as tx:
                    reset += await tx.execute(
                        self._sql.REDISPATCH_STALE_SENT, {**params, "id": outbox_id}
                    )
            except RetryableDatabaseError:
                continue  # the next pass sees it again
        return reset

    @retrying
    async def expired_leases(self, limit: int) -> list[Task]:
        """RUNNING tasks whose lease has expired by DB time (§8.5-2)."""
        async with self.db.transaction() as tx:
            rows = await tx.fetchall(self._sql.SELECT_EXPIRED_LEASES, {"limit": limit})
        return [self.task_from_row(r) for r in rows]

    @retrying
    async def recover_expired_lease(
        self, task: Task, failure_message: str, exhausted_message: str
    ) -> RetryOutcome:
        """§8.5-2 for one task, in one transaction: new version + new outbox row if
        attempts remain, else FAILED. ``LOST`` if the lease was renewed meanwhile."""
        params = {"id": task.id, "dispatch_version": task.dispatch_version}
        async with self.db.transaction() as tx:
            if should_retry(task.attempt_count, task.max_attempts):
                n = await tx.execute(
                    self._sql.RECOVER_LEASE_RETRY,
                    {**params, "failure_message": failure_message[:1000]},
                )
                if n != 1:
                    return RetryOutcome.LOST
                await self._insert_outbox(
                    tx, task.id, task.export_type, task.dispatch_version + 1, next_retry_at=None
                )
                return RetryOutcome.SCHEDULED
            n = await tx.execute(
                self._sql.RECOVER_LEASE_FAIL,
                {**params, "failure_message": exhausted_message[:1000]},
            )
            return RetryOutcome.FAILED if n == 1 else RetryOutcome.LOST

    @retrying
    async def release_expired_outbox_claims(self) -> int:
        """§8.5-3: CLAIMED rows whose publisher lease expired go back to PENDING."""
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
        async with self.db.transaction() as tx:
            return await tx.execute(self._sql.MARK_EXPIRED, {"id": task_id}) == 1

    @retrying
    async def file_is_referenced(self, task_id: int, object_key: str) -> bool:
        """Is ``object_key`` the file of a SUCCEEDED task or of a RUNNING attempt?"""
        async with self.db.transaction() as tx:
            row = await tx.fetchone(self._sql.GET_TASK_FILE_STATE, {"id": task_id})
        return (
            row is not None
            and row["object_key"] == object_key
            and row["status"] in (TaskStatus.SUCCEEDED, TaskStatus.RUNNING)
        )

    @retrying
    async def prune_sent_outbox(self, retention_seconds: float, chunk: int = 5000) -> int:
        """Delete SENT rows older than the retention, at most ``chunk`` (§15)."""
        params = {"retention_seconds": retention_seconds}
        async with self.db.transaction() as tx:
            bound = await tx.fetchone(self._sql.SELECT_PRUNE_BOUND, {**params, "offset": chunk - 1})
            if bound is None:  # fewer than ``chunk`` candidates: delete them all
                bound = {"id": 2**63 - 1}
            return await tx.execute(self._sql.PRUNE_SENT_OUTBOX, {**params, "max_id": bound["id"]})

    @retrying
    async def sample_queues(self) -> QueueSample:
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

    # -- DLQ (§9.4.2) -------------------------------------------------------------------

    @retrying
    async def quarantine(
        self, event_id: str, task_id: int, dispatch_version: int, reason: str
    ) -> QuarantineOutcome:
        """Quarantine the outbox row and fail the task in one transaction, asserting one
        row each; on any other count roll back and report a mismatch (a stale version or
        a foreign event id must not touch the current attempt)."""

        class _Mismatch(Exception):
            pass

        try:
            async with self.db.transaction() as tx:
                n1 = await tx.execute(
                    self._sql.QUARANTINE_OUTBOX,
                    {
                        "event_id": event_id,
                        "task_id": task_id,
                        "dispatch_version": dispatch_version,
                        "last_error": f"DLQ quarantine: {reason}"[:1000],
                    },
                )
                n2 = await tx.execute(
                    self._sql.FAIL_QUARANTINED_TASK,
                    {
                        "id": task_id,
                        "dispatch_version": dispatch_version,
                        "failure_message": "the export command message was corrupted; "
                        "please start the export again",
                    },
                )
                if n1 != 1 or n2 != 1:
                    raise _Mismatch
        except _Mismatch:
            return QuarantineOutcome.MISMATCH
        return QuarantineOutcome.QUARANTINED
