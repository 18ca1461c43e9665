"""What the operator's commands print with ``--json``: the documents and the outcomes.

``export-center tasks list|show|cancel|retry --json`` and ``inspect --json``
(``actors/cli/ops.py``; ``docs/operations.md``, "Operator's commands") print one JSON
document each, for scripts (``jq``, cron checks, runbooks). A task in them is the API's
task object (:func:`actors.core.task_json.task_json`), so a script reads the operator's
view and the API alike. What ``inspect`` shows beyond the task is told here by DB time:
every ``...InSeconds`` field is that moment minus ``dbTime``, in seconds with
milliseconds: positive ahead, negative behind (``lease.endsInSeconds < 0``: the lease
ended).

Plain functions over values: no IO, no clock of its own.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from actors.core.command_message import payload_trace_id
from actors.core.errors import Refusal
from actors.core.events import TaskInspection
from actors.core.models import OutboxRow, Task, TaskStatus
from actors.core.ops.troubleshooting import TROUBLESHOOTING_DOC, Finding
from actors.core.outcomes import CancelOutcome
from actors.core.task_json import event_json, iso_ms, task_json

__all__ = [
    "OperatorOutcome",
    "cancel_outcome",
    "error_json",
    "inspection_json",
    "outcome_json",
    "retry_outcome",
    "seconds_from",
]


class OperatorOutcome(StrEnum):
    """What an operator's ``tasks cancel`` or ``tasks retry`` did to a task: the
    ``outcome`` field of its ``--json`` answer. Only ``cancelled``, ``already-cancelled``
    and ``retried`` exit 0; every other outcome exits 1, as the text mode does."""

    CANCELLED = "cancelled"  # this command moved the task to CANCELLED
    ALREADY_CANCELLED = "already-cancelled"  # it was CANCELLED before: nothing changed
    NOT_CANCELLABLE = "not-cancellable"  # it ended already (SUCCEEDED, FAILED, EXPIRED)
    RETRIED = "retried"  # PENDING again with a new version, attempts reset
    NOT_RETRYABLE = "not-retryable"  # it is not FAILED or CANCELLED
    TYPE_UNKNOWN = "type-unknown"  # its export type is not in the registry in force
    TYPE_DISABLED = "type-disabled"  # its export type is disabled in the registry in force
    USER_LIMIT = "user-limit"  # its requester has the most active tasks allowed
    TYPE_LIMIT = "type-limit"  # its export type has the most active tasks allowed
    TYPE_RESERVED = "type-reserved"  # only places kept for other requesters are free
    CHANGED = "changed-meanwhile"  # someone else retried it between the read and the write
    NOT_FOUND = "not-found"  # no task has this id

    @property
    def succeeded(self) -> bool:
        """Whether the command exits 0 with this outcome."""
        return self in _SUCCESSES


_SUCCESSES = frozenset(
    {OperatorOutcome.CANCELLED, OperatorOutcome.ALREADY_CANCELLED, OperatorOutcome.RETRIED}
)


def cancel_outcome(outcome: CancelOutcome) -> OperatorOutcome:
    """The operator's name of the store's cancel outcome (``actors.core.cancel``)."""
    return {
        CancelOutcome.CANCELLED: OperatorOutcome.CANCELLED,
        CancelOutcome.ALREADY_CANCELLED: OperatorOutcome.ALREADY_CANCELLED,
        CancelOutcome.NOT_CANCELLABLE: OperatorOutcome.NOT_CANCELLABLE,
    }[outcome]


def retry_outcome(reason: Refusal) -> OperatorOutcome:
    """The operator's name of a manual retry's refusal (``actors.core.usecases.retry_task``):
    not retryable, refused by a limit of ``actors.core.admission``, or changed meanwhile.

    Raises:
        KeyError: ``reason`` is not a refusal a manual retry raises.
    """
    return {
        Refusal.NOT_RETRYABLE: OperatorOutcome.NOT_RETRYABLE,
        Refusal.USER_LIMIT: OperatorOutcome.USER_LIMIT,
        Refusal.TYPE_LIMIT: OperatorOutcome.TYPE_LIMIT,
        Refusal.TYPE_RESERVED: OperatorOutcome.TYPE_RESERVED,
        Refusal.CHANGED: OperatorOutcome.CHANGED,
    }[reason]


def error_json(message: str) -> dict[str, Any]:
    """The answer of a command that could not do what it was asked: ``{"error": message}``
    (the same message the text mode prints)."""
    return {"error": message}


def outcome_json(
    task_id: int | str, outcome: OperatorOutcome, task: Task | None, error: str | None = None
) -> dict[str, Any]:
    """What ``tasks cancel|retry --json`` prints.

    Args:
        task_id: the id asked for (the argument as given when it is past the id range).
        outcome: what happened to it.
        task: the task as it is now, or ``None`` when there is none or it was not read.
        error: the text mode's message, when the outcome is a failure.

    Returns:
        ``{"id", "outcome", "task"}`` (``id`` a string, as the API's ids; ``task`` the
        API's task object or ``null``), plus ``"error"`` when ``error`` is given.
    """
    answer: dict[str, Any] = {
        "id": str(task_id),
        "outcome": outcome.value,
        "task": task_json(task) if task is not None else None,
    }
    if error is not None:
        answer["error"] = error
    return answer


def seconds_from(at: datetime | None, now: datetime) -> float | None:
    """``at - now`` in seconds, rounded to the millisecond (the DB clock's resolution), or
    ``None`` for ``None``: positive ahead of ``now``, negative behind."""
    if at is None:
        return None
    return round((at - now).total_seconds(), 3) + 0.0  # + 0.0: never "-0.0" in the output


def _lease_json(task: Task, now: datetime) -> dict[str, Any] | None:
    """The lease as ``inspect`` shows it: only when the task has an owner or an end."""
    if task.lease_until is None and not task.lease_owner:
        return None
    return {
        "owner": task.lease_owner,
        "until": iso_ms(task.lease_until),
        "endsInSeconds": seconds_from(task.lease_until, now),
        "lastHeartbeatAt": iso_ms(task.last_heartbeat_at),
        "lastHeartbeatInSeconds": seconds_from(task.last_heartbeat_at, now),
    }


def _deadline_json(task: Task, now: datetime) -> dict[str, Any] | None:
    """The execution deadline while the task runs (the text mode's ``deadline`` line)."""
    deadline = task.execution_deadline_at
    if task.status != TaskStatus.RUNNING or deadline is None:
        return None
    return {"at": iso_ms(deadline), "inSeconds": seconds_from(deadline, now)}


def _outbox_json(row: OutboxRow, now: datetime) -> dict[str, Any]:
    return {
        "dispatchVersion": row.dispatch_version,
        "status": row.status.value,
        "attemptCount": row.attempt_count,
        "eventId": row.event_id,
        "traceId": payload_trace_id(row.payload_json),
        "nextRetryAt": iso_ms(row.next_retry_at),
        "nextRetryInSeconds": seconds_from(row.next_retry_at, now),
        "sentAt": iso_ms(row.sent_at),
        "sentInSeconds": seconds_from(row.sent_at, now),
        "lastError": row.last_error,
    }


def _finding_json(finding: Finding) -> dict[str, Any]:
    row = finding.symptom.value
    return {"id": row, "text": finding.reason, "doc": f"{TROUBLESHOOTING_DOC}#{row}"}


def inspection_json(seen: TaskInspection, findings: tuple[Finding, ...]) -> dict[str, Any]:
    """What ``inspect --json`` prints: the text mode's facts, by DB time.

    Args:
        seen: the task, its outbox rows and events, and the DB time they were read at.
        findings: the troubleshooting rows that apply
            (:func:`actors.core.ops.troubleshooting.diagnose` of ``seen``).

    Returns:
        ``task`` (the API's task object); ``dbTime``; ``nextRetryInSeconds`` (PENDING
        only, else ``null``); ``lease`` (``owner``, ``until``, ``endsInSeconds``,
        ``lastHeartbeatAt``, ``lastHeartbeatInSeconds``; ``null`` when the task has no
        lease); ``deadline`` (``at``, ``inSeconds``; RUNNING only, else ``null``);
        ``objectKey`` (the stored file's key, or ``null``); ``outbox`` (its rows, oldest
        version first); ``events`` (as ``GET .../events`` shows them, oldest first); and
        ``troubleshooting`` (``[]`` when no row applies, else each row's ``id`` — its
        anchor in ``docs/operations.md`` —, ``text``: the facts that made it apply, and
        ``doc``: where to read on).
    """
    task, now = seen.task, seen.db_now
    return {
        "task": task_json(task),
        "dbTime": iso_ms(now),
        "nextRetryInSeconds": (
            seconds_from(task.next_retry_at, now) if task.status == TaskStatus.PENDING else None
        ),
        "lease": _lease_json(task, now),
        "deadline": _deadline_json(task, now),
        "objectKey": task.object_key,
        "outbox": [_outbox_json(r, now) for r in seen.outbox],
        "events": [event_json(e) for e in seen.events],
        "troubleshooting": [_finding_json(f) for f in findings],
    }
