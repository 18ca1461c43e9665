"""A task's history: the kinds of events the store records, and what each one carries.

Every transition of a task appends one row to ``file_export_task_event`` in the same
transaction as the transition itself (``db.store``), never as a separate best-effort write,
so the history shows exactly what committed. ``GET .../export-tasks/{id}/events`` returns
it, oldest first; the reconciler prunes rows older than
``FILE_EXPORT_EVENT_RETENTION_DAYS``.

The detail of an event is a small JSON object whose keys depend on its kind; the builders
below are the one place each kind's keys are named.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from actors.core.models import OutboxRow, Task

#: Longest message kept in an event's detail, characters (as ``failure_message``).
MAX_MESSAGE_CHARS = 1000
#: Events one history answer holds: the newest ones, with ``truncated`` when older ones
#: were left out.
MAX_TASK_EVENTS = 1000


class TaskEventKind(StrEnum):
    """``file_export_task_event.kind``: what happened to the task."""

    CREATED = "created"  # accepted by the API, with its first command in the outbox
    DISPATCHED = "dispatched"  # the publisher sent the command of a version
    CLAIMED = "claimed"  # an instance claimed a version and started an attempt
    ATTEMPT_FAILED = "attempt_failed"  # an attempt ended with an error (class, code, message)
    RETRY_SCHEDULED = "retry_scheduled"  # a new version waits until ``at``
    HANDED_BACK = "handed_back"  # a shutdown or database outage gave the task back
    LEASE_RECOVERED = "lease_recovered"  # the reconciler took over an expired lease
    CANCELLED = "cancelled"  # cancelled by a user
    SUCCEEDED = "succeeded"  # the file is ready (rows, bytes, seconds)
    DOWNLOADED = "downloaded"  # a user downloaded the file
    EXPIRED = "expired"  # the file's retention ended; it was deleted
    QUARANTINED = "quarantined"  # a poison command failed the task


@dataclass(frozen=True, slots=True)
class TaskEvent:
    """One row of a task's history.

    Attributes:
        id: the event's id; a task's events in id order are in commit order.
        task_id: the task.
        kind: what happened.
        at: when, by the database clock (aware UTC).
        detail: the kind's fields (see the builders of this module).
    """

    id: int
    task_id: int
    kind: TaskEventKind
    at: datetime
    detail: dict[str, Any]


def detail_json(**fields: Any) -> str:
    """An event's detail as compact JSON; ``None`` values are left out and messages are
    cut to :data:`MAX_MESSAGE_CHARS`.

    Args:
        fields: the kind's fields (JSON values).

    Returns:
        The JSON text stored in ``detail_json``.
    """
    kept = {
        k: (v[:MAX_MESSAGE_CHARS] if isinstance(v, str) else v)
        for k, v in fields.items()
        if v is not None
    }
    return json.dumps(kept, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


def error_class(error: BaseException | None) -> str | None:
    """The class name an ``attempt_failed`` event shows, e.g. ``ProviderUnavailableError``."""
    return None if error is None else type(error).__name__


def retention_seconds(days: float) -> float:
    """``FILE_EXPORT_EVENT_RETENTION_DAYS`` in seconds."""
    return days * 86400.0


@dataclass(frozen=True, slots=True)
class TaskInspection:
    """Everything the operator's view shows of one task, read in one transaction.

    Attributes:
        task: the task row.
        outbox: its outbox rows, oldest version first (SENT rows older than the outbox
            retention are pruned, so early versions may be missing).
        events: its newest events, oldest first.
        db_now: the database clock when they were read (aware UTC).
    """

    task: Task
    outbox: tuple[OutboxRow, ...]
    events: tuple[TaskEvent, ...]
    db_now: datetime

    def current_outbox(self) -> OutboxRow | None:
        """The outbox row of the task's current ``dispatch_version``, if there is one."""
        for row in self.outbox:
            if row.dispatch_version == self.task.dispatch_version:
                return row
        return None
