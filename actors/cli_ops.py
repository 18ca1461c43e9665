"""The operator's commands: ``tasks list|show|cancel|retry``, ``inspect`` and ``accept``.

``tasks`` and ``inspect`` read the database directly, configured from the environment like
``migrate`` (``FILE_EXPORT_DATABASE_URL`` …): the operator's view of every tenant, with
leases and deadlines told by the database clock. ``tasks cancel`` and ``tasks retry`` run
the same store transitions as the API's cancel and retry, as an operator rather than as
a user. ``accept`` works over HTTP only (``actors.acceptance``): it checks a deployed
service from the outside, as a user would.

See ``docs/operations.md`` ("Operator's commands" and "Troubleshooting").
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import trio

from actors.config import Settings, load_settings
from actors.core.access import check_requestable, check_retryable, parse_task_id
from actors.core.admission import CreateLimits
from actors.core.errors import ConfigError, ParameterError, Refused
from actors.core.events import TaskEvent
from actors.core.models import OutboxRow, Task, TaskStatus
from actors.core.outcomes import CancelOutcome, CreateOutcome
from actors.core.text import quote_outside
from actors.core.troubleshooting import (
    TaskInspection,
    Thresholds,
    diagnose,
    relative_time,
)

if TYPE_CHECKING:
    from db.store import ExportStore

R = TypeVar("R")

#: What a task cancelled with ``tasks cancel`` shows as its message.
OPERATOR_CANCEL_MESSAGE = "cancelled by an operator"
#: Where the troubleshooting rows are explained.
TROUBLESHOOTING_DOC = "docs/operations.md"


def settings_or_exit(**overrides: Any) -> Settings:
    """The settings from the environment (and ``overrides``), or a one-line click error
    naming the bad variable; shared by every command of ``export-center``."""
    try:
        return load_settings(**overrides)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None


def _run_with_store(fn: Callable[[ExportStore, Settings], Awaitable[R]]) -> R:
    """Open the configured database, run ``fn`` with a store over it, close it.

    A SQLite database must exist already: the operator looks at a service's database, and
    opening a mistyped path would otherwise create an empty one."""
    settings = settings_or_exit()
    url = settings.resolved_database_url
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :]
        if not path or not Path(path).is_file():
            raise click.ClickException(f"no SQLite database at {path!r} (FILE_EXPORT_DATABASE_URL)")
    from actors.composition import open_database
    from actors.core.ids import IdGenerator
    from db.sqlite import wall_clock_ms
    from db.store import ExportStore

    async def run() -> R:
        async with open_database(settings) as db:
            store = ExportStore(db, IdGenerator(wall_clock_ms), topic=settings.command_topic)
            return await fn(store, settings)

    try:
        return trio.run(run)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None


def _task_id(value: str) -> int:
    """The task id argument, by the API's own rule (``actors.core.access.parse_task_id``):
    ASCII digits within the id range; anything else is a usage error, never a traceback."""
    try:
        return parse_task_id(value)
    except ParameterError:
        raise click.BadParameter(f"{value!r} is not a task id (digits only)") from None
    except Refused as exc:
        raise click.ClickException(str(exc)) from None


# -- rendering ------------------------------------------------------------------------------


def _when(at: Any, now: Any) -> str:
    """An absolute DB time with its distance from DB now, or ``-``."""
    if at is None:
        return "-"
    return f"{at.isoformat(timespec='milliseconds')} ({relative_time(at, now)})"


def _one_line(text: str | None, width: int = 80) -> str:
    """Text from outside (names, messages, errors) on one line: control characters
    escaped, credentials in URLs redacted, cut to ``width`` characters."""
    return quote_outside(text, width) if text else ""


def _task_lines(task: Task, now: Any) -> list[str]:
    """The task row as the operator reads it: times relative to DB time."""
    lines = [
        f"task {task.id} ({task.task_no}) {task.export_type} {task.status.value}",
        f"  name        {_one_line(task.task_name)}",
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
        lines.append(f"  message     {_one_line(task.failure_message, 200)}")
    # The id the task's log lines carry and the user sees in the task JSON (``traceId``).
    lines.append(f"  trace       {_one_line(task.trace_id, 40) or '-'}")
    warnings = task.warnings  # of the last successful run, as the API's task JSON shows
    if warnings:
        lines.append(f"  warnings    {len(warnings)}")
        lines += [f"    - {_one_line(w, 200)}" for w in warnings]
    return lines


def _outbox_line(row: OutboxRow, now: Any) -> str:
    if row.status.value == "SENT" and row.sent_at is not None:
        when = f"sent {relative_time(row.sent_at, now)}"
    else:
        when = f"due {relative_time(row.next_retry_at, now)}"
    error = f"  last error: {_one_line(row.last_error)}" if row.last_error else ""
    return (
        f"  v{row.dispatch_version:<3} {row.status.value:<11} attempts {row.attempt_count:<3} "
        f"{when}  event {row.event_id}{_trace(row.payload_json)}{error}"
    )


def _trace(payload_json: str) -> str:
    """The command's ``traceId`` (to find the run in the logs), if it carries one."""
    try:
        trace = json.loads(payload_json).get("traceId")
    except (ValueError, AttributeError):
        return ""
    return f"  trace {_one_line(trace, 40)}" if isinstance(trace, str) and trace else ""


def _event_line(event: TaskEvent) -> str:
    detail = ", ".join(f"{k}={_one_line(str(v), 120)}" for k, v in sorted(event.detail.items()))
    return f"  {event.at.isoformat(timespec='milliseconds')}  {event.kind.value:<16} {detail}"


def _inspection_lines(seen: TaskInspection, limits: Thresholds) -> list[str]:
    lines = _task_lines(seen.task, seen.db_now)
    lines.append(f"outbox ({len(seen.outbox)} rows)")
    lines += [_outbox_line(r, seen.db_now) for r in seen.outbox] or ["  (none)"]
    lines.append(f"events (newest {len(seen.events)}, oldest first)")
    lines += [_event_line(e) for e in seen.events] or ["  (none)"]
    lines.append("troubleshooting")
    findings = diagnose(seen, limits)
    for f in findings:
        lines.append(f"  {f.symptom.value}: {f.reason}")
        lines.append(f"    see {TROUBLESHOOTING_DOC}#{f.symptom.value}")
    if not findings:
        lines.append("  no troubleshooting row applies")
    return lines


# -- tasks ----------------------------------------------------------------------------------


@click.group()
def tasks() -> None:
    """The operator's view of tasks, read from the database (every tenant)."""


@tasks.command("list")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice([s.value for s in TaskStatus]),
    help="only this status; repeat for several (default: all)",
)
@click.option("--type", "export_type", help="only this export type")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10_000))
def list_tasks(statuses: tuple[str, ...], export_type: str | None, limit: int) -> None:
    """List tasks, newest first, with their next try and lease by DB time."""

    async def run(store: ExportStore, _: Settings) -> list[str]:
        found = await store.operator_list(
            tuple(TaskStatus(s) for s in statuses), export_type, limit
        )
        now = await store.db_now()
        lines = []
        for t in found:
            if t.status == TaskStatus.RUNNING and t.lease_until is not None:
                state = "lease ends" if t.lease_until > now else "lease ended"
                when = f"{state} {relative_time(t.lease_until, now)}"
            elif t.status == TaskStatus.PENDING:
                when = f"next try {relative_time(t.next_retry_at, now)}"
            else:
                when = f"requested {relative_time(t.requested_at, now)}"
            lines.append(
                f"{t.id:<20} {t.status.value:<9} {t.export_type:<20} v{t.dispatch_version:<3} "
                f"{t.attempt_count}/{t.max_attempts}  t{t.tenant_id}/{t.app_code}/u"
                f"{t.requested_by}  {when}  {_one_line(t.failure_message, 60)}".rstrip()
            )
        return lines

    lines = _run_with_store(run)
    for line in lines:
        click.echo(line)
    if not lines:
        click.echo("no tasks", err=True)


@tasks.command("show")
@click.argument("task_id")
def show_task(task_id: str) -> None:
    """Show one task's row, its lease and deadline by DB time."""
    tid = _task_id(task_id)

    async def run(store: ExportStore, _: Settings) -> list[str] | None:
        task = await store.get_task(tid)
        return None if task is None else _task_lines(task, await store.db_now())

    lines = _run_with_store(run)
    if lines is None:
        raise click.ClickException(f"no task {tid}")
    click.echo("\n".join(lines))


@tasks.command("cancel")
@click.argument("task_id")
def cancel_task(task_id: str) -> None:
    """Cancel a PENDING or RUNNING task, as the API's cancel does.

    A run of the task stops at its next fenced write (at most one heartbeat later)."""
    tid = _task_id(task_id)

    async def run(store: ExportStore, _: Settings) -> tuple[CancelOutcome, Task] | None:
        result = await store.cancel_task(tid, OPERATOR_CANCEL_MESSAGE)
        return None if result is None else (result.outcome, result.task)

    answer = _run_with_store(run)
    if answer is None:
        raise click.ClickException(f"no task {tid}")
    outcome, task = answer
    if outcome == CancelOutcome.NOT_CANCELLABLE:
        raise click.ClickException(
            f"task {tid} is {task.status.value}: only PENDING or RUNNING tasks can be cancelled"
        )
    click.echo(f"task {tid} {outcome.value.replace('_', ' ')}")


async def _delete_leftover(settings: Settings, object_key: str) -> None:
    """Delete a retried task's leftover file where this command can reach the storage.

    Where it cannot (the command runs on a host without the storage directory), the file
    is left to the reconciler's orphan scan, which deletes files no task references."""
    from actors.core.errors import StorageUnavailableError
    from actors.pipeline.storage import LocalDirectoryStorage

    root = settings.resolved_storage_dir
    if not root.is_dir():  # never create a storage directory on the operator's host
        click.echo(f"leftover {object_key} not deleted: no {root} here", err=True)
        return
    try:
        await LocalDirectoryStorage(root).delete(object_key)
    except (OSError, ValueError, StorageUnavailableError) as exc:
        click.echo(f"leftover {object_key} not deleted: {exc}", err=True)


@tasks.command("retry")
@click.argument("task_id")
def retry_task(task_id: str) -> None:
    """Retry a FAILED or CANCELLED task, as the API's retry does: its export type must
    still be registered and enabled (FILE_EXPORT_REGISTRY), then a new version with its
    attempts reset, admitted under the same limits; the publisher sends it at its next
    poll."""
    tid = _task_id(task_id)

    async def run(store: ExportStore, settings: Settings) -> tuple[CreateOutcome, Task | None]:
        task = await store.get_task(tid)
        if task is None:
            raise click.ClickException(f"no task {tid}")
        try:
            check_retryable(task)
        except Refused as exc:
            raise click.ClickException(f"task {tid}: {exc}") from None
        # The registry in force, checked as the API's retry checks it (registered, enabled);
        # the requester's app scope and permissions are the API's business, not the
        # operator's.
        from actors.composition import read_registry

        registry = await trio.to_thread.run_sync(read_registry, settings)
        try:
            check_requestable(task.export_type, registry.get(task.export_type))
        except (Refused, ParameterError) as exc:
            raise click.ClickException(
                f"task {tid} not retried: {exc.message} in the registry in force "
                f"({settings.registry or 'the built-in registry'})"
            ) from None
        if task.object_key:  # leftover of the failed attempt, as the API deletes it
            await _delete_leftover(settings, task.object_key)
        limits = CreateLimits(
            max_active_per_user=settings.max_active_per_user,
            max_active_per_type=settings.max_active_per_type,
            type_reserved_places=settings.type_reserved_places,
        )
        return await store.manual_retry(task, limits)

    outcome, task = _run_with_store(run)
    if outcome != CreateOutcome.CREATED or task is None:
        why = {
            CreateOutcome.USER_LIMIT: "its requester has the most active tasks allowed",
            CreateOutcome.TYPE_LIMIT: "its export type has the most active tasks allowed",
            CreateOutcome.TYPE_RESERVED: "only places kept for other requesters are free",
            CreateOutcome.DUPLICATE: "the task changed meanwhile (retried by someone else?)",
        }.get(outcome, outcome.value)
        raise click.ClickException(f"task {tid} not retried: {why}")
    click.echo(f"task {tid} retried as version {task.dispatch_version}, PENDING")


# -- inspect --------------------------------------------------------------------------------


@click.command("inspect")
@click.argument("task_id")
@click.option("--events", "event_limit", default=50, show_default=True, type=click.IntRange(1))
def inspect(task_id: str, event_limit: int) -> None:
    """One task as the operator sees it: its row, outbox rows, events, lease and deadline
    by DB time, and which row of the troubleshooting table applies."""
    tid = _task_id(task_id)

    async def run(store: ExportStore, _: Settings) -> TaskInspection | None:
        return await store.inspect_task(tid, event_limit)

    seen = _run_with_store(run)
    if seen is None:
        raise click.ClickException(f"no task {tid}")
    click.echo("\n".join(_inspection_lines(seen, Thresholds())))


def attach(group: click.Group) -> None:
    """Add the operator's commands to the ``export-center`` group."""
    from actors.acceptance import accept

    group.add_command(tasks)
    group.add_command(inspect)
    group.add_command(accept)
