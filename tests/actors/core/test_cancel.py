"""The cancel rules (``actors/core/cancel.py``), by table."""

from __future__ import annotations

import pytest

from actors.core.cancel import (
    CANCELLABLE_STATUSES,
    cancel_message,
    cancel_outcome,
    check_cancelled,
)
from actors.core.dispatch import NoClaim, classify_no_claim
from actors.core.errors import Refusal, Refused
from actors.core.models import TERMINAL_STATUSES, TaskStatus
from actors.core.outcomes import CancelOutcome
from tests.helpers import task_value


@pytest.mark.parametrize(
    ("status", "changed", "expected"),
    [
        (TaskStatus.CANCELLED, True, CancelOutcome.CANCELLED),  # PENDING/RUNNING before
        (TaskStatus.CANCELLED, False, CancelOutcome.ALREADY_CANCELLED),  # idempotent
        (TaskStatus.SUCCEEDED, False, CancelOutcome.NOT_CANCELLABLE),  # the commit won
        (TaskStatus.FAILED, False, CancelOutcome.NOT_CANCELLABLE),
        (TaskStatus.EXPIRED, False, CancelOutcome.NOT_CANCELLABLE),
    ],
)
def test_cancel_outcome(status: TaskStatus, changed: bool, expected: CancelOutcome) -> None:
    assert cancel_outcome(status, changed=changed) == expected


@pytest.mark.parametrize(
    ("outcome", "status", "refused"),
    [
        (CancelOutcome.CANCELLED, TaskStatus.CANCELLED, None),
        (CancelOutcome.ALREADY_CANCELLED, TaskStatus.CANCELLED, None),
        (
            CancelOutcome.NOT_CANCELLABLE,
            TaskStatus.SUCCEEDED,
            "only PENDING or RUNNING tasks can be cancelled; the task is SUCCEEDED",
        ),
        (
            CancelOutcome.NOT_CANCELLABLE,
            TaskStatus.EXPIRED,
            "only PENDING or RUNNING tasks can be cancelled; the task is EXPIRED",
        ),
    ],
)
def test_check_cancelled(outcome: CancelOutcome, status: TaskStatus, refused: str | None) -> None:
    task = task_value(status=status)
    if refused is None:
        assert check_cancelled(outcome, task) is task
        return
    with pytest.raises(Refused) as caught:
        check_cancelled(outcome, task)
    assert caught.value.reason == Refusal.NOT_CANCELLABLE
    assert caught.value.message == refused


@pytest.mark.parametrize("status", list(TaskStatus))
def test_only_active_statuses_are_cancellable_and_cancelled_is_terminal(
    status: TaskStatus,
) -> None:
    assert (status in CANCELLABLE_STATUSES) == (status not in TERMINAL_STATUSES)
    assert TaskStatus.CANCELLED in TERMINAL_STATUSES


def test_a_command_for_a_cancelled_task_is_the_terminal_no_claim() -> None:
    task = task_value(status=TaskStatus.CANCELLED)
    now = task.next_retry_at
    assert classify_no_claim(task, task.dispatch_version, now) == NoClaim.TERMINAL


def test_cancel_message_names_the_user() -> None:
    assert cancel_message(42) == "cancelled by user 42"
