"""Ports: the interfaces the actors and the web side depend on, implemented further out.

Modelled on httpx's ``_transports/base.py``: each port is a small ``Protocol`` that states
what a caller may rely on, and the outer layers plug in implementations —
``actors.transport.embedded`` / ``actors.transport.rocketmq`` for the command transport,
``actors.pipeline.storage`` for export files, ``actors.service.metrics``,
``actors.service.registry_source``
and ``actors.service.wakeup`` for what the web side uses, and ``db.store.ExportStore`` for the
store ports (one per caller, at the end). Nothing here does IO or imports an event
loop, so ``web`` can depend on these ports and on ``db`` alone.

Attributes a caller only reads are declared as read-only properties: a class with a plain
attribute or a property both satisfy them, so every implementation type-checks as its port
without casts.

Transport errors live in the error tree (:mod:`actors.core.errors`): a send that did not
reach the broker raises :class:`~actors.core.errors.TransportSendError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import BinaryIO, Protocol, Self

from actors.core.admission import CreateLimits
from actors.core.events import TaskEvent, TaskInspection
from actors.core.fairness import SlotLoad
from actors.core.handback import DEFAULT_MAX_HANDBACKS, HandBack, HandBackCause
from actors.core.models import OutboxRow, Principal, Registry, Task, TaskStatus
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
from actors.core.task_list import TaskFilter

__all__ = [
    "ApiMetrics",
    "ClaimStore",
    "CommandTransport",
    "Counter",
    "CreationStore",
    "Delivery",
    "ExecutionStore",
    "ExportStorage",
    "InspectionStore",
    "LabelledCounter",
    "OutboxStore",
    "OutgoingMessage",
    "PublisherWakeup",
    "RunWakeup",
    "QuarantineStore",
    "ReconcilerStore",
    "RegistryView",
    "RunStore",
    "StoredObject",
]


# -- command transport -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OutgoingMessage:
    """A command to send.

    Attributes:
        topic: the command topic, ``${MQ_TOPIC_PREFIX}file-export-command-v1``.
        tag: the message tag, ``EXPORT_TASK``.
        key: the message key (the task id).
        body: the JSON text body of the command.
        properties: the locating properties (``eventId``, ``taskId``, ``dispatchVersion``,
            ``schemaVersion``), strings.
    """

    topic: str
    tag: str
    key: str
    body: str
    properties: Mapping[str, str] = field(default_factory=dict)


class Delivery(Protocol):
    """One delivery of a message to a consumer.

    Exactly one of ``ack`` or ``reject`` must be called; later calls are no-ops. ``reject``
    means "reconsume later": the transport redelivers with ``reconsume_times + 1`` until
    the limit of :func:`actors.core.dead_letter.goes_to_dead_letter`, then moves the message
    to the dead-letter channel. Rejecting a delivery of the dead-letter channel itself never
    dead-letters again.
    """

    @property
    def body(self) -> str:
        """The message body as text."""
        ...

    @property
    def properties(self) -> Mapping[str, str]:
        """The locating properties present on the message."""
        ...

    @property
    def reconsume_times(self) -> int:
        """Earlier deliveries of this message: 0 on the first."""
        ...

    @property
    def message_id(self) -> str:
        """The transport's id of the message, for logs."""
        ...

    async def ack(self) -> None:
        """Consumed: the message will not be delivered again."""
        ...

    async def reject(self) -> None:
        """Reconsume later (only for an undecodable command)."""
        ...


class CommandTransport(Protocol):
    """The command bus the publisher, the consumer slots and the DLQ handler use.

    Lifecycle: ``start`` once before any other call, ``aclose`` once at the end — also when
    ``start`` raised, so a half-started transport is cleaned up. Nothing above the
    transport knows which implementation runs.
    """

    async def start(self) -> None:
        """Connect and start consuming.

        Raises:
            TransportStartError: the transport cannot start (unreachable broker, bad
                group); the service does not start.
        """
        ...

    async def send(self, message: OutgoingMessage) -> None:
        """Send one message.

        Raises:
            TransportSendError: the message did not reach the broker (the publisher backs
                the outbox row off and sends it again later).
        """
        ...

    async def receive(self) -> Delivery:
        """Wait for the next command delivery (called by a free consumer slot, which is
        where backpressure comes from)."""
        ...

    async def receive_dead_letter(self) -> Delivery:
        """Wait for the next dead-lettered message (the DLQ handler's subscription)."""
        ...

    async def aclose(self) -> None:
        """Stop consuming and release the connection; idempotent. Deliveries not yet
        acked or rejected go back to the broker (at-least-once)."""
        ...


# -- export file storage -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoredObject:
    """A stored file seen by a listing: key, size in bytes, modification time (epoch s)."""

    key: str
    size: int
    mtime: float


@dataclass(frozen=True, slots=True)
class StorageProbe:
    """One health probe of the storage (the ``export_storage_*`` gauges).

    Attributes:
        writable: a probe file could be written, read back and deleted.
        free_bytes: bytes available to this process where files are stored; ``None`` when
            the storage cannot tell.
        error: why it is not writable, for the log; ``None`` when it is.
    """

    writable: bool
    free_bytes: int | None
    error: str | None = None


class ExportStorage(Protocol):
    """Where export files live. Consumers, API and reconciler depend only on this.

    Keys are service-generated ``exports/{taskId}/{uuid}.xlsx`` (see
    ``actors.pipeline.storage``); an implementation refuses any other key.
    """

    async def create(self, key: str) -> BinaryIO:
        """Create the object for writing and return a seekable binary file (sync API, to
        be written from a worker thread). Fails if it exists.

        Raises:
            StorageUnavailableError: the storage cannot be written now.
        """
        ...

    async def size(self, key: str) -> int | None:
        """Size in bytes, or ``None`` if the object does not exist."""
        ...

    def load(self, key: str, start: int = 0, length: int | None = None) -> AsyncIterator[bytes]:
        """Stream the object's bytes: ``length`` bytes from byte ``start`` (0-based), to
        the end when ``length`` is ``None``. Raises FileNotFoundError if it does not exist."""
        ...

    async def delete(self, key: str) -> bool:
        """Delete the object; True if it existed. Deleting a missing object is not an error
        (a retried cleanup must be idempotent)."""
        ...

    async def list_objects(self) -> list[StoredObject]:
        """Every object under ``exports/`` (for the reconciler's orphan scan)."""
        ...

    async def probe(self) -> StorageProbe:
        """Whether a file can be written, read back and deleted now, and the free space.
        Never raises: a failure is the answer (``writable`` False, its reason given)."""
        ...


# -- what the web side uses ----------------------------------------------------------------


class RegistryView(Protocol):
    """The export-type registry in force (``actors.service.registry_source.RegistryHolder``).

    Readers take ``current`` once per decision and use that object throughout, so they never
    see a mix of an old and a reloaded registry.
    """

    @property
    def current(self) -> Registry:
        """The registry in force now."""
        ...


class PublisherWakeup(Protocol):
    """The API's side of the publisher's wake-up signal (``actors.service.wakeup.Wakeup``)."""

    def set(self) -> None:
        """Wake the publisher now: a create or retry has just committed its outbox row."""
        ...


class RunWakeup(Protocol):
    """The API's side of waking a running export.

    Implemented by ``actors.supervised.local_claims.LocalClaims``.
    """

    def cancelled(self, task_id: int) -> None:
        """``task_id`` was just cancelled: if a slot of this process runs it, make its
        watchdog look now rather than at the next heartbeat. A speed-up only: a run
        elsewhere ends at its next fenced write."""
        ...


class Counter(Protocol):
    """A monotonic counter (one labelled child of a prometheus ``Counter``)."""

    def inc(self, amount: float = 1) -> None:
        """Add ``amount`` (≥ 0)."""
        ...


class LabelledCounter(Protocol):
    """A counter with labels (a prometheus ``Counter`` declared with label names)."""

    def labels(self, *values: str) -> Counter:
        """The child counter for these label values, in declaration order."""
        ...


class ApiMetrics(Protocol):
    """The metrics the HTTP side records and serves (``actors.service.metrics.Metrics``)."""

    @property
    def task_created(self) -> LabelledCounter:
        """``export_task_created_total{type}``: tasks created through the API."""
        ...

    @property
    def task_completed(self) -> LabelledCounter:
        """``export_task_completed_total{type,status}``: the API counts its cancels."""
        ...

    def exposition(self) -> bytes:
        """Every metric of this instance in the Prometheus text format, for ``/metrics``."""
        ...


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
        (one poll of the progress stream)."""
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
    """What a consumer slot uses: claims (through its gate), and, through its executor,
    the lease and settling the run (``db.store.execution``)."""

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
        warnings: Sequence[str] = (),
    ) -> bool:
        """The final commit, with the run's data ``warnings`` (one sentence each);
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

    async def file_is_referenced(self, task_id: int, object_key: str) -> bool:
        """Is ``object_key`` the file of a SUCCEEDED task or of a RUNNING attempt?"""
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
    read-only. Their cancel and retry use the API's transitions (``CreationStore``)."""

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
