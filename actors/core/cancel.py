"""Cancelling an export task: which states may be cancelled, and what a cancel answered.

A task may be cancelled while it is PENDING (queued, or waiting out a retry back-off) or
RUNNING. Cancelling a CANCELLED task again is not an error: the caller gets the task as it
is (the call is idempotent, so a double click or a retried request is harmless). Any
other status is final and refused with :attr:`~actors.core.errors.Refusal.NOT_CANCELLABLE`.

Who may cancel is the ownership rule of :mod:`actors.core.access` (the requester, or a
holder of ``platform:download:all`` in the same tenant and app). The store carries the
cancel out in one transaction (``db.store.api``); a RUNNING attempt notices at its
next fenced write, which then matches no row, and ends like a run whose lease was lost
(``docs/architecture.md``, "The life of a task").
"""

from __future__ import annotations

from actors.core.errors import Refusal, Refused
from actors.core.models import Task, TaskStatus
from actors.core.outcomes import CancelOutcome

#: Statuses a cancel moves to CANCELLED.
CANCELLABLE_STATUSES: tuple[TaskStatus, ...] = (TaskStatus.PENDING, TaskStatus.RUNNING)


def cancel_outcome(status: TaskStatus, *, changed: bool) -> CancelOutcome:
    """What a cancel did, from the task's status after it and whether it changed a row.

    Args:
        status: the task's status as read after the cancel's update, in its transaction.
        changed: the update matched the task (it was PENDING or RUNNING).

    Returns:
        ``CANCELLED`` when this cancel moved the task; ``ALREADY_CANCELLED`` when it was
        cancelled before; ``NOT_CANCELLABLE`` for any other status (SUCCEEDED, FAILED,
        EXPIRED — including a task whose final commit won a race with this cancel).
    """
    if changed:
        return CancelOutcome.CANCELLED
    if status == TaskStatus.CANCELLED:
        return CancelOutcome.ALREADY_CANCELLED
    return CancelOutcome.NOT_CANCELLABLE


def check_cancelled(outcome: CancelOutcome, task: Task) -> Task:
    """The answer to a cancel request, or its refusal.

    Args:
        outcome: from :func:`cancel_outcome` (through the store).
        task: the task as it is after the cancel.

    Returns:
        ``task``, CANCELLED, for ``CANCELLED`` and ``ALREADY_CANCELLED``.

    Raises:
        Refused: ``NOT_CANCELLABLE`` for a task in a final state other than CANCELLED,
            naming its status.
    """
    if outcome == CancelOutcome.NOT_CANCELLABLE:
        raise Refused(
            Refusal.NOT_CANCELLABLE,
            f"only PENDING or RUNNING tasks can be cancelled; the task is {task.status.value}",
        )
    return task


def cancel_message(user_id: int) -> str:
    """The ``failureMessage`` a cancelled task shows: who cancelled it.

    Args:
        user_id: the caller who cancelled it.

    Returns:
        e.g. ``"cancelled by user 42"``.
    """
    return f"cancelled by user {user_id}"
