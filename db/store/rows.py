"""Rows as the database returns them ↔ the core's ``Task`` and ``OutboxRow``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from actors.core.models import OutboxRow, OutboxStatus, Task, TaskStatus
from db.dialect import Dialect

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
_OUTBOX_TIMES = (
    "next_retry_at",
    "lease_until",
    "sent_at",
    "created_at",
    "updated_at",
    "due_at",
    "seen_at",
    "resent_at",
)


def task_from_row(row: Mapping[str, Any], dialect: Dialect) -> Task:
    """A task row (``db.transitions.columns.TASK_COLUMNS``, maybe with ``db_now``) as a ``Task``:
    times as aware UTC datetimes, the status as ``TaskStatus``, ids as ``int``."""
    d = dict(row)
    d.pop("db_now", None)
    for key in _TASK_TIMES:
        d[key] = dialect.to_datetime(d.get(key))
    d["status"] = TaskStatus(d["status"])
    for key in ("id", "tenant_id", "requested_by"):
        d[key] = int(d[key])
    return Task(**d)


def outbox_from_row(row: Mapping[str, Any], dialect: Dialect) -> OutboxRow:
    """An outbox row (``db.transitions.columns.OUTBOX_COLUMNS``) as an ``OutboxRow``; a payload
    the driver decoded from JSON is encoded back to its text."""
    d = dict(row)
    for key in _OUTBOX_TIMES:
        d[key] = dialect.to_datetime(d.get(key))
    d["status"] = OutboxStatus(d["status"])
    d["id"] = int(d["id"])
    d["task_id"] = int(d["task_id"])
    if not isinstance(d["payload_json"], str):
        d["payload_json"] = json.dumps(d["payload_json"])
    return OutboxRow(**d)
