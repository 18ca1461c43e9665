"""The progress feed (``web/progress_feed.py``, issue 24 item 1): one read per interval for
every open stream, none with no stream open, each change routed only to the streams
allowed to see it, caps, a stream that falls behind, a drain; the fan-out of issue 35
item 6: one delivery per audience, each change encoded once, handed over a slice of
streams at a time. On trio's mock clock, over a store stand-in that records its reads
(what is read is the database's business: ``tests/db`` checks the statement and its plan;
``tests/web/test_progress.py`` the stream over HTTP)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import trio
import trio.testing

from actors.core.errors import Refusal, Refused
from actors.core.http.progress import StreamLimits, task_event
from actors.core.models import Task, TaskStatus
from actors.core.principal import DOWNLOAD_ALL_PERMISSION, AppCode, Principal
from actors.plumbing.metrics import Metrics
from tests.helpers import task_value
from web import progress_feed
from web.progress_feed import HAND_OVER_SLICE, STREAM_BUFFER, ProgressFeed

T0 = datetime(2026, 12, 5, 8, 0, tzinfo=UTC)
INTERVAL = 1.0
ADMIN = DOWNLOAD_ALL_PERMISSION


class ChangeLog:
    """Stands in for the store: the tasks written so far, read by change time."""

    def __init__(self) -> None:
        self.tasks: list[Task] = []
        self.reads = 0

    def write(self, **fields: Any) -> Task:
        stamp = T0 + timedelta(seconds=trio.current_time())
        task = task_value(updated_at=stamp, **fields)
        self.tasks = [t for t in self.tasks if t.id != task.id] + [task]
        return task

    async def db_now(self) -> datetime:
        return T0 + timedelta(seconds=trio.current_time())

    async def tasks_changed_since(self, since: datetime, after_id: int, limit: int) -> list[Task]:
        self.reads += 1
        key = (since, after_id)
        found = sorted(
            (t for t in self.tasks if t.updated_at and (t.updated_at, t.id) > key),
            key=lambda t: (t.updated_at, t.id),
        )
        return found[:limit]


def principal(user: int, tenant: int = 0, *perms: str) -> Principal:
    return Principal(
        user_id=user, tenant_id=tenant, app_code=AppCode.PLATFORM, perms=frozenset(perms)
    )


def feed_over(log: ChangeLog, **limits: int) -> tuple[ProgressFeed, Metrics]:
    metrics = Metrics()
    feed = ProgressFeed(log, INTERVAL, StreamLimits(**limits), metrics)  # type: ignore[arg-type]
    return feed, metrics


async def test_no_stream_no_read_and_many_streams_one_read_per_interval(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = ChangeLog()
    feed, metrics = feed_over(log)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(feed.run)
        await trio.sleep(30)
        assert log.reads == 0  # nobody listens: nothing read
        subs = [feed.subscribe(principal(user)) for user in range(2_000)]
        await trio.sleep(10 * INTERVAL + 0.5)
        assert 9 <= log.reads <= 11, log.reads  # one per interval, not one per stream
        assert feed.reads == log.reads
        assert metrics.progress_feed_reads._value.get() == log.reads
        assert metrics.progress_streams._value.get() == 2_000
        for sub in subs:
            feed.unsubscribe(sub)
        reads = log.reads
        await trio.sleep(30)
        assert log.reads <= reads + 1  # the last stream left: the feed stops reading
        assert metrics.progress_streams._value.get() == 0
        nursery.cancel_scope.cancel()


async def test_each_change_reaches_only_the_streams_allowed_to_see_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = ChangeLog()
    feed, _ = feed_over(log)
    owner = feed.subscribe(principal(7))
    other = feed.subscribe(principal(8))
    admin = feed.subscribe(principal(9, 0, DOWNLOAD_ALL_PERMISSION))
    foreign_admin = feed.subscribe(principal(9, 1, DOWNLOAD_ALL_PERMISSION))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(feed.run)
        await trio.sleep(0.5)
        log.write(id=1, requested_by=7, status=TaskStatus.RUNNING, processed_rows=10)
        with trio.fail_after(5):
            mine = await owner.next()
            theirs = await admin.next()
        assert mine is not None and [t.id for t in mine.tasks] == [1]
        assert theirs is not None and [t.id for t in theirs.tasks] == [1]
        await trio.sleep(5 * INTERVAL)  # re-read in the overlap, unchanged: not again
        for sub in (owner, other, admin, foreign_admin):
            with pytest.raises(trio.WouldBlock):
                sub._receive.receive_nowait()
        log.write(id=1, requested_by=7, status=TaskStatus.SUCCEEDED, processed_rows=20)
        with trio.fail_after(5):
            ended = await owner.next()
        assert ended is not None and ended.tasks[0].status == TaskStatus.SUCCEEDED
        nursery.cancel_scope.cancel()


async def test_a_late_commit_inside_the_overlap_is_still_delivered(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A write whose transaction committed after a later one (its ``updated_at`` is
    older than the newest already read) is read by the next round's overlap."""
    log = ChangeLog()
    feed, _ = feed_over(log)
    sub = feed.subscribe(principal(7))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(feed.run)
        await trio.sleep(2.5)
        log.write(id=2, requested_by=7)
        late = dataclasses.replace(log.write(id=3, requested_by=7), updated_at=T0)
        log.tasks = [t for t in log.tasks if t.id != 3]
        with trio.fail_after(5):
            first = await sub.next()
        assert first is not None and [t.id for t in first.tasks] == [2]
        log.tasks.append(dataclasses.replace(late, updated_at=T0 + timedelta(seconds=1)))
        with trio.fail_after(5):
            second = await sub.next()
        assert second is not None and [t.id for t in second.tasks] == [3]
        nursery.cancel_scope.cancel()


def test_caps_refuse_and_count_and_give_places_back() -> None:
    feed, metrics = feed_over(ChangeLog(), per_user=2, per_instance=3)
    a1, a2 = feed.subscribe(principal(1)), feed.subscribe(principal(1))
    with pytest.raises(Refused) as caught:
        feed.subscribe(principal(1))
    assert caught.value.reason == Refusal.STREAMS_PER_USER
    feed.subscribe(principal(2))
    with pytest.raises(Refused) as caught:
        feed.subscribe(principal(3))
    assert caught.value.reason == Refusal.STREAMS_PER_INSTANCE
    assert metrics.progress_streams_refused.labels("user")._value.get() == 1
    assert metrics.progress_streams_refused.labels("instance")._value.get() == 1
    feed.unsubscribe(a1)
    feed.unsubscribe(a1)  # idempotent
    assert feed.open_streams == 2
    feed.subscribe(principal(1))  # a place came back
    del a2


async def test_a_stream_that_does_not_keep_up_is_marked_behind() -> None:
    feed, _ = feed_over(ChangeLog())
    sub = feed.subscribe(principal(7))
    for rows in range(STREAM_BUFFER + 1):
        await feed._route((task_value(id=1, requested_by=7, processed_rows=rows),))
    assert sub.behind  # it reads afresh instead of losing the change


async def test_a_stream_that_catches_up_drops_what_it_held() -> None:
    """What a stream held when it fell behind is older than the read it makes next:
    followed after it, a finished task would be shown running again, and the delivery of
    its end (dropped) would never come to correct it."""
    feed, _ = feed_over(ChangeLog())
    sub = feed.subscribe(principal(7))
    for rows in range(STREAM_BUFFER + 1):
        await feed._route((task_value(id=1, requested_by=7, processed_rows=rows),))
    sub.catch_up()
    assert not sub.behind
    with pytest.raises(trio.WouldBlock):
        sub._receive.receive_nowait()
    await feed._route((task_value(id=1, requested_by=7, status=TaskStatus.SUCCEEDED),))
    with trio.fail_after(1):
        after = await sub.next()
    assert after is not None and after.tasks[0].status == TaskStatus.SUCCEEDED


async def test_every_stream_of_an_audience_shares_one_delivery_and_each_change_is_encoded_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    encoded: list[int] = []

    def counting(task: Task) -> bytes:
        encoded.append(task.id)
        return task_event(task)

    monkeypatch.setattr(progress_feed, "task_event", counting)
    feed, _ = feed_over(ChangeLog())
    admins = [feed.subscribe(principal(100 + n // 20, 0, ADMIN)) for n in range(200)]
    owners = [feed.subscribe(principal(7)) for _ in range(3)]
    other = feed.subscribe(principal(8))
    foreign = [feed.subscribe(principal(9, 1, ADMIN)), feed.subscribe(principal(7, 1))]
    mine = task_value(id=1, requested_by=7, status=TaskStatus.RUNNING, processed_rows=5)
    theirs = task_value(id=2, requested_by=11)  # nobody of user 11 listens: admins only
    await feed._route((theirs, mine))
    assert sorted(encoded) == [1, 2]  # once each, for 206 streams
    handed = {id(sub): sub._receive.receive_nowait() for sub in [*admins, *owners]}
    to_admins = {handed[id(sub)] for sub in admins}
    to_owners = {handed[id(sub)] for sub in owners}
    assert len(to_admins) == len(to_owners) == 1  # one object per audience
    (admins_got,), (owners_got,) = to_admins, to_owners
    assert [t.id for t in admins_got.tasks] == [1, 2] and [t.id for t in owners_got.tasks] == [1]
    assert admins_got.payload == task_event(mine) + task_event(theirs)  # bytes as before
    assert owners_got.events[0] is admins_got.events[0]  # one encoding, shared
    for sub in [other, *foreign]:
        with pytest.raises(trio.WouldBlock):
            sub._receive.receive_nowait()


async def test_the_hand_over_lets_the_event_loop_run_between_slices() -> None:
    """Thousands of streams handed a delivery at once would all write in one turn of the
    loop, and a request would wait for them all: the feed checkpoints every slice."""
    feed, _ = feed_over(ChangeLog())
    for n in range(10 * HAND_OVER_SLICE):
        feed.subscribe(principal(100 + n // 20, 0, ADMIN))
    turns = 0
    handing = True

    async def another_task() -> None:
        nonlocal turns
        while handing:
            turns += 1
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(another_task)
        await trio.lowlevel.checkpoint()
        before = turns
        await feed._route((task_value(id=1, requested_by=7),))
        handing = False
    assert turns - before >= 9, turns - before  # a turn between every two slices


async def test_a_drain_ends_every_stream_and_any_that_comes_later() -> None:
    feed, _ = feed_over(ChangeLog())
    sub = feed.subscribe(principal(7))
    feed.close()
    with trio.fail_after(1):
        assert await sub.next() is None
        assert await feed.subscribe(principal(8)).next() is None
