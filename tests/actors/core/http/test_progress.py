"""What the progress stream sends (actors/core/http/progress.py): table tests."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from actors.core.errors import Refusal
from actors.core.http.progress import (
    StreamLimits,
    admit_stream,
    feed_round,
    first_step,
    follow,
    next_step,
    settle_missing,
    task_state,
)
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


# --- the feed and its caps (issue 24 item 1) ---------------------------------------------

T0 = datetime(2026, 12, 5, 8, 0, tzinfo=UTC)


def at(task: Task, seconds: float) -> Task:
    """``task`` written ``seconds`` after T0."""
    return dataclasses.replace(task, updated_at=T0 + timedelta(seconds=seconds))


@pytest.mark.parametrize(
    ("by_user", "total", "refused"),
    [
        (0, 0, None),
        (19, 9_999, None),
        (20, 100, Refusal.STREAMS_PER_USER),
        (0, 10_000, Refusal.STREAMS_PER_INSTANCE),
        (20, 10_000, Refusal.STREAMS_PER_INSTANCE),  # the instance's cap is said first
    ],
)
def test_admit_stream(by_user: int, total: int, refused: Refusal | None) -> None:
    refusal = admit_stream(by_user, total, StreamLimits(per_user=20, per_instance=10_000))
    assert (refusal.reason if refusal else None) == refused
    if refusal is not None:
        assert "polling" in str(refusal) or "polls" in str(refusal)


def test_the_feed_passes_a_change_once_even_when_its_overlap_reads_it_again() -> None:
    first, last = feed_round({}, [at(t(1, P), 0), at(t(2, R, 5), 1)], T0)
    assert ids(first) == [1, 2]
    again, last = feed_round(last, [at(t(1, P), 0), at(t(2, R, 5), 1), at(t(3), 2)], T0)
    assert ids(again) == [3]  # 1 and 2 read again in the overlap, unchanged: not passed on
    moved, last = feed_round(last, [at(t(2, R, 9), 3)], T0)
    assert ids(moved) == [2]


def test_the_feed_forgets_what_its_overlap_cannot_read_again() -> None:
    _, last = feed_round({}, [at(t(1, P), 0), at(t(2, P), 10)], T0)
    _, last = feed_round(last, [], T0 + timedelta(seconds=5))
    assert set(last) == {2}


def test_a_stream_follows_changes_and_lets_go_of_ended_tasks() -> None:
    seen = first_step([t(1, R, 10), t(2, P)]).seen
    step = follow(seen, [t(1, R, 10), t(2, R)])
    assert ids(step.send) == [2]  # 1 unchanged
    step = follow(step.seen, [t(1, S, 20, 20), t(5, P)])
    assert ids(step.send) == [1, 5]  # an end, and a task new to the stream
    assert set(step.seen) == {2, 5}  # ended tasks are not followed any more
    assert step.missing == ()
