"""The operator's commands: ``tasks list|show|cancel|retry``, ``inspect`` and ``accept``.

``tasks`` and ``inspect`` read the database directly, configured from the environment like
``migrate`` (``FILE_EXPORT_DATABASE_URL`` …): the operator's view of every tenant, with
leases and deadlines told by the database clock. ``tasks cancel`` and ``tasks retry`` run
the same store transitions as the API's cancel and retry, as an operator rather than as
a user. ``accept`` works over HTTP only (``actors.cli.acceptance``): it checks a deployed
service from the outside, as a user would.

With ``--json``, ``tasks`` and ``inspect`` print one JSON document on stdout instead of
text (``actors.core.ops.operator_json``): the API's task object, an inspection, or what a
cancel or retry did; a failure prints ``{"error": ...}`` there and exits as the text mode
does. Logs and warnings go to stderr in both modes.

See ``docs/operations.md`` ("Operator's commands" and "Troubleshooting").
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import trio

from actors.cli.ops_text import LIST_HEADER, inspection_lines, list_line, task_lines
from actors.core.access import check_requestable, parse_task_reference, task_not_found
from actors.core.cancel import check_cancelled
from actors.core.errors import ConfigError, ParameterError, Refused
from actors.core.events import TaskInspection
from actors.core.models import Task, TaskStatus
from actors.core.ops.operator_json import (
    OperatorOutcome,
    cancel_outcome,
    error_json,
    inspection_json,
    outcome_json,
    retry_outcome,
)
from actors.core.ops.troubleshooting import Thresholds, diagnose
from actors.core.task_json import task_json
from actors.core.usecases import cancel_task as cancel_task_once
from actors.core.usecases import retry_task as retry_task_once
from actors.plumbing.config import Settings
from actors.plumbing.config_loading import load_settings

if TYPE_CHECKING:
    from actors.core.ports.storage import ExportStorage
    from db.store import ExportStore

R = TypeVar("R")

#: What a task cancelled with ``tasks cancel`` shows as its message.
OPERATOR_CANCEL_MESSAGE = "cancelled by an operator"


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
    from actors.composition.database import open_database
    from db.ids import IdGenerator
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
    """The task argument: its id, or the number the page shows (``EXP<id>``), by the API's
    own rule for the digits (``actors.core.access.parse_task_reference``); anything else is
    a usage error, never a traceback."""
    try:
        return parse_task_reference(value)
    except ParameterError as exc:
        raise click.BadParameter(exc.message) from None
    except Refused as exc:  # digits past the id range: no task can have them
        raise _Refused(str(exc), value, OperatorOutcome.NOT_FOUND) from None


# -- failures and --json ----------------------------------------------------------------------


class _Refused(click.ClickException):
    """The command could not do what it was asked to a task (exit 1, as any click error).

    Attributes:
        task_id: the id asked for (the argument as given when it is past the id range).
        outcome: what happened to the task, for ``tasks cancel|retry --json``.
        task: the task as the command read it, if it did.
    """

    def __init__(
        self,
        message: str,
        task_id: int | str,
        outcome: OperatorOutcome,
        task: Task | None = None,
    ) -> None:
        super().__init__(message)
        self.task_id = task_id
        self.outcome = outcome
        self.task = task


def _no_task(tid: int) -> _Refused:
    return _refused(task_not_found(tid), tid, OperatorOutcome.NOT_FOUND)


def _refused(
    exc: Refused, tid: int, outcome: OperatorOutcome, task: Task | None = None, prefix: str = ""
) -> _Refused:
    """The core's refusal as the command's failure: its own words, after ``prefix``."""
    return _Refused(f"{prefix}{exc.message}", tid, outcome, task)


json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="print one JSON document on stdout (tasks as the API shows them; a failure as "
    '{"error": ...}), for scripts and jq',
)


def _print_json(document: Any) -> None:
    """``document`` as UTF-8 JSON on stdout, whatever the locale's encoding, ending in a
    newline. A lone surrogate (text no UTF-8 can hold) is written as its JSON escape."""
    text = json.dumps(document, ensure_ascii=False, indent=2) + "\n"
    sys.stdout.flush()
    out = getattr(sys.stdout, "buffer", None)
    if out is None:  # a text-only stream put in place of stdout: its own encoding
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    out.write(text.encode("utf-8", "backslashreplace"))
    out.flush()


@contextmanager
def _answering(as_json: bool, *, outcomes: bool = False) -> Iterator[None]:
    """Run a command's body; with ``--json``, turn a click error it raises into the JSON
    answer on stdout, with the exit status the text mode has (1 for a refusal, 2 for a
    usage error such as an id that is no number).

    Args:
        as_json: whether ``--json`` was given; without it, errors pass through to click,
            which prints them on stderr.
        outcomes: answer a refusal as :func:`outcome_json` (``tasks cancel|retry``)
            rather than as ``{"error": ...}``.
    """
    try:
        yield
    except click.ClickException as exc:
        if not as_json:
            raise
        if outcomes and isinstance(exc, _Refused):
            message = exc.format_message()
            _print_json(outcome_json(exc.task_id, exc.outcome, exc.task, message))
        else:
            _print_json(error_json(exc.format_message()))
        raise click.exceptions.Exit(exc.exit_code) from None


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
@json_option
def list_tasks(
    statuses: tuple[str, ...], export_type: str | None, limit: int, as_json: bool
) -> None:
    """List tasks, newest first, with their next try and lease by DB time.

    With --json: an array of tasks as the API shows them."""

    async def run(store: ExportStore, _: Settings) -> tuple[list[Task], datetime]:
        found = await store.operator_list(
            tuple(TaskStatus(s) for s in statuses), export_type, limit
        )
        return found, await store.db_now()

    with _answering(as_json):
        found, now = _run_with_store(run)
    if as_json:
        _print_json([task_json(t) for t in found])
        return
    if found:
        click.echo(LIST_HEADER)
    for task in found:
        click.echo(list_line(task, now))
    if not found:
        click.echo("no tasks", err=True)


@tasks.command("show")
@click.argument("task_id")
@json_option
def show_task(task_id: str, as_json: bool) -> None:
    """Show one task's row, its lease and deadline by DB time.

    With --json: the task as the API's GET .../export-tasks/{id} shows it."""

    async def run(store: ExportStore, _: Settings) -> tuple[Task, datetime] | None:
        task = await store.get_task(tid)
        return None if task is None else (task, await store.db_now())

    with _answering(as_json):
        tid = _task_id(task_id)
        found = _run_with_store(run)
        if found is None:
            raise _no_task(tid)
    task, now = found
    if as_json:
        _print_json(task_json(task))
    else:
        click.echo("\n".join(task_lines(task, now)))


@tasks.command("cancel")
@click.argument("task_id")
@json_option
def cancel_task(task_id: str, as_json: bool) -> None:
    """Cancel a PENDING or RUNNING task, as the API's cancel does.

    A run of the task stops at its next fenced write (at most one heartbeat later).
    With --json: {"id", "outcome", "task"} (outcome cancelled, already-cancelled,
    not-cancellable or not-found), plus "error" when it failed."""

    async def run(store: ExportStore, _: Settings) -> tuple[OperatorOutcome, Task]:
        try:
            result = await cancel_task_once(store, tid, OPERATOR_CANCEL_MESSAGE)
        except Refused as exc:  # the one refusal a cancel raises: no such task
            raise _refused(exc, tid, OperatorOutcome.NOT_FOUND) from None
        outcome = cancel_outcome(result.outcome)
        try:
            check_cancelled(result.outcome, result.task)
        except Refused as exc:
            raise _refused(exc, tid, outcome, result.task, prefix=f"task {tid}: ") from None
        return outcome, result.task

    with _answering(as_json, outcomes=True):
        tid = _task_id(task_id)
        outcome, task = _run_with_store(run)
    if as_json:
        _print_json(outcome_json(tid, outcome, task))
    else:
        click.echo(f"task {tid} {outcome.value.replace('-', ' ')}")


async def _delete_leftover(settings: Settings, object_key: str) -> None:
    """Delete a retried task's leftover file where this command can reach the storage.

    Where it cannot (the command runs on a host without the storage directory), the file
    is left to the reconciler's orphan scan, which deletes files no task references."""
    from actors.core.errors import StorageUnavailableError
    from actors.storage.local import LocalDirectoryStorage

    storage: ExportStorage
    if settings.object_store is not None:
        from actors.composition.adapters import open_storage

        storage = open_storage(settings)  # the bucket the service uses
    else:
        root = settings.resolved_storage_dir
        if not root.is_dir():  # never create a storage directory on the operator's host
            click.echo(f"leftover {object_key} not deleted: no {root} here", err=True)
            return
        storage = LocalDirectoryStorage(root)
    try:
        await storage.delete(object_key)
    except (OSError, ValueError, StorageUnavailableError) as exc:
        click.echo(f"leftover {object_key} not deleted: {exc}", err=True)


@tasks.command("retry")
@click.argument("task_id")
@json_option
def retry_task(task_id: str, as_json: bool) -> None:
    """Retry a FAILED or CANCELLED task, as the API's retry does: its export type must
    still be registered and enabled (FILE_EXPORT_REGISTRY), then a new version with its
    attempts reset, admitted under the same limits; the publisher sends it at its next
    poll.

    With --json: {"id", "outcome", "task"} (outcome retried, not-found, not-retryable,
    type-unknown, type-disabled, user-limit, type-limit, type-reserved or
    changed-meanwhile), plus "error" when it failed."""

    async def run(store: ExportStore, settings: Settings) -> Task:
        task = await store.get_task(tid)
        if task is None:
            raise _no_task(tid)
        # The registry in force, checked as the API's retry checks it (registered, enabled);
        # the requester's app scope and permissions are the API's business, not the
        # operator's.
        from actors.composition.registry import read_registry

        registry = await trio.to_thread.run_sync(read_registry, settings)

        def check_type(task: Task) -> None:
            try:
                check_requestable(task.export_type, registry.get(task.export_type))
            except (Refused, ParameterError) as exc:
                unknown = isinstance(exc, ParameterError)
                raise _Refused(
                    f"task {tid} not retried: {exc.message} in the registry in force "
                    f"({settings.registry or 'the built-in registry'})",
                    tid,
                    OperatorOutcome.TYPE_UNKNOWN if unknown else OperatorOutcome.TYPE_DISABLED,
                    task,
                ) from None

        try:
            return await retry_task_once(
                store,
                task,
                settings.create_limits,
                check_type=check_type,
                delete_leftover=lambda key: _delete_leftover(settings, key),
            )
        except Refused as exc:
            outcome = retry_outcome(exc.reason)
            prefix = f"task {tid}: " if outcome == OperatorOutcome.NOT_RETRYABLE else ""
            raise _refused(exc, tid, outcome, task, prefix or f"task {tid} not retried: ") from None

    with _answering(as_json, outcomes=True):
        tid = _task_id(task_id)
        task = _run_with_store(run)
    if as_json:
        _print_json(outcome_json(tid, OperatorOutcome.RETRIED, task))
    else:
        click.echo(f"task {tid} retried as version {task.dispatch_version}, PENDING")


# -- inspect --------------------------------------------------------------------------------


@click.command("inspect")
@click.argument("task_id")
@click.option("--events", "event_limit", default=50, show_default=True, type=click.IntRange(1))
@json_option
def inspect(task_id: str, event_limit: int, as_json: bool) -> None:
    """One task as the operator sees it: its row, outbox rows, events, lease and deadline
    by DB time, and which row of the troubleshooting table applies.

    With --json: {"task", "dbTime", "lease", "deadline", "outbox", "events",
    "troubleshooting", ...}; every ...InSeconds field is that time minus dbTime."""

    async def run(store: ExportStore, _: Settings) -> TaskInspection | None:
        return await store.inspect_task(tid, event_limit)

    with _answering(as_json):
        tid = _task_id(task_id)
        seen = _run_with_store(run)
        if seen is None:
            raise _no_task(tid)
    findings = diagnose(seen, Thresholds())
    if as_json:
        _print_json(inspection_json(seen, findings))
    else:
        click.echo("\n".join(inspection_lines(seen, findings)))


def attach(group: click.Group) -> None:
    """Add the operator's commands to the ``export-center`` group."""
    from actors.cli.acceptance import accept

    group.add_command(tasks)
    group.add_command(inspect)
    group.add_command(accept)
