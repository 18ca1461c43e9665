"""The task and its outbox rows as values: the rows of ``file_export_task`` and
``file_export_outbox`` and their statuses, the vocabulary between the store and the logic.

All are frozen dataclasses or string enums and do no IO. Datetimes are timezone-aware UTC
(the store converts DB values at its edge). 64-bit ids are Python ``int`` here and become
JSON strings only at the HTTP edge (§5: ``Long`` is rendered as a string).

The other value types live by subject: the command (``actors.core.command_message``), a
Provider's batch and its columns (``actors.core.batch``), the caller
(``actors.core.principal``), the export types' definitions (``actors.core.definitions``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from actors.core.data_warning import DataWarning, warnings_from_json


class TaskStatus(StrEnum):
    """``file_export_task.status`` (§5 state machine)."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    EXPIRED = "EXPIRED"
    #: Cancelled by its requester (or an administrator of its tenant and app) while
    #: PENDING or RUNNING: terminal, retried by hand like FAILED.
    CANCELLED = "CANCELLED"


#: Statuses that count against the per-user and per-type active limits (§14).
ACTIVE_STATUSES: tuple[TaskStatus, ...] = (TaskStatus.PENDING, TaskStatus.RUNNING)
#: Statuses in which no executor will ever touch the task again.
TERMINAL_STATUSES: tuple[TaskStatus, ...] = (
    TaskStatus.SUCCEEDED,
    TaskStatus.FAILED,
    TaskStatus.EXPIRED,
    TaskStatus.CANCELLED,
)


class OutboxStatus(StrEnum):
    """``file_export_outbox.status`` (§7.4). Only QUARANTINED is terminal (§9.4).

    A cancel closes its task's unsent rows as SENT with ``last_error`` "not sent: the task
    was cancelled", so the publisher skips them and pruning removes them like sent rows."""

    PENDING = "PENDING"
    CLAIMED = "CLAIMED"
    SENT = "SENT"
    QUARANTINED = "QUARANTINED"


@dataclass(frozen=True, slots=True)
class Task:
    """A row of ``file_export_task`` (§7.3, §8.3.1). Datetimes are aware UTC or ``None``."""

    id: int
    task_no: str
    export_type: str
    task_name: str
    format: str
    status: TaskStatus
    parameters_json: str
    tenant_id: int
    app_code: str
    requested_by: int
    dispatch_version: int
    attempt_count: int
    max_attempts: int
    next_retry_at: datetime
    lease_owner: str | None
    lease_until: datetime | None
    last_heartbeat_at: datetime | None
    execution_deadline_at: datetime | None
    processed_rows: int
    total_rows: int | None
    file_name: str | None
    object_key: str | None
    content_type: str | None
    size_bytes: int | None
    failure_message: str | None
    requested_at: datetime
    started_at: datetime | None
    completed_at: datetime | None
    expires_at: datetime | None
    updated_at: datetime | None = None
    trace_id: str | None = None
    """W3C trace id created at the API (``actors/core/tracing.py``); ``None`` for tasks
    created before the column existed."""
    warnings_json: str | None = None
    handback_count: int = 0
    """Hand-backs in a row (shutdown, database fault, watchdog outage) since an attempt of
    the task last ended otherwise (``actors/core/handback.py``)."""
    requester_name: str | None = None
    """What people call the requester (the token's ``name`` claim at create), or
    ``None``: pages show ``requested_by`` then."""
    failure_code: str | None = None
    """The stable code of ``failure_message`` (``ExportError.code``, or the code a
    transition writes itself: ``cancelled``, ``worker-lost`` …): the key of what people
    read about it (``actors/core/messages.py``). ``None`` without a failure, and for tasks
    that failed before the column existed."""

    @property
    def parameters(self) -> dict[str, Any]:
        """The normalised parameter object stored at create (§12 limits applied)."""
        value: dict[str, Any] = json.loads(self.parameters_json)
        return value

    @property
    def warnings(self) -> list[DataWarning]:
        """The data warnings of the last successful run (cells truncated, values written
        as text, …), each with its kind; ``[]`` when there were none or the task has not
        succeeded (:func:`~actors.core.data_warning.warnings_from_json`)."""
        return warnings_from_json(self.warnings_json)


@dataclass(frozen=True, slots=True)
class OutboxRow:
    """A row of ``file_export_outbox`` (§7.2)."""

    id: int
    event_id: str
    task_id: int
    dispatch_version: int
    topic: str
    tag: str
    message_key: str
    payload_json: str
    status: OutboxStatus
    attempt_count: int
    next_retry_at: datetime
    lease_owner: str | None
    lease_until: datetime | None
    sent_at: datetime | None
    last_error: str | None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    due_at: datetime | None = None
    """When the row first became due since it was written or re-queued; send back-off
    moves ``next_retry_at``, never this. ``None`` for a row written before the column."""
    seen_at: datetime | None = None
    """When a consumer slot first acked a delivery of this command without claiming its
    task (``actors.core.dispatch.marks_command_seen``): the command is not lost, and the
    reconciler never sends it again. ``None`` while no slot has."""
    resent_at: datetime | None = None
    """When the reconciler sent this command again because no slot had seen it (§8.5-1
    case B); it does so once. ``None`` while it has not."""
