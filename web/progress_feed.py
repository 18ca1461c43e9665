"""The progress feed: the instance's one reader of task changes, fanned out to every stream.

Each progress stream (``web/progress.py``) reads its caller's tasks once, on connect, then
subscribes here. The feed reads the database once per interval
(``FILE_EXPORT_PROGRESS_POLL_SECONDS``) for every task written since its last read — one
range of the ``(updated_at, id)`` index, whatever the number of open streams — and hands
each stream the changes its caller may see, by the list's rule
(``actors.core.access.owns``). With no stream open it reads nothing.

The streams are grouped by audience (``actors.core.http.progress.audience``): an ordinary
user's streams share one, every administrator's stream of a tenant and app another. Each
read's changes are grouped by the audiences listening (``fan_out``), each change's event
is encoded once, and every stream of an audience is handed the same ``Delivery`` — one
reference per stream: the feed's work per read grows with the changes and the audiences,
not with the bytes each stream writes. It hands over :data:`HAND_OVER_SLICE` streams at a
time and lets the event loop turn between slices, so the streams' writes never hold a
request up for longer than one slice of them.

``updated_at`` is the database's clock, written by every transition. Each read goes back
:data:`OVERLAP_SECONDS` before the newest write it saw, so a write whose transaction
committed after a later one is still read; a task read twice is passed on once
(``actors.core.http.progress.feed_round``).

Handing over never waits: a stream that does not keep up — a slow or stuck client whose
socket stopped taking bytes — holds at most :data:`STREAM_BUFFER` deliveries (references to
objects other streams share); the next one is dropped and the stream marked behind. When
it moves again it discards what it holds (older than what it reads next) and reads again
as on connect, so it misses no final state and sends no stale one. How many streams may
be open, per user and per instance, is decided by
``actors.core.http.progress.admit_stream``; a refusal is an envelope 429, counted in
``export_progress_streams_refused_total``.

The feed runs in the web server's nursery for as long as the server serves
(``web/app.py``). A read that fails is logged and tried again at the next interval; the
streams stay open meanwhile. When the service drains, :meth:`ProgressFeed.close` ends
every stream at once.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from datetime import datetime, timedelta

import trio

from actors.core.errors import Refusal, TransientDatabaseError
from actors.core.http.progress import (
    Audience,
    Delivery,
    StreamLimits,
    TaskState,
    admit_stream,
    audience,
    fan_out,
    feed_round,
    task_event,
)
from actors.core.models import Task
from actors.core.ports.metrics import ApiMetrics
from actors.core.ports.store import ApiStore
from actors.core.principal import Principal

log = logging.getLogger(__name__)

#: How far back each read goes before the newest write seen, seconds: a write whose
#: transaction commits this much later than its statement ran is still read.
OVERLAP_SECONDS = 5.0
#: Tasks per page of one read; a read pages on until a page comes back short.
PAGE = 1000
#: Deliveries one stream may be behind by before it is marked behind and reads afresh.
STREAM_BUFFER = 64
#: Streams handed a delivery between two checkpoints of the feed. Each one writes its
#: delivery at its next turn of the event loop, through the HTTP server, a fraction of a
#: millisecond each; handed to thousands at once, those writes would fill one turn, and
#: every request would wait for them all. One at a time, the loop polls its sockets between
#: any two streams' writes. Measured against 8 with 5,000 streams beside 2 exports on two
#: cores (deploy/bench/bench_progress_fanout.py, paired runs): the list's p95 fell from
#: 25.9 and 23.2 ms to 10.7 and 10.1 ms, its p99 from 41.6 and 33.5 to 21.6 and 17.8 ms,
#: for no more CPU (1.21-1.24 cores either way).
HAND_OVER_SLICE = 1

_REFUSAL_LABEL = {Refusal.STREAMS_PER_USER: "user", Refusal.STREAMS_PER_INSTANCE: "instance"}


class Subscription:
    """One stream's place in the feed: the changes its caller may see, as they come.

    Attributes:
        principal: the stream's caller.
        audience: the streams it shares deliveries with.
        behind: set when a delivery did not fit the buffer; the stream then catches up
            (:meth:`catch_up`) and reads afresh.
    """

    def __init__(self, principal: Principal) -> None:
        self.principal = principal
        self.audience = audience(principal)
        self.user = _user(principal)
        self.behind = False
        self._send, self._receive = trio.open_memory_channel[Delivery](STREAM_BUFFER)

    def deliver(self, delivery: Delivery) -> None:
        """Hand the stream changes, never waiting: a full buffer marks it behind."""
        try:
            self._send.send_nowait(delivery)
        except trio.WouldBlock:
            self.behind = True
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the stream is gone or the feed closed: nothing to hand over

    async def next(self) -> Delivery | None:
        """The next changes, waiting for them; ``None`` once the feed closed (a drain)."""
        try:
            return await self._receive.receive()
        except trio.EndOfChannel:
            return None

    def catch_up(self) -> None:
        """Before reading afresh: clear :attr:`behind` and discard the deliveries held. They
        are older than that read; followed after it, they would send a task's earlier state
        after its later one (a finished task shown running again), and the delivery of the
        end, dropped when the buffer was full, would never come to correct it."""
        self.behind = False
        while True:
            try:
                self._receive.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel):
                return

    def end(self) -> None:
        """No more deliveries (the feed closes, or the stream left)."""
        self._send.close()


class ProgressFeed:
    """The instance's one reader of task changes (module docstring).

    Args:
        store: reads what changed (``tasks_changed_since``) and the database clock.
        interval: seconds between two reads while a stream is open.
        limits: how many streams may be open, per user and per instance.
        metrics: ``export_progress_streams``, ``…_refused_total``, ``…_feed_reads_total``.
    """

    def __init__(
        self,
        store: ApiStore,
        interval: float,
        limits: StreamLimits,
        metrics: ApiMetrics,
    ) -> None:
        self.store = store
        self.interval = interval
        self.limits = limits
        self.metrics = metrics
        #: Database reads made so far (tests and the benchmark count them).
        self.reads = 0
        self._by_audience: dict[Audience, set[Subscription]] = defaultdict(set)
        self._by_user: Counter[tuple[int, str, int]] = Counter()
        self._open = 0
        self._someone = trio.Event()
        self._closed = False

    @property
    def open_streams(self) -> int:
        """Streams subscribed now."""
        return self._open

    def subscribe(self, principal: Principal) -> Subscription:
        """Take a place for one more stream of ``principal``.

        Raises:
            Refused: a cap is reached (:func:`actors.core.http.progress.admit_stream`); the
                refusal is counted.
        """
        refusal = admit_stream(self._by_user[_user(principal)], self._open, self.limits)
        if refusal is not None:
            self.metrics.progress_streams_refused.labels(_REFUSAL_LABEL[refusal.reason]).inc()
            raise refusal
        sub = Subscription(principal)
        if self._closed:
            sub.end()  # a drain: the stream ends after its first read
        self._by_audience[sub.audience].add(sub)
        self._by_user[sub.user] += 1
        self._open += 1
        self.metrics.progress_streams.set(self._open)
        self._someone.set()
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        """Give the stream's place back (it ended); idempotent."""
        subs = self._by_audience.get(sub.audience)
        if subs is None or sub not in subs:
            return
        subs.discard(sub)
        if not subs:
            del self._by_audience[sub.audience]
        self._by_user[sub.user] -= 1
        if self._by_user[sub.user] <= 0:
            del self._by_user[sub.user]
        self._open -= 1
        self.metrics.progress_streams.set(self._open)
        sub.end()

    def close(self) -> None:
        """End every stream now and any that subscribes later (the service drains)."""
        self._closed = True
        for subs in self._by_audience.values():
            for sub in subs:
                sub.end()
        self._someone.set()

    async def run(self) -> None:
        """Read and route changes until the feed closes (module docstring). Never raises
        for a failed read: it is logged and the next interval tries again."""
        last: dict[int, tuple[TaskState, datetime]] = {}
        since: datetime | None = None
        while not self._closed:
            if self._open == 0:
                # Nobody listens: no reads. A stream reads its own state on connect, so
                # the feed starts again from the database's clock when one subscribes.
                self._someone = trio.Event()
                await self._someone.wait()
                since, last = None, {}
                continue
            await trio.sleep(self.interval)
            try:
                if since is None:
                    since = await self.store.db_now()
                horizon = since - timedelta(seconds=OVERLAP_SECONDS)
                tasks = await self._read(horizon)
            except TransientDatabaseError as exc:
                log.warning("progress feed read failed; trying again: %s", exc)
                continue
            except Exception:
                log.exception("progress feed read failed; trying again")
                continue
            changed, last = feed_round(last, tasks, horizon)
            stamps = [t.updated_at for t in tasks if t.updated_at is not None]
            if stamps:
                since = max(since, *stamps)
            await self._route(changed)

    async def _read(self, horizon: datetime) -> list[Task]:
        """Every task written at or after ``horizon``, page by page."""
        out: list[Task] = []
        key, after_id = horizon, 0
        while True:
            page = await self.store.tasks_changed_since(key, after_id, PAGE)
            self.reads += 1
            self.metrics.progress_feed_reads.inc()
            out.extend(page)
            if len(page) < PAGE or page[-1].updated_at is None:
                return out
            key, after_id = page[-1].updated_at, page[-1].id

    async def _route(self, tasks: tuple[Task, ...]) -> None:
        """Hand each stream the changed tasks its caller may see, in one delivery: one
        per audience, each change encoded once (module docstring), :data:`HAND_OVER_SLICE`
        streams at a time."""
        encoded: dict[int, bytes] = {}
        handed = 0
        for who, mine in fan_out(tasks, self._by_audience).items():
            for task in mine:
                if task.id not in encoded:
                    encoded[task.id] = task_event(task)
            delivery = Delivery.of(mine, encoded)
            for sub in tuple(self._by_audience.get(who, ())):
                sub.deliver(delivery)
                handed += 1
                if handed % HAND_OVER_SLICE == 0:
                    await trio.lowlevel.checkpoint()


def _user(principal: Principal) -> tuple[int, str, int]:
    return (principal.tenant_id, principal.app_code.value, principal.user_id)


__all__ = ["OVERLAP_SECONDS", "ProgressFeed", "Subscription"]
