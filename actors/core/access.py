"""Who may see, create, download and retry an export task: the ownership rule.

A task belongs to its requester: the triple (tenant, app, user) stored on it. A caller sees
it when the tenant and app match and it is the requester, or when it holds
``platform:download:all`` (:data:`DOWNLOAD_ALL_PERMISSION`), which widens the view to every
requester of the caller's own tenant and app — never beyond them. Downloading and retrying
need the same visibility; creating and retrying also need the export type's registry
entry to allow the caller (:func:`authorise`).

A task the caller may not see is refused exactly like a task that does not exist, so task
ids do not leak across requesters. The list route applies the same rule in SQL (the store's
``list_tasks`` filters by tenant, app and, unless :func:`sees_all_requesters`, the
requester); it takes that choice from here.

Refusals are domain errors (:mod:`actors.core.errors`); ``web/errors.py`` maps them to
envelope codes.
"""

from __future__ import annotations

from actors.core.definitions import ExportDefinition
from actors.core.errors import ParameterError, Refusal, Refused
from actors.core.ids import TASK_NO_PREFIX
from actors.core.models import Task, TaskStatus
from actors.core.principal import DOWNLOAD_ALL_PERMISSION, Principal

#: Largest task id: ids are signed 64-bit (``BIGINT``).
MAX_TASK_ID = 2**63 - 1


def sees_all_requesters(principal: Principal) -> bool:
    """Whether ``principal`` sees the tasks of every requester of its tenant and app.

    Args:
        principal: the authenticated caller.

    Returns:
        True when it holds :data:`DOWNLOAD_ALL_PERMISSION`; the tenant and app still
        bound what it sees.
    """
    return principal.has(DOWNLOAD_ALL_PERMISSION)


def sees_instances(principal: Principal) -> bool:
    """Whether ``principal`` sees which instance ran a task (an event's ``instance``:
    host name and process id). Only administrators: for anyone else it maps the service's
    hosts and processes and tells nothing about their export.

    Args:
        principal: the authenticated caller.

    Returns:
        True when it holds :data:`DOWNLOAD_ALL_PERMISSION`.
    """
    return principal.has(DOWNLOAD_ALL_PERMISSION)


def owns(principal: Principal, task: Task) -> bool:
    """The ownership rule (``ownedTask``): same tenant and app, and the requester or
    one who sees all requesters (:func:`sees_all_requesters`).

    Args:
        principal: the authenticated caller.
        task: the task asked for.

    Returns:
        True if the caller may see, download and (registry permitting) retry the task.
    """
    return (
        task.tenant_id == principal.tenant_id
        and task.app_code == principal.app_code.value
        and (task.requested_by == principal.user_id or sees_all_requesters(principal))
    )


def parse_task_reference(raw: str) -> int:
    """A task named by its id or by the number people are shown (``EXP<id>``, any case),
    for the operator's commands.

    Raises:
        ParameterError: neither (field ``task``), in words that say what is wanted.
        Refused: as :func:`parse_task_id` for digits outside the id range.
    """
    digits = raw
    if raw[: len(TASK_NO_PREFIX)].upper() == TASK_NO_PREFIX:
        digits = raw[len(TASK_NO_PREFIX) :]
    if not (digits.isascii() and digits.isdigit()):
        raise ParameterError(
            "task", f"{raw!r} is not a task: give its id (digits) or its number ({TASK_NO_PREFIX}…)"
        )
    return parse_task_id(digits)


def parse_task_id(raw_id: str) -> int:
    """The task id of a request path.

    Args:
        raw_id: the path segment, as sent.

    Returns:
        The id, 1 .. :data:`MAX_TASK_ID`.

    Raises:
        ParameterError: ``raw_id`` is not a string of ASCII digits (field ``taskId``): a
            sign, spaces or other digits than 0-9 are not an id, although ``int()`` would
            take them; nor are digits with a leading zero (``007``): one task has one
            spelling, so logs, caches and links never hold two names for it.
        Refused: ``NOT_FOUND`` for digits outside the id range — no task can have them.
    """
    if not (raw_id.isascii() and raw_id.isdigit()):
        raise ParameterError("taskId", f"invalid task id {raw_id!r}")
    if len(raw_id) > 1 and raw_id.startswith("0"):
        raise ParameterError(
            "taskId", f"invalid task id {raw_id[:24]!r}: write it without leading zeros"
        )
    if len(raw_id) > len(str(MAX_TASK_ID)) + 1:  # never int() thousands of digits
        raise task_not_found(f"{raw_id[:24]}…")
    task_id = int(raw_id)
    if not 0 < task_id <= MAX_TASK_ID:
        raise task_not_found(raw_id)
    return task_id


def task_not_found(task_id: int | str) -> Refused:
    """The refusal for a task that does not exist (or that the caller may not see: the same
    words, so ids do not leak): ``NOT_FOUND``, ``export task <id> not found``.

    Args:
        task_id: the id as the caller gave it.
    """
    return Refused(Refusal.NOT_FOUND, f"export task {task_id} not found")


def visible_task(principal: Principal, task: Task | None, raw_id: str) -> Task:
    """The task, if the caller may see it (:func:`owns`).

    Args:
        principal: the authenticated caller.
        task: the task read for the id, or ``None`` if there is none.
        raw_id: the id as the caller sent it, for the message.

    Returns:
        ``task``.

    Raises:
        Refused: ``NOT_FOUND`` when there is no such task or the caller may not see it —
            the same answer, so ids do not leak.
    """
    if task is None or not owns(principal, task):
        raise task_not_found(raw_id)
    return task


def downloadable_key(task: Task) -> str:
    """The object key of a visible task's file, if it may be downloaded now: only a
    SUCCEEDED task has a file, until it expires.

    Args:
        task: a task the caller may see (:func:`visible_task`).

    Returns:
        The file's object key in storage.

    Raises:
        Refused: ``FILE_EXPIRED`` for an EXPIRED task (its file was deleted);
            ``NOT_DOWNLOADABLE`` for any other status, or a SUCCEEDED task without a key.
    """
    if task.status == TaskStatus.EXPIRED:
        raise Refused(Refusal.FILE_EXPIRED, "the file has expired and was deleted")
    if task.status != TaskStatus.SUCCEEDED or not task.object_key:
        raise Refused(
            Refusal.NOT_DOWNLOADABLE,
            f"the task is {task.status.value}; only SUCCEEDED tasks can be downloaded",
        )
    return task.object_key


#: Statuses a manual retry starts again from: a failure, or a cancel the user regrets.
RETRYABLE_STATUSES: tuple[TaskStatus, ...] = (TaskStatus.FAILED, TaskStatus.CANCELLED)


def check_retryable(task: Task) -> None:
    """A manual retry applies to a FAILED or CANCELLED task only; the registry checks
    follow (:func:`authorise`).

    Args:
        task: a task the caller may see (:func:`visible_task`).

    Raises:
        Refused: ``NOT_RETRYABLE`` when the task is neither FAILED nor CANCELLED.
    """
    if task.status not in RETRYABLE_STATUSES:
        raise Refused(
            Refusal.NOT_RETRYABLE,
            f"only FAILED or CANCELLED tasks can be retried; the task is {task.status.value}",
        )


def check_requestable(export_type: str, definition: ExportDefinition | None) -> ExportDefinition:
    """The registry checks of create and manual retry that do not depend on the caller:
    the type is registered and enabled. :func:`authorise` starts with them; an operator's
    retry (``export-center tasks retry``), which has no caller's permissions, applies
    them alone.

    Args:
        export_type: the export type asked for.
        definition: its registry entry in force, or ``None`` if it is not registered.

    Returns:
        ``definition``, once it is registered and enabled.

    Raises:
        ParameterError: the type is not registered (field ``exportType``).
        Refused: ``DISABLED``.
    """
    if definition is None:
        raise ParameterError("exportType", f"unknown export type {export_type!r}")
    if not definition.enabled:
        raise Refused(Refusal.DISABLED, f"export type {export_type} is disabled")
    return definition


def authorise(
    export_type: str, definition: ExportDefinition | None, principal: Principal
) -> ExportDefinition:
    """The registry checks of create and manual retry, in order:
    registered, enabled (:func:`check_requestable`), app scope, required permission. A
    manual retry checks them again against the registry in force, not the one of the
    original create.

    Args:
        export_type: the export type asked for.
        definition: its registry entry in force, or ``None`` if it is not registered.
        principal: the authenticated caller.

    Returns:
        ``definition``, once the caller may use it.

    Raises:
        ParameterError: the type is not registered (field ``exportType``).
        Refused: ``DISABLED``, ``OUT_OF_SCOPE`` (the type's ``app-scope`` is another app
            than the caller's) or ``MISSING_PERMISSION``.
    """
    definition = check_requestable(export_type, definition)
    if definition.app_scope != principal.app_code:
        raise Refused(
            Refusal.OUT_OF_SCOPE,
            f"export type {export_type} is not available to app {principal.app_code.value}",
        )
    if not principal.has(definition.required_permission):
        raise Refused(
            Refusal.MISSING_PERMISSION, f"missing permission {definition.required_permission}"
        )
    return definition
