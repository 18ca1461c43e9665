"""The JSON shape of a task and of its history events, as the API and the operator's
commands show them.

One shape for every reader: the REST API (``web/api.py``: every route that answers a
task, and the progress stream) and ``export-center tasks ... --json`` / ``inspect --json``
(``actors/cli/ops.py``) both call :func:`task_json`, so a script written against one reads
the other. The conventions are the API's (README, "API"): camelCase keys, 64-bit numbers
as strings, times as ISO-8601 UTC with milliseconds.

Plain functions over values: no IO.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from actors.core.events import TaskEvent
from actors.core.messages import explain_failure
from actors.core.models import Task, TaskStatus

__all__ = ["event_json", "iso_ms", "last_error", "task_json"]


def iso_ms(value: datetime | None) -> str | None:
    """``value`` as ISO-8601 with milliseconds (``2024-05-01T08:00:00.123+00:00``), or
    ``None`` for ``None``."""
    return value.isoformat(timespec="milliseconds") if value is not None else None


def _str(value: int | None) -> str | None:
    return str(value) if value is not None else None


def last_error(task: Task) -> str | None:
    """The failure of the last attempt while an automatic retry waits, else ``None``.

    A retry keeps the failure's message on the PENDING task (``SCHEDULE_RETRY`` in
    ``db/transitions/``) and a manual retry clears it, so a PENDING task with an
    attempt behind it and a message is waiting to retry after that failure.
    """
    if task.status == TaskStatus.PENDING and task.attempt_count > 0:
        return task.failure_message
    return None


def _failure(task: Task) -> dict[str, Any]:
    """``failureCode``, ``failureReason`` and ``remedy`` of a task with a failure message
    (failed, cancelled, or waiting to retry after one), else ``null`` each."""
    if task.failure_message is None:
        return {"failureCode": None, "failureReason": None, "remedy": None}
    explained = explain_failure(task.failure_code)
    return {
        "failureCode": explained.code,
        "failureReason": explained.en,
        "remedy": explained.remedy.value,
    }


def task_json(task: Task) -> dict[str, Any]:
    """The task as the API returns it. ``id``, ``processedRows``, ``totalRows``,
    ``sizeBytes``, ``tenantId`` and ``requestedBy`` are 64-bit and therefore strings;
    small counters stay numbers. ``parameters`` are the normalised object stored at
    create; ``warnings`` the data warnings of the last successful run (``[]`` when
    none), and ``dataWarnings`` the same with each one's kind
    (``actors/core/data_warning.py``); ``failureCode``, ``failureReason`` and
    ``remedy`` say in plain words what a failure means and what may help
    (``actors/core/messages.py``); ``lastError`` is :func:`last_error`; ``traceId``
    the W3C trace id the API gave the task at create (``null`` for tasks older than it),
    the id its log lines carry."""
    return {
        "id": str(task.id),
        "taskNo": task.task_no,
        "exportType": task.export_type,
        "taskName": task.task_name,
        "format": task.format,
        "status": task.status.value,
        "dispatchVersion": task.dispatch_version,
        "attemptCount": task.attempt_count,
        "maxAttempts": task.max_attempts,
        "handbackCount": task.handback_count,
        "processedRows": str(task.processed_rows),
        "totalRows": _str(task.total_rows),
        "fileName": task.file_name,
        "sizeBytes": _str(task.size_bytes),
        "failureMessage": task.failure_message,
        **_failure(task),
        "requestedAt": iso_ms(task.requested_at),
        "startedAt": iso_ms(task.started_at),
        "completedAt": iso_ms(task.completed_at),
        "expiresAt": iso_ms(task.expires_at),
        # Only meaningful while the task waits: the column is NOT NULL in the schema.
        "nextRetryAt": iso_ms(task.next_retry_at) if task.status == TaskStatus.PENDING else None,
        "requestedBy": str(task.requested_by),
        "requesterName": task.requester_name,
        "tenantId": str(task.tenant_id),
        "appCode": task.app_code,
        "parameters": task.parameters,
        "warnings": [warning.detail for warning in task.warnings],
        "dataWarnings": [warning.to_json() for warning in task.warnings],
        "lastError": last_error(task),
        # A user reporting a problem quotes it; an operator finds the run's log lines by it.
        "traceId": task.trace_id,
    }


#: Event detail fields that hold ids (``by``: the user who created, cancelled, downloaded).
_ID_DETAILS = frozenset({"by"})


#: Event details that name the service's own machinery (host name and process id).
_INSTANCE_DETAILS = frozenset({"instance"})


def event_json(event: TaskEvent, *, instances: bool = True) -> dict[str, Any]:
    """One history event as the API shows it: string ids, ``at`` in ISO-8601 UTC, the
    kind's fields under ``detail`` (``actors/core/events.py``).

    Args:
        event: the stored event.
        instances: keep the ``instance`` that claimed or lost the run (host and process
            id): for operators and administrators (``access.sees_instances``), left out
            for anyone else.
    """
    return {
        "id": str(event.id),
        "taskId": str(event.task_id),
        "kind": event.kind.value,
        "at": iso_ms(event.at),
        "detail": {
            # User ids are 64-bit: strings, like every id of the API (stored as numbers).
            k: str(v) if k in _ID_DETAILS and isinstance(v, int) else v
            for k, v in event.detail.items()
            if instances or k not in _INSTANCE_DETAILS
        },
    }
