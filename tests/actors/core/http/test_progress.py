"""What the progress stream sends (actors/core/http/progress.py): table tests."""

from __future__ import annotations

import pytest

from actors.core.http.progress import first_step, next_step, settle_missing, task_state
from actors.core.models import Task, TaskStatus
from tests.helpers import task_value

P, R, S, F = TaskStatus.PENDING, TaskStatus.RUNNING, TaskStatus.SUCCEEDED, TaskStatus.FAILED


def t(task_id: int, status: TaskStatus = P, done: int = 0, total: int | None = None) -> Task:
    return task_value(id=task_id, status=status, processed_rows=done, total_rows=total)


def ids(tasks: tuple[Task, ...]) -> list[int]:
    return [x.id for x in tasks]


def test_on_connect_the_live_tasks_are_sent_and_all_remembered() -> None:
    step = first_step([t(3, R, 10, 100), t(1, S), t(2, P), t(1, S)])
    assert ids(step.send) == [2, 3]  # id order, finished ones not sent
    assert set(step.seen) == {1, 2, 3} and step.missing == ()


@pytest.mark.parametrize(
    ("before", "after", "sent", "missing"),
    [
        ([t(1, P)], [t(1, P)], [], []),  # nothing changed
        ([t(1, P)], [t(1, R)], [1], []),  # status
        ([t(1, R, 0)], [t(1, R, 500)], [1], []),  # processed rows
        ([t(1, R, 0)], [t(1, R, 0, 1000)], [1], []),  # total rows
        ([t(1, R, 5, 10)], [t(1, S, 10, 10)], [1], []),  # finished, still among the newest
        ([], [t(7, P)], [7], []),  # created meanwhile
        ([], [t(7, S, 10, 10)], [7], []),  # created and finished between two polls
        ([t(1, R)], [], [], [1]),  # a live task left the read: look it up
        ([t(1, S)], [], [], []),  # a finished one left the newest: forgotten
        ([t(1, R), t(2, P)], [t(2, R), t(3, P)], [2, 3], [1]),
    ],
)
def test_next_step(
    before: list[Task], after: list[Task], sent: list[int], missing: list[int]
) -> None:
    seen = first_step(before).seen
    step = next_step(seen, after)
    assert ids(step.send) == sent
    assert list(step.missing) == missing
    assert set(step.seen) == {x.id for x in after} | set(missing)


def test_a_missing_task_is_settled_by_its_lookup() -> None:
    seen = next_step(first_step([t(1, R, 5), t(2, R, 5), t(3, P)]).seen, []).seen
    step = settle_missing(seen, {1: t(1, S, 9, 9), 2: t(2, R, 5), 3: None})
    assert ids(step.send) == [1]  # 2 unchanged, 3 gone
    assert step.seen == {}  # looked-up tasks are no longer followed


def test_the_state_is_status_and_row_counts() -> None:
    assert task_state(t(1, R, 5, 10)) == (R, 5, 10)
    assert task_state(task_value(id=1, status=F, failure_message="x")) == (F, 0, None)
