"""The operator's diagnosis of one task: which row of the troubleshooting table applies.

``export-center inspect TASK_ID`` reads a task, its outbox rows and its events in one
transaction together with the database clock (``db.store.inspection``), and
:func:`diagnose` matches those facts against the rows of the troubleshooting table of
``docs/operations.md`` ("Troubleshooting"). Each :class:`Symptom` is one row there; its
value is the row's anchor in that file, so the command can point at the query, cause and
action to read next.

Everything here is a plain function over values: no IO, no clock of its own. Every time
comparison uses the ``db_now`` read with the facts, never an instance clock (the service
decides by DB time, so the operator's view does too).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from actors.core.events import TaskEventKind, TaskInspection
from actors.core.models import OutboxRow, OutboxStatus, Task, TaskStatus

__all__ = [
    "TROUBLESHOOTING_DOC",
    "Finding",
    "Symptom",
    "TaskInspection",
    "Thresholds",
    "diagnose",
    "relative_time",
]

#: The file whose troubleshooting table the :class:`Symptom` values are anchors of.
TROUBLESHOOTING_DOC = "docs/operations.md"


class Symptom(StrEnum):
    """One row of the troubleshooting table; the value is its anchor in
    ``docs/operations.md``."""

    STUCK_PENDING = "stuck-pending"  # due long ago, its command sent or missing
    OUTBOX_BACKLOG = "outbox-backlog"  # its command is due and not sent
    LEASE_RECOVERY = "lease-recovery"  # its lease expired (or was recovered before)
    QUARANTINED = "quarantined"  # a poison command failed it
    RETRIES = "retries"  # attempts failed: waiting for the next one, or spent
    EXPIRED_NOT_CLEANED = "expired-not-cleaned"  # its file outlived its retention
    PAST_DEADLINE = "past-deadline"  # RUNNING after its execution deadline
    PERMANENT_FAILURE = "permanent-failure"  # FAILED at once: another run would fail alike
    WAITING_ON_PROVIDER = "waiting-on-provider"  # RUNNING, alive, no row written for long


@dataclass(frozen=True, slots=True)
class Thresholds:
    """When a waiting task counts as stuck, in seconds; the defaults are the alert
    thresholds of ``deploy/prometheus/alerts.yml``, so ``inspect`` and the alerts agree.

    Attributes:
        queue_age_seconds: a due PENDING task waiting longer is stuck (ExportQueueAgeHigh).
        outbox_age_seconds: a due, unsent command older than this is a backlog
            (ExportOutboxBacklog).
        outbox_attempts: a command that failed to send more often is a backlog even while
            it waits out its back-off (ExportOutboxSendFailing).
        expiry_grace_seconds: a SUCCEEDED task whose file expired longer ago was missed by
            the reconciler's retention pass, which runs every few seconds.
        heartbeat_overdue_seconds: a RUNNING task whose last heartbeat is older has
            likely lost its instance (a run renews every ``FILE_EXPORT_TASK_HEARTBEAT_SECONDS``,
            60 s by default), though its lease has not ended yet.
        provider_wait_seconds: a live RUNNING task with no row written this long after it
            started waits on its Provider; one Provider request may take
            ``FILE_EXPORT_PROVIDER_REQUEST_TIMEOUT_SECONDS`` (60 s by default).
    """

    queue_age_seconds: float = 600.0
    outbox_age_seconds: float = 120.0
    outbox_attempts: int = 10
    expiry_grace_seconds: float = 300.0
    heartbeat_overdue_seconds: float = 150.0
    provider_wait_seconds: float = 60.0


@dataclass(frozen=True, slots=True)
class Finding:
    """A troubleshooting row that applies, and the facts that made it apply.

    Attributes:
        symptom: the row.
        reason: one line naming the facts (times relative to DB time).
    """

    symptom: Symptom
    reason: str


def relative_time(at: datetime, now: datetime) -> str:
    """``at`` relative to ``now``: ``"in 12.3 s"`` or ``"4.0 s ago"``.

    Args:
        at: the moment (aware).
        now: the database clock (aware).

    Returns:
        Seconds with one decimal below a minute, then minutes and seconds, hours and
        minutes, or days and hours, followed or preceded by the direction.
    """
    seconds = (at - now).total_seconds()
    span = _span(abs(seconds))
    return f"in {span}" if seconds > 0 else f"{span} ago"


def _span(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    if whole < 86400:
        return f"{whole // 3600} h {whole % 3600 // 60} min"
    return f"{whole // 86400} d {whole % 86400 // 3600} h"


def diagnose(facts: TaskInspection, limits: Thresholds | None = None) -> tuple[Finding, ...]:
    """The troubleshooting rows that apply to one task, in the table's order.

    Args:
        facts: the task, its outbox rows and events, and the DB time they were read at.
        limits: when waiting counts as stuck; the alert thresholds by default.

    Returns:
        The findings, empty when no row applies (a healthy task, or one that finished
        normally). Several may apply at once: a task whose lease expired past its
        deadline shows both rows.
    """
    limits = limits or Thresholds()
    task, now = facts.task, facts.db_now
    found: list[Finding] = []
    command = facts.current_outbox()
    due_for = (now - task.next_retry_at).total_seconds()

    if task.status == TaskStatus.PENDING and due_for > 0:
        backlog = _outbox_backlog(command, now, limits)
        if backlog is not None:
            found.append(Finding(Symptom.OUTBOX_BACKLOG, backlog))
        elif due_for > limits.queue_age_seconds:
            found.append(Finding(Symptom.STUCK_PENDING, _stuck_reason(task, command, now)))

    recoveries = sum(1 for e in facts.events if e.kind == TaskEventKind.LEASE_RECOVERED)
    if task.status == TaskStatus.RUNNING and task.lease_until and task.lease_until <= now:
        found.append(
            Finding(
                Symptom.LEASE_RECOVERY,
                f"RUNNING on {task.lease_owner or '?'} whose lease ended "
                f"{relative_time(task.lease_until, now)}: waiting for the reconciler",
            )
        )
    elif task.status == TaskStatus.RUNNING and _heartbeat_overdue(task, now, limits):
        beat = task.last_heartbeat_at or task.started_at
        assert beat is not None
        ends = ""
        if task.lease_until is not None:
            left = relative_time(task.lease_until, now)
            ends = f"; the reconciler recovers it when its lease ends {left}"
        found.append(
            Finding(
                Symptom.LEASE_RECOVERY,
                f"RUNNING on {task.lease_owner or '?'} whose last heartbeat was "
                f"{relative_time(beat, now)}: that instance has likely stopped{ends}",
            )
        )
    elif recoveries:
        found.append(
            Finding(
                Symptom.LEASE_RECOVERY,
                f"the reconciler recovered its lease {recoveries} time(s): "
                "an instance running it stopped renewing",
            )
        )

    quarantined = [r for r in facts.outbox if r.status == OutboxStatus.QUARANTINED]
    if quarantined:
        row = quarantined[-1]
        found.append(
            Finding(
                Symptom.QUARANTINED,
                f"the command of version {row.dispatch_version} was quarantined: "
                f"{row.last_error or 'no reason recorded'}",
            )
        )

    retry = _retry_reason(task, now)
    if retry is not None:
        found.append(Finding(Symptom.RETRIES, retry))

    if (
        task.status == TaskStatus.SUCCEEDED
        and task.expires_at is not None
        and (now - task.expires_at).total_seconds() > limits.expiry_grace_seconds
    ):
        found.append(
            Finding(
                Symptom.EXPIRED_NOT_CLEANED,
                f"its file expired {relative_time(task.expires_at, now)} and is still kept; "
                "a failed delete is counted in "
                'export_file_delete_failures_total{duty="expire"} (ExportFileDeleteFailing)',
            )
        )

    deadline = task.execution_deadline_at
    if task.status == TaskStatus.RUNNING and deadline is not None and deadline <= now:
        found.append(
            Finding(
                Symptom.PAST_DEADLINE,
                f"still RUNNING; its deadline passed {relative_time(deadline, now)}",
            )
        )

    if (
        task.status == TaskStatus.FAILED
        and task.attempt_count < task.max_attempts
        and not quarantined
    ):
        found.append(
            Finding(
                Symptom.PERMANENT_FAILURE,
                f"FAILED on attempt {task.attempt_count} of {task.max_attempts} without a "
                "retry: the error is permanent (the Provider's answer broke the contract, a "
                "limit was reached or a parameter was refused), so another run fails alike "
                f"until that changes{_last_error(task)}",
            )
        )

    waiting = _provider_wait(task, now, limits)
    if waiting is not None:
        found.append(Finding(Symptom.WAITING_ON_PROVIDER, waiting))
    return tuple(found)


def _last_error(task: Task) -> str:
    """``": <failure message>"``, or nothing when the task has none."""
    return f": {task.failure_message}" if task.failure_message else ""


def _provider_wait(task: Task, now: datetime, limits: Thresholds) -> str | None:
    """Why a live RUNNING task with no row written counts as waiting on its Provider."""
    if task.status != TaskStatus.RUNNING or task.processed_rows > 0 or task.started_at is None:
        return None
    if task.lease_until is None or task.lease_until <= now or _heartbeat_overdue(task, now, limits):
        return None  # not alive: the lease-recovery row says so
    running = (now - task.started_at).total_seconds()
    if running <= limits.provider_wait_seconds:
        return None
    deadline = task.execution_deadline_at
    ends = f"; its deadline is {relative_time(deadline, now)}" if deadline is not None else ""
    return (
        f"RUNNING on {task.lease_owner or '?'} since {relative_time(task.started_at, now)} "
        "with no row written: the run waits on its Provider's first batches (rows count "
        "once a batch is written; each request may take FILE_EXPORT_PROVIDER_REQUEST_"
        f"TIMEOUT_SECONDS, 60 s by default, before the attempt fails and is retried){ends}"
    )


def _heartbeat_overdue(task: Task, now: datetime, limits: Thresholds) -> bool:
    beat = task.last_heartbeat_at or task.started_at
    return beat is not None and (now - beat).total_seconds() > limits.heartbeat_overdue_seconds


def _outbox_backlog(command: OutboxRow | None, now: datetime, limits: Thresholds) -> str | None:
    """Why the current command counts as a backlog, or ``None``."""
    if command is None or command.status not in (OutboxStatus.PENDING, OutboxStatus.CLAIMED):
        return None
    error = f"; last error: {command.last_error}" if command.last_error else ""
    if command.attempt_count > limits.outbox_attempts:
        return f"its command failed to send {command.attempt_count} times{error}"
    # As the backlog gauge: from the first due time, which send back-off does not move
    # (next_retry_at for a row written before due_at).
    due_at = command.due_at or command.next_retry_at
    if (now - due_at).total_seconds() > limits.outbox_age_seconds:
        return (
            f"its command has been due since {relative_time(due_at, now)} "
            f"and is {command.status.value}, not sent{error}"
        )
    return None


def _stuck_reason(task: Task, command: OutboxRow | None, now: datetime) -> str:
    """Why a due PENDING task has not started: what its command shows."""
    due = f"due since {relative_time(task.next_retry_at, now)}"
    if command is None:
        return f"{due}; no outbox row for version {task.dispatch_version}"
    if command.status == OutboxStatus.SENT and command.sent_at is not None:
        sent = f"{due}; its command was sent {relative_time(command.sent_at, now)}"
        if command.seen_at is not None:
            return (
                f"{sent} and a slot acked it {relative_time(command.seen_at, now)} without "
                "claiming it (fair share, storage unavailable, back-off): it waits for a free "
                "slot and is not sent again"
            )
        if command.resent_at is not None:
            return (
                f"{sent}, a second time since no slot took the first, not claimed: every "
                "slot is busy or no consumer runs; a free slot claims it from the database, "
                "and it is not sent a third time"
            )
        return f"{sent}, not claimed"
    return f"{due}; its command is {command.status.value}"


def _retry_reason(task: Task, now: datetime) -> str | None:
    """What the task's failed attempts mean now, or ``None`` when none failed."""
    last = _last_error(task)
    if task.status == TaskStatus.PENDING and task.attempt_count > 0 and task.failure_message:
        when = relative_time(task.next_retry_at, now)
        return (
            f"attempt {task.attempt_count} of {task.max_attempts} failed{last}; "
            f"next attempt {'due ' + when if task.next_retry_at <= now else when}"
        )
    if task.status == TaskStatus.FAILED and task.attempt_count >= task.max_attempts:
        return f"FAILED after all {task.attempt_count} attempts{last}"
    return None
