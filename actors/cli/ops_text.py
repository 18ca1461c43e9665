"""How the operator's commands show tasks to a human (``export-center tasks`` and
``inspect`` without ``--json``): times relative to the database clock, text from outside
on one escaped line.

``--json`` prints the same facts as data instead (``actors.core.ops.operator_json``).
"""

from __future__ import annotations

from datetime import datetime

from actors.core.command_message import payload_trace_id
from actors.core.events import TaskEvent, TaskInspection
from actors.core.messages import explain_failure
from actors.core.models import OutboxRow, Task, TaskStatus
from actors.core.ops.troubleshooting import (
    TROUBLESHOOTING_DOC,
    Finding,
    relative_time,
)
from actors.core.text import quote_outside


def _when(at: datetime | None, now: datetime) -> str:
    """An absolute DB time with its distance from DB now, or ``-``."""
    if at is None:
        return "-"
    return f"{at.isoformat(timespec='milliseconds')} ({relative_time(at, now)})"


def one_line(text: str | None, width: int = 80) -> str:
    """Text from outside (names, messages, errors) on one line: control characters
    escaped, credentials in URLs redacted, cut to ``width`` characters."""
    return quote_outside(text, width) if text else ""


#: The header of ``tasks list``, over the columns of :func:`list_line`.
LIST_HEADER = (
    f"{'TASK':<20} {'STATUS':<9} {'TYPE':<20} {'VERSION':<7} {'ATTEMPT':<8}  "
    "TENANT/APP/USER  WHEN  LAST ERROR"
)


def list_line(task: Task, now: datetime) -> str:
    """One task of ``tasks list`` under :data:`LIST_HEADER`: id, status, type, its
    ``dispatch_version``, attempts so far of the most allowed, requester, and its lease end
    (RUNNING), next try (PENDING) or request time, by DB time."""
    if task.status == TaskStatus.RUNNING and task.lease_until is not None:
        state = "lease ends" if task.lease_until > now else "lease ended"
        when = f"{state} {relative_time(task.lease_until, now)}"
    elif task.status == TaskStatus.PENDING:
        when = f"next try {relative_time(task.next_retry_at, now)}"
    else:
        when = f"requested {relative_time(task.requested_at, now)}"
    return (
        f"{task.id:<20} {task.status.value:<9} {task.export_type:<20} "
        f"{task.dispatch_version:<7} {f'{task.attempt_count} of {task.max_attempts}':<8}  "
        f"t{task.tenant_id}/{task.app_code}/u{task.requested_by}  {when}  "
        f"{one_line(task.failure_message, 60)}".rstrip()
    )


def task_lines(task: Task, now: datetime) -> list[str]:
    """The task row as the operator reads it (``tasks show``): times relative to DB
    time."""
    lines = [
        f"task {task.id} ({task.task_no}) {task.export_type} {task.status.value}",
        f"  name        {one_line(task.task_name)}",
        f"  requester   tenant {task.tenant_id}, app {task.app_code}, user {task.requested_by}",
        f"  version     {task.dispatch_version}, attempt {task.attempt_count} of "
        f"{task.max_attempts}",
        f"  db time     {now.isoformat(timespec='milliseconds')}",
        f"  requested   {_when(task.requested_at, now)}",
    ]
    if task.status == TaskStatus.PENDING:
        lines.append(f"  next try    {_when(task.next_retry_at, now)}")
    if task.lease_until is not None or task.lease_owner:
        state = "ends" if task.lease_until and task.lease_until > now else "ended"
        lease = f"{state} {relative_time(task.lease_until, now)}" if task.lease_until else "-"
        lines.append(f"  lease       {task.lease_owner or '-'}, {lease}")
        if task.last_heartbeat_at:
            lines.append(f"  heartbeat   {relative_time(task.last_heartbeat_at, now)}")
    if task.status == TaskStatus.RUNNING and task.execution_deadline_at is not None:
        deadline = task.execution_deadline_at
        told = relative_time(deadline, now)
        lines.append(f"  deadline    {told if deadline > now else 'passed ' + told}")
    for label, at in (
        ("started", task.started_at),
        ("completed", task.completed_at),
        ("expires", task.expires_at),
    ):
        if at is not None:
            lines.append(f"  {label:<11} {_when(at, now)}")
    total = task.total_rows if task.total_rows is not None else "?"
    lines.append(f"  progress    {task.processed_rows} / {total} rows")
    if task.object_key:
        lines.append(f"  file        {task.object_key} ({task.size_bytes or 0} bytes)")
    if task.failure_message:
        # What the user reads about it (the page, the API's failureReason), then the text.
        explained = explain_failure(task.failure_code)
        lines.append(f"  failure     {explained.code} ({explained.remedy.value} may help)")
        lines.append(f"  for people  {explained.en}")
        lines.append(f"  message     {one_line(task.failure_message, 200)}")
    # The id the task's log lines carry and the user sees in the task JSON (``traceId``).
    lines.append(f"  trace       {one_line(task.trace_id, 40) or '-'}")
    warnings = task.warnings  # of the last successful run, as the API's task JSON shows
    if warnings:
        lines.append(f"  warnings    {len(warnings)}")
        lines += [f"    - {one_line(w.detail, 200)}" for w in warnings]
    return lines


def _outbox_line(row: OutboxRow, now: datetime) -> str:
    if row.status.value == "SENT" and row.sent_at is not None:
        when = f"sent {relative_time(row.sent_at, now)}"
    else:
        when = f"due {relative_time(row.next_retry_at, now)}"
    error = f"  last error: {one_line(row.last_error)}" if row.last_error else ""
    trace = payload_trace_id(row.payload_json)  # to find the run in the logs
    told = f"  trace {one_line(trace, 40)}" if trace else ""
    return (
        f"  v{row.dispatch_version:<3} {row.status.value:<11} attempts {row.attempt_count:<3} "
        f"{when}  event {row.event_id}{told}{error}"
    )


def _event_line(event: TaskEvent) -> str:
    detail = ", ".join(f"{k}={one_line(str(v), 120)}" for k, v in sorted(event.detail.items()))
    return f"  {event.at.isoformat(timespec='milliseconds')}  {event.kind.value:<16} {detail}"


def inspection_lines(seen: TaskInspection, findings: tuple[Finding, ...]) -> list[str]:
    """What ``inspect`` prints: the task (as ``tasks show``), its outbox rows, its
    events, and the troubleshooting rows that apply (``findings``) with where to read
    on."""
    lines = task_lines(seen.task, seen.db_now)
    lines.append(f"outbox ({len(seen.outbox)} rows)")
    lines += [_outbox_line(r, seen.db_now) for r in seen.outbox] or ["  (none)"]
    lines.append(f"events (newest {len(seen.events)}, oldest first)")
    lines += [_event_line(e) for e in seen.events] or ["  (none)"]
    lines.append("troubleshooting")
    for f in findings:
        lines.append(f"  {f.symptom.value}: {f.reason}")
        lines.append(f"    see {TROUBLESHOOTING_DOC}#{f.symptom.value}")
    if not findings:
        lines.append("  no troubleshooting row applies")
    return lines
