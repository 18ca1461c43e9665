"""The export store: every state transition of tasks and outbox rows, dialect-neutral.

Each public method is one transaction built from the SQL texts in ``db.transitions``. The
store makes no decisions of its own beyond the ones the seed puts inside a transaction
(limits under the guard lock, the attempt ceiling of an automatic retry); the decisions are
pure functions in ``actors.core`` and the actors carry them out.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import logging
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, TypeVar

import trio

from actors.core import dispatch, fairness
from actors.core.admission import ActiveCounts, CreateLimits, admit
from actors.core.backoff import should_retry
from actors.core.db_retry import DbFault, DbRetryPolicy, db_retry_delay
from actors.core.errors import ConfigError
from actors.core.ids import IdGenerator
from actors.core.models import (
    COMMAND_TAG,
    Command,
    OutboxRow,
    OutboxStatus,
    Principal,
    Task,
    TaskStatus,
)
from actors.core.outcomes import (
    ClaimResult,
    CreateOutcome,
    CreateResult,
    NewTask,
    QuarantineOutcome,
    QueueSample,
    RetryOutcome,
)
from db import transitions as T
from db.database import (
    Database,
    DuplicateKeyError,
    RetryableDatabaseError,
    TransientDatabaseError,
    Tx,
)

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


_DEFAULT_LIMITS = CreateLimits()

#: Retry budget of the display-only progress write, seconds: one immediate retry on a fresh
#: connection fits; a database that is down is not waited for (the run goes on).
PROGRESS_RETRY_SECONDS = 0.5

#: True while a transition re-runs after a lost COMMIT (``CommitUnknownError``) in the
#: same call: the earlier attempt may have landed, so a 0-row answer may be its own work.
_REPLAY: ContextVar[bool] = ContextVar("export_store_replay", default=False)


def _replaying() -> bool:
    """Is this attempt a re-run after a commit whose outcome was lost?"""
    return _REPLAY.get()


class DbHealth:
    """The database's health as this process's store sees it, for operators: one WARNING
    when transitions start failing on connection faults, one when they work again (with
    how long the blip lasted), instead of one line per attempt. Shared by every copy of
    a store (``ExportStore.with_retry_budget``).

    Attributes:
        faulty_since: ``trio.current_time()`` of the first fault of the current blip, or
            ``None`` while healthy.
        blips: durations of the blips seen so far, seconds (the last 100).
        faults: connection-level faults seen in total.
    """

    def __init__(self) -> None:
        self.faulty_since: float | None = None
        self.blips: list[float] = []
        self.faults = 0
        self._attempts_in_blip = 0

    def fault(self, where: str, exc: TransientDatabaseError, budget: float) -> None:
        self.faults += 1
        self._attempts_in_blip += 1
        if self.faulty_since is None:
            self.faulty_since = trio.current_time()
            log.warning(
                "database fault in %s (%s: %s); store transitions retry for up to %gs",
                where,
                exc.fault.value,
                exc,
                budget,
            )

    def ok(self) -> None:
        if self.faulty_since is None:
            return
        lasted = trio.current_time() - self.faulty_since
        self.blips = [*self.blips[-99:], lasted]
        log.warning(
            "database reachable again after %.2fs (%d failed attempts)",
            lasted,
            self._attempts_in_blip,
        )
        self.faulty_since = None
        self._attempts_in_blip = 0


def retrying(method: F | None = None, *, budget: float | None = None) -> Any:
    """Re-run a transition whose attempt hit a ``TransientDatabaseError``, as long as
    ``actors.core.db_retry.db_retry_delay`` allows: deadlocks a few times, fast;
    connection faults (a killed or dead connection, a server restarting, a lost COMMIT)
    until the store's retry budget (``FILE_EXPORT_DB_RETRY_SECONDS``) or the caller's
    trio deadline, whichever comes first — never sleeping into a cancellation.

    Safe because a decorated method is one transaction (or a sequence of independently
    safe ones) whose effects roll back together when it fails before COMMIT; after a lost
    COMMIT each method tells "my earlier attempt landed" from "someone else changed it"
    by re-reading state, as its docstring explains (``_replaying()`` is true then).

    Args:
        budget: seconds, to use a shorter budget than the store's for this method (a
            display-only write that should be skipped rather than waited for).
    """

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        async def wrapper(self: ExportStore, *args: Any, **kwargs: Any) -> Any:
            policy = self.retry_policy
            if budget is not None and budget < policy.budget_seconds:
                policy = dataclasses.replace(policy, budget_seconds=budget)
            started = trio.current_time()
            replay = False
            attempt = 0
            while True:
                attempt += 1
                token = _REPLAY.set(replay)
                try:
                    result = await fn(self, *args, **kwargs)
                except TransientDatabaseError as exc:
                    now = trio.current_time()
                    delay = db_retry_delay(
                        exc.fault,
                        attempt,
                        now - started,
                        random.random(),
                        policy,
                        trio.current_effective_deadline() - now,
                    )
                    if exc.fault == DbFault.ROLLED_BACK:
                        log.info(
                            "%s rolled back by the database (attempt %d)", fn.__name__, attempt
                        )
                    else:
                        self.health.fault(fn.__name__, exc, policy.budget_seconds)
                    if delay is None:
                        log.info(
                            "%s gave up after %d attempts over %.2fs: %s",
                            fn.__name__,
                            attempt,
                            now - started,
                            exc,
                        )
                        raise
                    replay = replay or exc.fault == DbFault.COMMIT_UNKNOWN
                    await trio.sleep(delay)
                    continue
                finally:
                    _REPLAY.reset(token)
                self.health.ok()
                return result

        return wrapper  # type: ignore[return-value]

    return decorate(method) if method is not None else decorate


class ExportStore:
    """Transitions over a ``Database``.

    Every public method retries database faults (``retrying``). Reads are safe to re-run
    because they write nothing; each writing transition's docstring says why re-running
    it after a lost COMMIT gives the same answer.

    Args:
        db: the SQLite or MySQL database.
        ids: snowflake generator for task and outbox ids.
        topic: the command topic written into outbox rows, with ``MQ_TOPIC_PREFIX`` (§6.2).
        clock_label: returns an ISO-8601 instance-clock time, used only for the command's
            ``occurredAt`` label (§8.6 allows instance clocks for labels).
        retry_policy: how transitions retry database faults (``actors.core.db_retry``).
    """

    def __init__(
        self,
        db: Database,
        ids: IdGenerator,
        *,
        topic: str,
        clock_label: Any = None,
        retry_policy: DbRetryPolicy | None = None,
    ) -> None:
        self.db = db
        self.ids = ids
        self.topic = topic
        self.retry_policy = retry_policy or DbRetryPolicy()
        self.health = DbHealth()
        self._sql = _Sql(db)
        self._label = clock_label or (lambda: datetime.now(UTC).isoformat(timespec="milliseconds"))

    def with_retry_budget(self, seconds: float) -> ExportStore:
        """The same store (same database, ids, health) whose transitions give up on
        connection faults after ``seconds`` instead of the configured budget: for callers
        that would rather answer "try again" than wait, such as HTTP requests."""
        other = copy.copy(self)
        other.retry_policy = dataclasses.replace(self.retry_policy, budget_seconds=seconds)
        return other

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
        """Tasks visible to ``principal`` (§12 ownership), newest first, and the total.

        Args:
            all_users: every requester of the principal's tenant and app, not only the
                principal's own tasks.
            status: only tasks in this status; ``None`` for all.
            limit: page size, rows.
            offset: rows to skip.

        Each combination of filters has its own statement and index (``db.transitions``),
        so a page costs the same however many tasks the tenant has finished."""
        params: dict[str, Any] = {
            "tenant_id": principal.tenant_id,
            "app_code": principal.app_code.value,
            "limit": limit,
            "offset": offset,
        }
        if not all_users:
            params["requested_by"] = principal.user_id
        if status is not None:
            params["status"] = status
        sql = self._sql
        page_sql, count_sql = {
            (False, False): (sql.LIST_TASKS_OF_REQUESTER, sql.COUNT_TASKS_OF_REQUESTER),
            (False, True): (
                sql.LIST_TASKS_OF_REQUESTER_IN_STATUS,
                sql.COUNT_TASKS_OF_REQUESTER_IN_STATUS,
            ),
            (True, False): (sql.LIST_TASKS_OF_SCOPE, sql.COUNT_TASKS_OF_SCOPE),
            (True, True): (sql.LIST_TASKS_OF_SCOPE_IN_STATUS, sql.COUNT_TASKS_OF_SCOPE_IN_STATUS),
        }[(all_users, status is not None)]
        async with self.db.transaction() as tx:
            rows = await tx.fetchall(page_sql, params)
            total = await tx.fetchone(count_sql, params)
        return [self.task_from_row(r) for r in rows], int(total["n"]) if total else 0

    @retrying
    async def list_outbox(self, task_id: int) -> list[OutboxRow]:
        async with self.db.transaction() as tx:
            rows = await tx.fetchall(self._sql.LIST_OUTBOX_FOR_TASK, {"task_id": task_id})
        return [self.outbox_from_row(r) for r in rows]

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
            if _replaying() and (mine := await tx.fetchone(self._sql.GET_TASK, {"id": task_id})):
                return CreateResult(CreateOutcome.CREATED, self.task_from_row(mine))
            scope = {
                "tenant_id": p.tenant_id,
                "app_code": p.app_code.value,
                "requested_by": p.user_id,
            }
            duplicates = await tx.fetchall(
                self._sql.FIND_DUPLICATE_ACTIVE,
                {
                    **scope,
                    "export_type": new.export_type,
                    "parameters_hash": new.parameters.sha256,
                    "window_seconds": limits.duplicate_window_seconds,
                },
            )
            # The newest, should a manual retry have made two of them active.
            dup = max(duplicates, key=lambda r: int(r["id"]), default=None)
            counts = await self._active_counts(tx, scope, new.export_type)
            outcome = admit(counts, limits, duplicate=dup is not None)
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

    def _new_command(self, task: Task, version: int) -> tuple[Command, int]:
        """A command and an outbox id for ``task`` at ``version``, drawn before a
        transition's first attempt so that a re-run after a lost COMMIT can look for its
        own row (``_outbox_landed``)."""
        return Command.new(task.id, task.export_type, version, self._label()), self.ids.next_id()

    async def _outbox_landed(self, tx: Tx, cmd: Command) -> bool:
        """Is the outbox row of ``cmd`` (its unique event id) written?"""
        return (
            await tx.fetchone(self._sql.GET_OUTBOX_BY_EVENT, {"event_id": cmd.event_id}) is not None
        )

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
        self,
        tx: Tx,
        task_id: int,
        export_type: str,
        version: int,
        next_retry_at: Any,
        *,
        drawn: tuple[Command, int] | None = None,
    ) -> Command:
        """Insert the outbox row for (task, version); ``next_retry_at`` is a raw DB value
        to copy (§9.2 step 4) or ``None`` for "now"; ``drawn`` is a command and id drawn by
        ``_new_command`` (else new ones). Raises DuplicateKeyError if a row for this
        version exists (the unique key, §7.2)."""
        if drawn is not None:
            cmd, outbox_id = drawn
            assert (cmd.task_id, cmd.dispatch_version) == (task_id, version)
        else:
            cmd, outbox_id = Command.new(task_id, export_type, version, self._label()), None
        params = {
            "id": outbox_id or self.ids.next_id(),
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
            n = await tx.execute(
                self._sql.CLAIM_OUTBOX,
                {"id": outbox_id, "owner": owner, "lease_seconds": lease_seconds},
            )
            row = await tx.fetchone(self._sql.GET_OUTBOX, {"id": outbox_id})
        if n or (
            _replaying()
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
            n = await tx.execute(self._sql.MARK_OUTBOX_SENT, {"id": outbox_id, "owner": owner})
            if n == 1:
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
        the task is re-read and the branch classified (every branch acks).

        Re-run: a claim whose COMMIT answer was lost may have landed. The re-run then
        matches 0 rows and finds the task RUNNING at this version under ``owner``; that is
        this call's own claim, returned as claimed, so the task neither runs twice nor
        waits for its lease to expire. This relies on the caller: no other executor of
        this process may claim the same task meanwhile (the consumer slots share a
        registry of the tasks they hold, ``actors.local_claims.LocalClaims``)."""
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
        task = self.task_from_row(row)
        if (
            _replaying()
            and task.status == TaskStatus.RUNNING
            and task.dispatch_version == dispatch_version
            and task.lease_owner == owner
        ):
            return ClaimResult(task, None)
        now = self.db.dialect.to_datetime(row["db_now"])
        assert now is not None
        return ClaimResult(None, dispatch.classify_no_claim(task, dispatch_version, now))

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

    def _fence(self, task: Task, owner: str) -> dict[str, Any]:
        return {"id": task.id, "dispatch_version": task.dispatch_version, "owner": owner}

    async def _now_in(self, tx: Tx, task: Task, status: TaskStatus, **fields: Any) -> bool:
        """Is ``task`` now in ``status`` at its own ``dispatch_version``, with these column
        values? How a transition that matched 0 rows recognises its own earlier attempt
        whose COMMIT answer was lost."""
        row = await tx.fetchone(self._sql.GET_TASK, {"id": task.id})
        return (
            row is not None
            and row["status"] == status
            and int(row["dispatch_version"]) == task.dispatch_version
            and all(row[k] == v for k, v in fields.items())
        )

    @retrying
    async def renew_lease(self, task: Task, owner: str, lease_seconds: float) -> bool:
        """§8.3.1 renewal. False means: lease lost, version changed or deadline passed.

        Re-run: the fenced update matches the same row again (rows *matched* are counted)
        and only moves the lease a little further: same answer."""
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
        """Record the key of the file this attempt is about to write (fenced).

        Re-run: writes the same key into the same row again: same answer."""
        async with self.db.transaction() as tx:
            return (
                await tx.execute(
                    self._sql.RECORD_OBJECT_KEY,
                    {**self._fence(task, owner), "object_key": object_key},
                )
                == 1
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
        total_rows: int | None = None,
    ) -> bool:
        """§8.4 final commit, fenced by version, owner, status and deadline. False means
        the caller must delete its file.

        ``rows`` becomes ``processed_rows``; ``total_rows`` (default: ``rows``) keeps a
        Provider's announced figure when fewer rows came than it announced (§10.2).

        Re-run: a commit that landed before its answer was lost makes the fenced update
        match 0 rows the second time — and the caller would then delete the file a
        SUCCEEDED task references. So a 0-row answer re-reads the task: SUCCEEDED at this
        version with *this* ``object_key`` (a fresh key per attempt, so no one else's)
        means the commit is ours, and the answer is True."""
        async with self.db.transaction() as tx:
            n = await tx.execute(
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
                },
            )
            return n == 1 or await self._now_in(
                tx, task, TaskStatus.SUCCEEDED, object_key=object_key
            )

    @retrying
    async def fail_task(self, task: Task, owner: str, failure_message: str) -> bool:
        """Permanent failure (§9.1): FAILED at once, fenced. True if this call failed it.

        Re-run: after a commit that landed, the update matches 0 rows; the re-read finds
        the task FAILED at this version with exactly this message (the reconciler and the
        DLQ handler write messages of their own), so the answer is True again."""
        message = failure_message[:1000]
        async with self.db.transaction() as tx:
            n = await tx.execute(
                self._sql.FAIL_TASK, {**self._fence(task, owner), "failure_message": message}
            )
            return n == 1 or await self._now_in(
                tx, task, TaskStatus.FAILED, failure_message=message
            )

    async def schedule_retry(
        self, task: Task, owner: str, failure_message: str, backoff_seconds: float
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
        return await self._schedule_retry(task, owner, failure_message, backoff_seconds, drawn)

    @retrying
    async def _schedule_retry(
        self,
        task: Task,
        owner: str,
        failure_message: str,
        backoff_seconds: float,
        drawn: tuple[Command, int],
    ) -> RetryOutcome:
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
                if await self._outbox_landed(tx, drawn[0]):
                    return RetryOutcome.SCHEDULED
                if await self._now_in(tx, task, TaskStatus.FAILED, failure_message=message):
                    return RetryOutcome.FAILED
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
                drawn=drawn,
            )
        return RetryOutcome.SCHEDULED

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

    # -- manual retry (§9.3) ------------------------------------------------------------

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

        Re-run: the new version's command is drawn once, before the first attempt. A
        re-run after a lost COMMIT first looks for its outbox row by event id: found, the
        retry landed and is CREATED (not refused by the limits it now fills, nor reported
        as a concurrent retry).
        """
        drawn = self._new_command(task, task.dispatch_version + 1)
        return await self._manual_retry(task, limits, drawn)

    @retrying
    async def _manual_retry(
        self, task: Task, limits: CreateLimits, drawn: tuple[Command, int]
    ) -> tuple[CreateOutcome, Task | None]:
        async with self.db.transaction() as tx:
            await tx.fetchone(self._sql.LOCK_CREATE_GUARD)
            if _replaying() and await self._outbox_landed(tx, drawn[0]):
                row = await tx.fetchone(self._sql.GET_TASK, {"id": task.id})
                assert row is not None
                return CreateOutcome.CREATED, self.task_from_row(row)
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
                    tx,
                    task.id,
                    task.export_type,
                    task.dispatch_version + 1,
                    next_retry_at=None,
                    drawn=drawn,
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
        absorbed by the claim. Returns rows requeued.

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

    async def release_lease(self, task: Task, owner: str) -> bool:
        """Hand a RUNNING task back without counting its attempt: PENDING at a new
        version with a new outbox row. Used when a shutdown or a database outage, not the
        export, ended the run. Fenced; False if the lease was already lost.

        Re-run: the command is drawn once, before the first attempt; after a commit that
        landed the fenced update matches 0 rows and the re-read finds the outbox row by
        its event id: True again."""
        drawn = self._new_command(task, task.dispatch_version + 1)
        return await self._release_lease(task, owner, drawn)

    @retrying
    async def _release_lease(self, task: Task, owner: str, drawn: tuple[Command, int]) -> bool:
        async with self.db.transaction() as tx:
            n = await tx.execute(self._sql.RELEASE_LEASE, self._fence(task, owner))
            if n != 1:
                return await self._outbox_landed(tx, drawn[0])
            await self._insert_outbox(
                tx,
                task.id,
                task.export_type,
                task.dispatch_version + 1,
                next_retry_at=None,
                drawn=drawn,
            )
        return True

    # -- reconciler (§8.5, §15) ---------------------------------------------------------

    async def redispatch_missing_outbox(self, grace_seconds: float, limit: int) -> int:
        """Case A of §8.5-1: PENDING tasks past the grace with no outbox row for their
        current version get one, *same version*. The unique key absorbs a racing insert.
        Returns rows inserted.

        Re-run: each insert is its own transaction; after one that landed, the re-run hits
        the unique key on task and version and counts nothing (the count is for metrics).
        A row that keeps deadlocking is left for the next pass."""
        rows = await self._tasks_without_outbox(grace_seconds, limit)
        inserted = 0
        for task_id, export_type, version in rows:
            try:
                inserted += await self._redispatch_one(task_id, export_type, version)
            except RetryableDatabaseError:
                pass  # rolled back: the next pass sees it again
        return inserted

    @retrying
    async def _tasks_without_outbox(
        self, grace_seconds: float, limit: int
    ) -> list[tuple[int, str, int]]:
        async with self.db.transaction() as tx:
            rows = await tx.fetchall(
                self._sql.SELECT_TASKS_WITHOUT_OUTBOX,
                {"grace_seconds": grace_seconds, "limit": limit},
            )
        return [(int(r["id"]), r["export_type"], int(r["dispatch_version"])) for r in rows]

    @retrying
    async def _redispatch_one(self, task_id: int, export_type: str, version: int) -> int:
        try:
            async with self.db.transaction() as tx:
                await self._insert_outbox(tx, task_id, export_type, version, next_retry_at=None)
        except DuplicateKeyError:
            return 0  # already there
        return 1

    async def redispatch_stale_sent(
        self, stale_seconds: float, grace_seconds: float, limit: int
    ) -> int:
        """Case B of §8.5-1: a SENT row whose task is still PENDING at that version after
        ``stale_seconds`` goes back to PENDING (same row, same version). Returns rows reset.

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
                n = await tx.execute(
                    self._sql.RECOVER_LEASE_RETRY,
                    {**params, "failure_message": failure_message[:1000]},
                )
                if n != 1:
                    landed = await self._outbox_landed(tx, drawn[0])
                    return RetryOutcome.SCHEDULED if landed else RetryOutcome.LOST
                await self._insert_outbox(
                    tx,
                    task.id,
                    task.export_type,
                    task.dispatch_version + 1,
                    next_retry_at=None,
                    drawn=drawn,
                )
                return RetryOutcome.SCHEDULED
            n = await tx.execute(
                self._sql.RECOVER_LEASE_FAIL, {**params, "failure_message": exhausted}
            )
            if n == 1 or (
                _replaying()
                and await self._now_in(tx, task, TaskStatus.FAILED, failure_message=exhausted)
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
        a foreign event id must not touch the current attempt).

        Re-run: after a commit that landed both updates would match 0 rows (a mismatch);
        so a re-run after a lost COMMIT first re-reads the row of ``event_id``: QUARANTINED
        for this task and version, with the task FAILED at that version, is this call's
        own work, reported as QUARANTINED."""

        class _Mismatch(Exception):
            pass

        try:
            async with self.db.transaction() as tx:
                if _replaying():
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
