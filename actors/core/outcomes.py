"""The vocabulary the layers exchange: what a store transition or an export run answers.

Plain values only (enums and frozen dataclasses). The store (``db.store``) returns them,
the actors and the routes read them, and none of them has to import the other to know
what an answer means.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from actors.core.data_warning import DataWarning
from actors.core.dispatch import NoClaim
from actors.core.limits import NormalisedParameters
from actors.core.models import Task
from actors.core.principal import Principal

# -- create and manual retry ----------------------------------------------------------------


class CreateOutcome(StrEnum):
    """What admission decided (``actors.core.admission.admit``); ``CREATED`` means
    admitted."""

    CREATED = "created"
    DUPLICATE = "duplicate"  # same user+type+params within the window: the existing task
    USER_LIMIT = "user_limit"  # the requester already has the maximum active tasks
    TYPE_LIMIT = "type_limit"  # the export type already has the maximum active tasks
    TYPE_RESERVED = "type_reserved"  # only kept places are free, and the requester has one


class ManualRetryOutcome(StrEnum):
    """What a manual retry of a FAILED or CANCELLED task came to (``ApiStore.manual_retry``).

    ``RETRIED`` means the task is PENDING at a new version; the limits are admission's
    refusals (:func:`actors.core.admission.admit`, without the duplicate rule); ``CHANGED``
    means its fenced write matched nothing: the task left FAILED/CANCELLED at that version
    since it was read (a concurrent retry won).
    """

    RETRIED = "retried"
    USER_LIMIT = "user_limit"
    TYPE_LIMIT = "type_limit"
    TYPE_RESERVED = "type_reserved"
    CHANGED = "changed"


@dataclass(frozen=True, slots=True)
class NewTask:
    """What the API has validated for a create.

    Attributes:
        export_type: the registry key of the definition.
        task_name: the requester's label for the task.
        format: the file format (``xlsx``).
        parameters: the normalised parameters and their hash (the duplicate key).
        principal: the requester.
        max_attempts: the definition's attempt ceiling.
        trace_id: the create request's trace id (``actors/core/tracing.py``), stored on
            the task and carried by its every command; ``None`` stores none.
    """

    export_type: str
    task_name: str
    format: str
    parameters: NormalisedParameters
    principal: Principal
    max_attempts: int
    trace_id: str | None = None


@dataclass(frozen=True, slots=True)
class CreateResult:
    """Answer of a create: the new task (``CREATED``), the existing active one
    (``DUPLICATE``), or no task when admission refused."""

    outcome: CreateOutcome
    task: Task | None


# -- execution ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClaimResult:
    """Result of a claim: ``task`` when claimed, else the no-claim branch
    (``actors.core.dispatch``)."""

    task: Task | None
    no_claim: NoClaim | None


class RetryOutcome(StrEnum):
    """Answer of a transition that schedules another attempt (a transient failure, a
    lease recovery)."""

    SCHEDULED = "scheduled"  # PENDING with a new version and a new outbox row
    FAILED = "failed"  # attempts exhausted: FAILED
    LOST = "lost"  # fencing matched nothing: another owner or version


class AbortReason(StrEnum):
    """Why a run was cut off from outside the export itself."""

    LEASE_LOST = "lease_lost"  # renewal matched 0 rows: version/owner/deadline changed
    DEADLINE = "deadline"  # execution_deadline_at reached (§8.3.1)
    WATCHDOG_FAILED = "watchdog_failed"  # renewal itself kept failing (§8.3: abort, don't ignore)
    SHUTDOWN = "shutdown"  # process stopping after the grace period
    CANCELLED = "cancelled"  # the task was cancelled (status CANCELLED): nothing to write


class CancelOutcome(StrEnum):
    """Answer of a cancel (``actors.core.cancel``)."""

    CANCELLED = "cancelled"  # this call moved the task to CANCELLED
    ALREADY_CANCELLED = "already_cancelled"  # it was CANCELLED before: nothing changed
    NOT_CANCELLABLE = "not_cancellable"  # it is SUCCEEDED, FAILED or EXPIRED


@dataclass(frozen=True, slots=True)
class CancelResult:
    """Answer of the store's cancel: the outcome and the task as it is now."""

    outcome: CancelOutcome
    task: Task


@dataclass(frozen=True, slots=True)
class ExportResult:
    """What a successful pipeline run produced.

    ``rows`` is what the file holds; ``total_rows`` is what the task keeps as its total:
    the Provider's announced ``totalRows`` when more were announced than came (§10.2:
    deletions during the export), else ``rows``. ``None`` means "same as ``rows``".
    ``size_bytes`` is the file's size in bytes. ``warnings`` are the run's data warnings
    (cells truncated, values written as text, …), each with its kind; the task keeps them.
    """

    object_key: str
    file_name: str
    content_type: str
    size_bytes: int
    rows: int
    total_rows: int | None = None
    warnings: tuple[DataWarning, ...] = ()


# -- dead letters and operations ------------------------------------------------------------


class QuarantineOutcome(StrEnum):
    """Answer of quarantining a dead-lettered command."""

    QUARANTINED = "quarantined"  # outbox QUARANTINED + task FAILED, one row each
    MISMATCH = "mismatch"  # stale version / event id mismatch: nothing changed


@dataclass(frozen=True, slots=True)
class QueueSample:
    """Gauge values by DB time.

    Attributes:
        queue_age_seconds: age of the oldest due PENDING task, seconds (0 when none).
        outbox_pending: unsent outbox rows (PENDING or CLAIMED) that are due
            (``next_retry_at`` reached): the send backlog.
        outbox_oldest_age_seconds: how long the oldest due unsent row has been due,
            seconds (0 when none): a row in its back-off window is not late.
        outbox_max_attempt: the highest send attempt count among all unsent rows.
    """

    queue_age_seconds: float
    outbox_pending: int
    outbox_oldest_age_seconds: float
    outbox_max_attempt: int
