"""What the progress stream sends (actors/core/http/progress.py): table tests."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta

import pytest

from actors.core.access import owns
from actors.core.errors import Refusal
from actors.core.http.progress import (
    Audience,
    Delivery,
    StreamLimits,
    admit_stream,
    audience,
    audiences,
    fan_out,
    feed_round,
    first_step,
    follow,
    next_step,
    settle_missing,
    task_event,
    task_state,
)
from actors.core.models import Task, TaskStatus
from actors.core.principal import DOWNLOAD_ALL_PERMISSION, AppCode, Principal
from actors.core.task_json import task_json
from tests.helpers import task_value

P, R, S, F = TaskStatus.PENDING, TaskStatus.RUNNING, TaskStatus.SUCCEEDED, TaskStatus.FAILED
PLATFORM, MERCHANT = AppCode.PLATFORM, AppCode.MERCHANT


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


# --- the fan-out: audiences, one encoding per change (issue 35 item 6) --------------------

ADMIN = (DOWNLOAD_ALL_PERMISSION,)


def who(
    user: int, tenant: int = 0, perms: tuple[str, ...] = (), app: AppCode = PLATFORM
) -> Principal:
    return Principal(user_id=user, tenant_id=tenant, app_code=app, perms=frozenset(perms))


def of(task_id: int, user: int, tenant: int = 0, app: str = "PLATFORM", done: int = 0) -> Task:
    return task_value(
        id=task_id, requested_by=user, tenant_id=tenant, app_code=app, processed_rows=done
    )


@pytest.mark.parametrize(
    ("principal", "expected"),
    [
        (who(7), Audience(0, "PLATFORM", 7)),  # an ordinary user: its own tasks
        (who(7, 3), Audience(3, "PLATFORM", 7)),
        (who(7, 0, ADMIN), Audience(0, "PLATFORM", None)),  # every requester of its tenant
        (who(8, 0, ADMIN), Audience(0, "PLATFORM", None)),  # shared by every administrator
        (who(7, 0, ADMIN, MERCHANT), Audience(0, "MERCHANT", None)),
        (who(7, 0, ("platform:customer:export",)), Audience(0, "PLATFORM", 7)),
    ],
)
def test_the_audience_of_a_stream(principal: Principal, expected: Audience) -> None:
    assert audience(principal) == expected


PRINCIPALS = [
    who(7),
    who(8),
    who(7, 1),
    who(9, 0, ADMIN),
    who(9, 1, ADMIN),
    who(9, 0, ADMIN, MERCHANT),
    who(7, 0, (), MERCHANT),
]
TASKS = [of(1, 7), of(2, 8), of(3, 7, 1), of(4, 7, 0, "MERCHANT"), of(5, 9, 1)]


@pytest.mark.parametrize("principal", PRINCIPALS)
@pytest.mark.parametrize("task", TASKS)
def test_a_task_reaches_the_audience_of_exactly_those_who_own_it(
    principal: Principal, task: Task
) -> None:
    """The fan-out's rule is the list's (``actors.core.access.owns``), for every pair."""
    assert (audience(principal) in audiences(task)) == owns(principal, task)


A7, A8 = Audience(0, "PLATFORM", 7), Audience(0, "PLATFORM", 8)
ADMINS, ADMINS_1 = Audience(0, "PLATFORM", None), Audience(1, "PLATFORM", None)


@pytest.mark.parametrize(
    ("changes", "listening", "handed"),
    [
        ([], {A7, ADMINS}, {}),
        ([of(1, 7)], {A7, A8, ADMINS, ADMINS_1}, {A7: [1], ADMINS: [1]}),
        ([of(1, 7)], {A8, ADMINS_1}, {}),  # nobody who may see it listens
        ([of(2, 8), of(1, 7)], {A7, ADMINS}, {A7: [1], ADMINS: [1, 2]}),  # id order
        ([of(1, 7, 1)], {A7, ADMINS, ADMINS_1}, {ADMINS_1: [1]}),  # another tenant's
        ([of(1, 7, 0, "MERCHANT")], {A7, ADMINS}, {}),  # another app's
        ([of(1, 7, done=1), of(1, 7, done=2)], {A7}, {A7: [1]}),  # one task once
    ],
)
def test_fan_out(
    changes: list[Task], listening: set[Audience], handed: dict[Audience, list[int]]
) -> None:
    out = fan_out(changes, listening)
    assert {k: ids(v) for k, v in out.items()} == handed


def test_a_task_read_twice_is_fanned_out_in_its_last_state() -> None:
    out = fan_out([of(1, 7, done=1), of(1, 7, done=2)], {A7})
    assert out[A7][0].processed_rows == 2


def test_an_event_is_the_task_json_on_one_data_line_the_same_for_every_reader() -> None:
    task = task_value(id=42, task_name="Ünïcode\nname", status=R, processed_rows=5)
    data = json.dumps(task_json(task), separators=(",", ":"), ensure_ascii=False)
    assert task_event(task) == f"event: task\ndata: {data}\n\n".encode()
    assert b"\n" not in task_event(task)[len(b"event: task\ndata: ") : -2]


@pytest.mark.parametrize(
    ("send", "written"),
    [
        ([1, 2, 3], b"123"),  # all of them: the shared payload itself
        ([1, 3], b"13"),
        ([2], b"2"),
        ([], b""),
    ],
)
def test_a_delivery_writes_the_events_sent(send: list[int], written: bytes) -> None:
    tasks = (t(1), t(2), t(3))
    delivery = Delivery.of(tasks, {1: b"1", 2: b"2", 3: b"3"})
    assert delivery.bytes_of(tuple(x for x in tasks if x.id in send)) == written
    if len(send) == 3:
        assert delivery.bytes_of(tasks) is delivery.payload
