"""Ports: the interfaces the actors and the routes are given, implemented outside the core.

Each is a ``typing.Protocol``: an implementation conforms by its methods alone, without
importing this module.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, Self

from actors.core.admission import CreateLimits
from actors.core.fairness import SlotLoad
from actors.core.models import OutboxRow, Principal, Task
from actors.core.outcomes import (
    ClaimResult,
    CreateOutcome,
    CreateResult,
    NewTask,
    QuarantineOutcome,
    QueueSample,
    RetryOutcome,
)

# -- store ports: what each caller uses of the store ------------------------------------
#
# ``db.store.ExportStore`` implements all of them (checked by mypy in ``db.store``); each
# actor is typed with the one it needs, so its tests and readers see which transitions it
# may run. Method contracts (fencing, re-run safety, units) are documented on the
# implementation, one module per port: ``db.store.creation``, ``.execution``, ``.outbox``,
# ``.reconciliation``.


class CreationStore(Protocol):
    """What the API routes and the health probe use (``db.store.creation``)."""

    def with_retry_budget(self, seconds: float) -> Self:
        """The same store, giving up on connection faults after ``seconds``."""
        ...

    async def db_now(self) -> datetime:
        """The database clock."""
        ...

    async def get_task(self, task_id: int) -> Task | None:
        """The task, or ``None``."""
        ...

    async def list_tasks(
        self,
        principal: Principal,
        *,
        all_users: bool,
        status: str | None,
        limit: int,
        offset: int,
    ) -> tuple[list[Task], int]:
        """A page of the tasks ``principal`` may see, newest first, and their total."""
        ...

    async def create_task(self, new: NewTask, limits: CreateLimits = ...) -> CreateResult:
        """Admit and create a task with its first outbox row."""
        ...

    async def manual_retry(
        self, task: Task, limits: CreateLimits = ...
    ) -> tuple[CreateOutcome, Task | None]:
        """FAILED → PENDING at a new version, admitted like a create."""
        ...


class ClaimStore(Protocol):
    """What the claim gate uses (``db.store.execution``)."""

    async def claim_task(
        self,
        task_id: int,
        dispatch_version: int,
        owner: str,
        lease_seconds: float,
        max_duration_seconds: float,
    ) -> ClaimResult:
        """The atomic claim; on no claim, the branch why."""
        ...

    async def fair_share_load(self, owner: str, limit: int = 500) -> SlotLoad:
        """What ``owner``'s slots hold and the due PENDING tasks, in one read."""
        ...


class RunStore(Protocol):
    """What the export runner writes during a run, fenced (``db.store.execution``)."""

    async def record_object_key(self, task: Task, owner: str, object_key: str) -> bool:
        """Record the key of the file the attempt is about to write."""
        ...

    async def report_progress(
        self, task: Task, owner: str, processed_rows: int, total_rows: int | None
    ) -> bool:
        """Display-only progress; retried only briefly."""
        ...


class ExecutionStore(ClaimStore, Protocol):
    """What a consumer slot uses: claims (through its gate), the lease, and settling the
    run (``db.store.execution``)."""

    async def renew_lease(self, task: Task, owner: str, lease_seconds: float) -> bool:
        """Renew the lease; ``False``: lost, version changed or deadline passed."""
        ...

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
        """The final commit; ``False``: the caller must delete its file."""
        ...

    async def fail_task(self, task: Task, owner: str, failure_message: str) -> bool:
        """Permanent failure: FAILED at once."""
        ...

    async def schedule_retry(
        self, task: Task, owner: str, failure_message: str, backoff_seconds: float
    ) -> RetryOutcome:
        """Transient failure: a new version after the backoff, or FAILED when spent."""
        ...

    async def own_run_past_deadline(self, task: Task, owner: str) -> bool:
        """Is this still our RUNNING attempt, past its deadline? Read-only."""
        ...

    async def release_lease(self, task: Task, owner: str) -> bool:
        """Hand the task back without counting the attempt."""
        ...


class OutboxStore(Protocol):
    """What the publisher uses (``db.store.outbox``)."""

    async def claim_due_outbox(
        self, owner: str, lease_seconds: float, limit: int
    ) -> list[OutboxRow]:
        """Claim due PENDING rows, one row lock at a time."""
        ...

    async def mark_outbox_sent(self, outbox_id: int, owner: str) -> bool:
        """CLAIMED → SENT, fenced by this publisher's claim."""
        ...

    async def mark_outbox_send_failed(
        self, outbox_id: int, owner: str, backoff_seconds: float, error: str
    ) -> bool:
        """CLAIMED → PENDING after ``backoff_seconds``, fenced by this publisher's claim."""
        ...


class QuarantineStore(Protocol):
    """What the dead-letter handler uses (``db.store.outbox``)."""

    async def quarantine(
        self, event_id: str, task_id: int, dispatch_version: int, reason: str
    ) -> QuarantineOutcome:
        """Quarantine the outbox row and fail the task, one row each, or change nothing."""
        ...


class ReconcilerStore(Protocol):
    """What the reconciler uses (``db.store.reconciliation``)."""

    async def redispatch_missing_outbox(self, grace_seconds: float, limit: int) -> int:
        """PENDING tasks with no outbox row for their version get one; rows inserted."""
        ...

    async def redispatch_stale_sent(
        self, stale_seconds: float, grace_seconds: float, limit: int
    ) -> int:
        """Stale SENT rows of still-PENDING tasks go back to PENDING; rows reset."""
        ...

    async def expired_leases(self, limit: int) -> list[Task]:
        """RUNNING tasks whose lease has expired by DB time."""
        ...

    async def recover_expired_lease(
        self, task: Task, failure_message: str, exhausted_message: str
    ) -> RetryOutcome:
        """A new version if attempts remain, else FAILED; ``LOST`` if renewed meanwhile."""
        ...

    async def release_expired_outbox_claims(self) -> int:
        """CLAIMED rows whose publisher lease expired go back to PENDING; rows reset."""
        ...

    async def expired_files(self, limit: int) -> list[tuple[int, str | None]]:
        """SUCCEEDED tasks past ``expires_at``: (task id, object key)."""
        ...

    async def mark_expired(self, task_id: int) -> bool:
        """SUCCEEDED past ``expires_at`` → EXPIRED."""
        ...

    async def file_is_referenced(self, task_id: int, object_key: str) -> bool:
        """Is ``object_key`` the file of a SUCCEEDED task or of a RUNNING attempt?"""
        ...

    async def prune_sent_outbox(self, retention_seconds: float, chunk: int = 5000) -> int:
        """Delete at most ``chunk`` SENT rows older than the retention; rows deleted."""
        ...

    async def sample_queues(self) -> QueueSample:
        """The queue gauges, by DB time."""
        ...
