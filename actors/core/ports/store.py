"""The store's ports, one per caller: what each actor or route uses of ``db.store.ExportStore``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, Self

from actors.core.admission import CreateLimits
from actors.core.data_warning import DataWarning
from actors.core.events import TaskEvent, TaskInspection
from actors.core.fairness import SlotLoad
from actors.core.handback import DEFAULT_MAX_HANDBACKS, HandBack, HandBackCause
from actors.core.models import OutboxRow, Task, TaskStatus
from actors.core.orphans import FileHold
from actors.core.outcomes import (
    CancelResult,
    ClaimResult,
    CreateResult,
    ManualRetryOutcome,
    NewTask,
    QuarantineOutcome,
    QueueSample,
    RetryOutcome,
)
from actors.core.principal import Principal
from actors.core.task_list import TaskFilter

#
# ``db.store.ExportStore`` implements all of them (checked by mypy in ``db.store``); each
# actor is typed with the one it needs, so its tests and readers see which transitions it
# may run. Method contracts (fencing, re-run safety, units) are documented on the
# implementation: ``db.store.api``, ``.claim``, ``.execution``, ``.settlement``,
# ``.outbox``, ``.reconciliation``.


class ApiStore(Protocol):
    """The store as the API uses it — create, read, list, cancel, manual retry, history,
    downloads, the progress feed — and the operator's commands' cancel and retry
    (``db.store.api``, ``db.store.progress``)."""

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
        filters: TaskFilter = ...,
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
    ) -> tuple[ManualRetryOutcome, Task | None]:
        """FAILED or CANCELLED → PENDING at a new version, admitted like a create."""
        ...

    async def cancel_task(
        self, task_id: int, failure_message: str, *, by: int | None = None
    ) -> CancelResult | None:
        """PENDING or RUNNING → CANCELLED with its unsent commands closed; ``None`` if
        there is no such task."""
        ...

    async def list_task_events(self, task_id: int, limit: int = ...) -> list[TaskEvent]:
        """The task's history, oldest first."""
        ...

    async def record_download(self, task_id: int, user_id: int) -> None:
        """A ``downloaded`` event for the task."""
        ...

    async def tasks_for_progress(
        self, principal: Principal, *, all_users: bool, newest: int, limit: int
    ) -> list[Task]:
        """The caller's live tasks (at most ``limit``) and its ``newest`` newest, each once
        (a progress stream's first read)."""
        ...

    async def tasks_changed_since(self, since: datetime, after_id: int, limit: int) -> list[Task]:
        """At most ``limit`` tasks whose ``(updated_at, id)`` follows ``(since, after_id)``,
        in that order (the progress feed's read); ``since`` is of the database clock."""
        ...


class ClaimStore(Protocol):
    """What the claim gate uses (``db.store.claim``)."""

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

    async def mark_command_seen(self, task_id: int, dispatch_version: int) -> bool:
        """A slot acked a delivery of this version without a claim: its command is not
        lost (``actors.core.dispatch.marks_command_seen``)."""
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


class ExecutionStore(ClaimStore, RunStore, Protocol):
    """What a consumer slot uses: claims (through its gate), and, through its executor,
    the run's file key, the lease and settling the run (``db.store.claim``,
    ``db.store.execution``, ``db.store.settlement``)."""

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
        warnings: Sequence[DataWarning] = (),
    ) -> bool:
        """The final commit, with the run's data ``warnings`` (each with its kind);
        ``False``: the caller must delete its file."""
        ...

    async def fail_task(
        self, task: Task, owner: str, failure_message: str, error_class: str | None = None
    ) -> bool:
        """Permanent failure: FAILED at once."""
        ...

    async def schedule_retry(
        self,
        task: Task,
        owner: str,
        failure_message: str,
        backoff_seconds: float,
        error_class: str | None = None,
    ) -> RetryOutcome:
        """Transient failure: a new version after the backoff, or FAILED when spent."""
        ...

    async def own_run_past_deadline(self, task: Task, owner: str) -> bool:
        """Is this still our RUNNING attempt, past its deadline? Read-only."""
        ...

    async def release_lease(
        self,
        task: Task,
        owner: str,
        *,
        cause: HandBackCause = HandBackCause.SHUTDOWN,
        max_handbacks: int = DEFAULT_MAX_HANDBACKS,
    ) -> HandBack | None:
        """Hand the task back: a new version, the attempt refunded unless the hand-backs
        in a row pass ``max_handbacks`` (``actors.core.handback``); ``None`` if the lease
        was already lost."""
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

    async def get_task(self, task_id: int) -> Task | None:
        """The task, or ``None`` (its export type labels the completion counted)."""
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

    async def live_leases(self, limit: int) -> list[Task]:
        """RUNNING tasks whose lease has not expired by DB time."""
        ...

    async def expire_lease(self, task: Task) -> bool:
        """End the task's lease now (fenced by version and owner); False if it changed."""
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

    async def file_hold(self, task_id: int) -> FileHold | None:
        """What the task holds of its files (``actors/core/orphans.py``), ``None`` if
        there is no such task."""
        ...

    async def prune_sent_outbox(self, retention_seconds: float, chunk: int = 5000) -> int:
        """Delete at most ``chunk`` SENT rows older than the retention; rows deleted."""
        ...

    async def prune_task_events(self, retention_seconds: float, chunk: int = 5000) -> int:
        """Delete at most ``chunk`` events older than the retention, oldest first; events
        deleted."""
        ...


class SamplerStore(Protocol):
    """What the gauge sampler (``actors.supervised.sampler``) needs: the queue figures, on every
    instance."""

    async def sample_queues(self) -> QueueSample:
        """The queue and outbox gauges, by DB time (see ``QueueSample``)."""
        ...


class InspectionStore(Protocol):
    """What the operator's tools read (``db.store.inspection``): every tenant's tasks,
    read-only. Their cancel and retry use the API's transitions (``ApiStore``)."""

    async def operator_list(
        self,
        statuses: tuple[TaskStatus, ...] = (),
        export_type: str | None = None,
        limit: int = 50,
    ) -> list[Task]:
        """Tasks of every tenant, newest first, in these statuses (all when empty)."""
        ...

    async def inspect_task(self, task_id: int, event_limit: int = 50) -> TaskInspection | None:
        """The task, its outbox rows, its newest events and the DB clock, read together;
        ``None`` if there is no such task."""
        ...
