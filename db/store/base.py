"""What every group of store transitions shares: the database, the rendered SQL, the
retry policy, and the few steps several transitions take inside their transaction."""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Self

from actors.core.command_message import COMMAND_TAG, Command, message_key
from actors.core.db_retry import DbRetryPolicy
from actors.core.errors import ConfigError
from actors.core.events import TaskEventKind, detail_json
from actors.core.models import OutboxRow, Task, TaskStatus
from db import transitions
from db.database import Database, Tx
from db.ids import IdGenerator
from db.store.retry import DbHealth, retrying
from db.store.rows import outbox_from_row, task_from_row


async def fenced(tx: Tx, sql: str, params: Mapping[str, Any]) -> bool:
    """Run a fenced transition: did it apply to exactly one row?

    Every fenced statement names its row by id and its expected state (version, owner,
    status, deadline), so it matches one row or none; ``False`` is the mismatch the
    caller reports (a lost lease, a concurrent change), or re-reads to tell its own
    earlier attempt from someone else's change. Rows *matched* are counted, not rows
    changed (``db.database.Tx.execute``).
    """
    return await tx.execute(sql, params) == 1


class StoreBase:
    """Transitions over a ``Database``; the groups in ``db.store`` build on this.

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
        clock_label: Callable[[], str] | None = None,
        retry_policy: DbRetryPolicy | None = None,
    ) -> None:
        self.db = db
        self.ids = ids
        self.topic = topic
        self.retry_policy = retry_policy or DbRetryPolicy()
        self.health = DbHealth()
        self._sql = transitions.TEMPLATES.render(db.dialect)
        self._label = clock_label or (lambda: datetime.now(UTC).isoformat(timespec="milliseconds"))

    def with_retry_budget(self, seconds: float) -> Self:
        """The same store (same database, ids, health) whose transitions give up on
        connection faults after ``seconds`` instead of the configured budget: for callers
        that would rather answer "try again" than wait, such as HTTP requests."""
        other = copy.copy(self)
        other.retry_policy = dataclasses.replace(self.retry_policy, budget_seconds=seconds)
        return other

    @property
    def sql(self) -> transitions.Statements:
        """The SQL texts rendered for this store's dialect (for tests and tools)."""
        return self._sql

    # -- conversions --------------------------------------------------------------------

    def task_from_row(self, row: Mapping[str, Any]) -> Task:
        """A task row as a ``Task`` (``db.store.rows``)."""
        return task_from_row(row, self.db.dialect)

    def outbox_from_row(self, row: Mapping[str, Any]) -> OutboxRow:
        """An outbox row as an ``OutboxRow`` (``db.store.rows``)."""
        return outbox_from_row(row, self.db.dialect)

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

    # -- steps shared by transitions ------------------------------------------------------

    def _new_command(self, task: Task, version: int) -> tuple[Command, int]:
        """A command and an outbox id for ``task`` at ``version``, drawn before a
        transition's first attempt so that a re-run after a lost COMMIT can look for its
        own row (``_outbox_landed``). The command carries the task's trace id."""
        cmd = Command.new(
            task.id, task.export_type, version, self._label(), task.trace_id, rand=os.urandom
        )
        return cmd, self.ids.next_id()

    async def _outbox_landed(self, tx: Tx, cmd: Command) -> bool:
        """Is the outbox row of ``cmd`` (its unique event id) written?"""
        return (
            await tx.fetchone(self._sql.GET_OUTBOX_BY_EVENT, {"event_id": cmd.event_id}) is not None
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
        trace_id: str | None = None,
    ) -> Command:
        """Insert the outbox row for (task, version); ``next_retry_at`` is a raw DB value
        to copy (§9.2 step 4) or ``None`` for "now"; ``drawn`` is a command and id drawn by
        ``_new_command`` (else new ones, carrying ``trace_id``, the task's). Raises
        DuplicateKeyError if a row for this version exists (the unique key, §7.2)."""
        if drawn is not None:
            cmd, outbox_id = drawn
            assert (cmd.task_id, cmd.dispatch_version) == (task_id, version)
        else:
            cmd = Command.new(
                task_id, export_type, version, self._label(), trace_id, rand=os.urandom
            )
            outbox_id = None
        params = {
            "id": outbox_id or self.ids.next_id(),
            "event_id": cmd.event_id,
            "task_id": task_id,
            "dispatch_version": version,
            "topic": self.topic,
            "tag": COMMAND_TAG,
            "message_key": message_key(task_id),
            "payload_json": cmd.to_json(),
        }
        if next_retry_at is None:
            await tx.execute(self._sql.INSERT_OUTBOX_NOW, params)
        else:
            await tx.execute(self._sql.INSERT_OUTBOX_AT, {**params, "next_retry_at": next_retry_at})
        return cmd

    async def _insert_drawn_outbox(
        self, tx: Tx, drawn: tuple[Command, int], next_retry_at: Any = None
    ) -> Command:
        """Insert the outbox row of a command drawn by ``_new_command`` before the
        transaction: its task, type and version are the command's."""
        cmd = drawn[0]
        return await self._insert_outbox(
            tx, cmd.task_id, cmd.export_type, cmd.dispatch_version, next_retry_at, drawn=drawn
        )

    async def _record(self, tx: Tx, task_id: int, kind: TaskEventKind, **detail: Any) -> None:
        """Append an event to the task's history inside ``tx``: it commits or rolls back
        with the transition it records (``actors.core.events``)."""
        await tx.execute(
            self._sql.INSERT_TASK_EVENT,
            {"task_id": task_id, "kind": kind.value, "detail_json": detail_json(**detail)},
        )

    def _iso(self, value: Any) -> str | None:
        """A DB time value as ISO-8601 UTC text with milliseconds, for an event's detail."""
        at = self.db.dialect.to_datetime(value)
        return None if at is None else at.isoformat(timespec="milliseconds")

    def _fence(self, task: Task, owner: str) -> dict[str, Any]:
        """The parameters that fence an executor's write to its own attempt."""
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
