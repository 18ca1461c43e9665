"""The task use cases, each written once: create, manual retry, cancel.

The API (``web/api.py``) and the operator's commands (``actors/cli/ops.py``) both call
these; what differs between them — who is asking, which checks of the export type apply,
where a leftover file can be reached, what the answer looks like — is passed in or done
around the call. Each is an ``async`` function over the store's ports and decides nothing
itself: the rules are the core's pure functions (:mod:`actors.core.access`,
:mod:`actors.core.admission`, :mod:`actors.core.cancel`), and a refusal is raised as
:class:`~actors.core.errors.Refused`, whose envelope code is ``web/errors.py``'s and whose
exit code and JSON are the command's (``actors/core/ops/operator_json.py``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from actors.core.access import check_retryable, task_not_found
from actors.core.admission import CreateLimits, admission_refusal
from actors.core.models import Task
from actors.core.outcomes import (
    CancelResult,
    CreateOutcome,
    CreateResult,
    ManualRetryOutcome,
    NewTask,
)
from actors.core.ports.store import ApiStore

#: Admission's refusals of a create, raised by :func:`create_task`.
_CREATE_REFUSALS = frozenset(
    {CreateOutcome.USER_LIMIT, CreateOutcome.TYPE_LIMIT, CreateOutcome.TYPE_RESERVED}
)


async def create_task(store: ApiStore, new: NewTask, limits: CreateLimits) -> CreateResult:
    """Admit and create a task with its first outbox row, in one transaction.

    The caller has checked the request and the export type (``authorise``,
    ``check_declared_parameters``) and wakes the publisher afterwards.

    Args:
        store: the API's store.
        new: the task to create.
        limits: the admission settings in force.

    Returns:
        ``CREATED`` with the new PENDING task, or ``DUPLICATE`` with the active task an
        identical create made within the duplicate window.

    Raises:
        Refused: ``USER_LIMIT``, ``TYPE_LIMIT`` or ``TYPE_RESERVED``, in the words of
            :func:`~actors.core.admission.admission_refusal`.
    """
    result = await store.create_task(new, limits)
    if result.outcome in _CREATE_REFUSALS:
        raise admission_refusal(result.outcome, new.export_type, limits, retry=False)
    return result


async def retry_task(
    store: ApiStore,
    task: Task,
    limits: CreateLimits,
    *,
    check_type: Callable[[Task], object],
    delete_leftover: Callable[[str], Awaitable[object]],
) -> Task:
    """Retry a FAILED or CANCELLED task by hand: PENDING at a new version, attempts reset.

    In this order: the task must be retryable; its export type is checked again by the
    caller's ``check_type`` (the API: registered, enabled, in the caller's scope and
    permissions; the operator: registered and enabled); the failed attempt's leftover file
    is deleted; then the store admits the retry under the create limits and writes it.

    Args:
        store: the API's store.
        task: the task as read by the caller.
        limits: the admission settings in force.
        check_type: raises when the task's export type may not be run again now.
        delete_leftover: deletes an object key where the caller can reach the storage.

    Returns:
        The task, PENDING at its new ``dispatch_version``.

    Raises:
        Refused: ``NOT_RETRYABLE`` (not FAILED or CANCELLED); ``USER_LIMIT``,
            ``TYPE_LIMIT``, ``TYPE_RESERVED`` (admission); ``CHANGED`` (the task changed
            since it was read). Whatever ``check_type`` raises passes through.
    """
    check_retryable(task)
    check_type(task)
    if task.object_key:
        await delete_leftover(task.object_key)  # the failed attempt's file (design-rules §9.5)
    outcome, retried = await store.manual_retry(task, limits)
    if outcome is not ManualRetryOutcome.RETRIED or retried is None:
        raise admission_refusal(outcome, task.export_type, limits, retry=True)
    return retried


async def cancel_task(
    store: ApiStore, task_id: int, message: str, *, by: int | None = None
) -> CancelResult:
    """Cancel a PENDING or RUNNING task; idempotent on CANCELLED.

    A run of the task stops at its next fenced write; the caller wakes one running in its
    own process and counts the cancel. Whether the result may be answered as success is
    :func:`actors.core.cancel.check_cancelled`'s.

    Args:
        store: the API's store.
        task_id: the task's id.
        message: the task's ``failure_message`` once cancelled.
        by: the user who cancelled it (recorded in its history), ``None`` for an operator.

    Returns:
        The store's outcome (``CANCELLED``, ``ALREADY_CANCELLED``, ``NOT_CANCELLABLE``)
        and the task after it.

    Raises:
        Refused: ``NOT_FOUND`` when there is no such task.
    """
    result = await store.cancel_task(task_id, message, by=by)
    if result is None:
        raise task_not_found(task_id)
    return result
