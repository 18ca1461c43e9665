"""JSON shapes of the API (§5): camelCase, 64-bit numbers as strings, ISO-8601 times."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from actors.core.events import TaskEvent
from actors.core.models import Task, TaskStatus


def _iso(value: datetime | None) -> str | None:
    return value.isoformat(timespec="milliseconds") if value is not None else None


def _str(value: int | None) -> str | None:
    return str(value) if value is not None else None


def last_error(task: Task) -> str | None:
    """The failure of the last attempt while an automatic retry waits, else ``None``.

    A retry keeps the failure's message on the PENDING task (``SCHEDULE_RETRY`` in
    ``db/transitions.py``) and a manual retry clears it, so a PENDING task with an
    attempt behind it and a message is waiting to retry after that failure.
    """
    if task.status == TaskStatus.PENDING and task.attempt_count > 0:
        return task.failure_message
    return None


def task_json(task: Task) -> dict[str, Any]:
    """The task as the API returns it. ``id``, ``processedRows``, ``totalRows``,
    ``sizeBytes``, ``tenantId`` and ``requestedBy`` are 64-bit and therefore strings;
    small counters stay numbers. ``parameters`` are the normalised object stored at
    create; ``warnings`` the data warnings of the last successful run (``[]`` when
    none); ``lastError`` is :func:`last_error`; ``traceId`` the W3C trace id the API gave
    the task at create (``null`` for tasks older than it), the id its log lines carry."""
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
        "processedRows": str(task.processed_rows),
        "totalRows": _str(task.total_rows),
        "fileName": task.file_name,
        "sizeBytes": _str(task.size_bytes),
        "failureMessage": task.failure_message,
        "requestedAt": _iso(task.requested_at),
        "startedAt": _iso(task.started_at),
        "completedAt": _iso(task.completed_at),
        "expiresAt": _iso(task.expires_at),
        # Only meaningful while the task waits: the column is NOT NULL in the schema.
        "nextRetryAt": _iso(task.next_retry_at) if task.status == TaskStatus.PENDING else None,
        "requestedBy": str(task.requested_by),
        "tenantId": str(task.tenant_id),
        "appCode": task.app_code,
        "parameters": task.parameters,
        "warnings": task.warnings,
        "lastError": last_error(task),
        # A user reporting a problem quotes it; an operator finds the run's log lines by it.
        "traceId": task.trace_id,
    }


def envelope(data: Any = None, *, code: str = "200", message: str = "success") -> dict[str, Any]:
    """The response envelope ``{"code", "message", "data"}`` (§5)."""
    return {"code": code, "message": message, "data": data}


#: Event detail fields that hold ids (``by``: the user who created, cancelled, downloaded).
_ID_DETAILS = frozenset({"by"})


def event_json(event: TaskEvent) -> dict[str, Any]:
    """One history event as the API shows it: string ids, ``at`` in ISO-8601 UTC, the
    kind's fields under ``detail`` (``actors/core/events.py``)."""
    return {
        "id": str(event.id),
        "taskId": str(event.task_id),
        "kind": event.kind.value,
        "at": _iso(event.at),
        "detail": {
            # User ids are 64-bit: strings, like every id of the API (stored as numbers).
            k: str(v) if k in _ID_DETAILS and isinstance(v, int) else v
            for k, v in event.detail.items()
        },
    }
