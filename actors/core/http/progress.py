"""What the progress stream sends: the tasks whose visible state changed since last time.

``GET /api/platform/v1/files/progress`` (``web/progress.py``) reads the caller's live
tasks and its newest ones once, on connect; afterwards the instance's one progress feed
(``web/progress_feed.py``) reads what changed, for every stream at once, and hands each
stream the changes it may see. A task is sent only when its status, processed rows or
total rows differ from what the connection last saw. The rules, pure:

* On connect every live (PENDING or RUNNING) task is sent; finished tasks among the
  newest are remembered but not sent — the page has them from the list.
* Afterwards a task is sent when it is new to the connection (created meanwhile, even if
  it already finished between two reads) or its state changed (:func:`follow`).
* The feed re-reads a short overlap of time each round, so a write committed late is not
  missed; it passes on a task only when its state changed (:func:`feed_round`).
* A stream that fell behind (its buffer full) reads again as on connect
  (:func:`next_step`); a live task that left that read is looked up by id
  (:func:`settle_missing`), so its final state is never missed.
* How many streams may be open, per user and per instance: :func:`admit_stream`.

The feed's fan-out, pure too. Streams that see the same tasks form an *audience*: an
ordinary user's streams are one (tenant, app, user), an administrator's
(``platform:download:all``) are one (tenant, app) with every requester (:func:`audience`);
a task goes to its requester's audience and to its tenant and app's administrators'
(:func:`audiences`), which is the list's rule (``actors.core.access.owns``). Each read's
changes are grouped by the audiences listening (:func:`fan_out`), and every stream of an
audience is handed the same :class:`Delivery`. An event's bytes (:func:`task_event`) do
not depend on who reads them — the task JSON names no viewer — so each change is encoded
once, whatever the number of audiences and streams it goes to.
"""

from __future__ import annotations

import json
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple, TypeAlias

from actors.core.access import sees_all_requesters
from actors.core.errors import Refusal, Refused
from actors.core.models import ACTIVE_STATUSES, Task, TaskStatus
from actors.core.principal import Principal
from actors.core.task_json import task_json

#: What the stream reports a change of.
TaskState: TypeAlias = tuple[TaskStatus, int, int | None]


def task_state(task: Task) -> TaskState:
    """The part of a task whose change the stream reports: status, processed and total rows."""
    return (task.status, task.processed_rows, task.total_rows)


@dataclass(frozen=True, slots=True)
class ProgressStep:
    """One poll's outcome.

    Attributes:
        send: the tasks to send, in id order.
        missing: ids of live tasks the read no longer returned: look each one up by id and
            pass the result to :func:`settle_missing`.
        seen: the state to compare the next poll with.
    """

    send: tuple[Task, ...]
    missing: tuple[int, ...]
    seen: Mapping[int, TaskState]


def first_step(tasks: Iterable[Task]) -> ProgressStep:
    """The state on connect: send the live tasks, remember all.

    Args:
        tasks: the first read (the caller's live tasks and its newest ones).

    Returns:
        A step whose ``send`` holds the live tasks; ``missing`` is empty.
    """
    by_id = {t.id: t for t in tasks}
    live = tuple(t for _, t in sorted(by_id.items()) if t.status in ACTIVE_STATUSES)
    return ProgressStep(live, (), {i: task_state(t) for i, t in by_id.items()})


def next_step(seen: Mapping[int, TaskState], tasks: Iterable[Task]) -> ProgressStep:
    """Compare one poll's read with what the connection last saw.

    Args:
        seen: the previous step's ``seen``.
        tasks: this poll's read.

    Returns:
        ``send``: tasks new to the connection or whose state changed; ``missing``: live
        tasks of ``seen`` absent from the read; ``seen``: the read's states (the missing
        ones stay until :func:`settle_missing`).
    """
    by_id = {t.id: t for t in tasks}
    send = tuple(
        t for i, t in sorted(by_id.items()) if seen.get(i) is None or seen[i] != task_state(t)
    )
    missing = tuple(
        sorted(i for i, state in seen.items() if i not in by_id and state[0] in ACTIVE_STATUSES)
    )
    now_seen = {i: task_state(t) for i, t in by_id.items()}
    now_seen.update({i: seen[i] for i in missing})
    return ProgressStep(send, missing, now_seen)


def settle_missing(seen: Mapping[int, TaskState], found: Mapping[int, Task | None]) -> ProgressStep:
    """Decide on the live tasks a poll's read no longer returned, once looked up by id.

    Args:
        seen: the step's ``seen`` (still holding the missing ids).
        found: each missing id and its task, or ``None`` if it no longer exists.

    Returns:
        ``send``: those whose state changed (typically now finished); ``seen``: without
        the ids looked up — a task outside the read is no longer followed.
    """
    send = tuple(
        t
        for i, t in sorted(found.items(), key=lambda item: item[0])
        if t is not None and seen.get(i) != task_state(t)
    )
    return ProgressStep(send, (), {i: s for i, s in seen.items() if i not in found})


@dataclass(frozen=True, slots=True)
class StreamLimits:
    """How many progress streams may be open at once.

    Attributes:
        per_user: streams of one user, one per open page
            (``FILE_EXPORT_PROGRESS_STREAMS_PER_USER``).
        per_instance: streams of the whole instance
            (``FILE_EXPORT_PROGRESS_STREAMS_PER_INSTANCE``).
    """

    per_user: int = 20
    per_instance: int = 10_000


def admit_stream(open_by_user: int, open_total: int, limits: StreamLimits) -> Refused | None:
    """Whether one more progress stream may open.

    Args:
        open_by_user: the streams the caller holds open on this instance now.
        open_total: every stream this instance serves now.
        limits: the caps.

    Returns:
        ``None`` to admit it, else the refusal to answer (envelope 429): the instance's
        cap first (nothing the caller can change), then the caller's.
    """
    if open_total >= limits.per_instance:
        return Refused(
            Refusal.STREAMS_PER_INSTANCE,
            f"this instance already serves {open_total} live progress streams, its most "
            "(FILE_EXPORT_PROGRESS_STREAMS_PER_INSTANCE); the page shows progress by "
            "polling the list instead",
        )
    if open_by_user >= limits.per_user:
        return Refused(
            Refusal.STREAMS_PER_USER,
            f"you already have {open_by_user} live progress streams open, the most one "
            "user may (FILE_EXPORT_PROGRESS_STREAMS_PER_USER): close a download center "
            "tab you no longer use; this one shows progress by polling the list",
        )
    return None


def feed_round(
    last: Mapping[int, tuple[TaskState, datetime]], tasks: Iterable[Task], horizon: datetime
) -> tuple[tuple[Task, ...], dict[int, tuple[TaskState, datetime]]]:
    """One read of the progress feed: which tasks to pass on to the streams.

    The feed reads every task written since a little before its last read (an overlap,
    so a write that committed late is still seen); a task read twice is passed on once.

    Args:
        last: each task passed on lately, with its state and its ``updated_at``.
        tasks: this read, in ``(updated_at, id)`` order.
        horizon: the start of this read's overlap: entries of ``last`` written before it
            cannot be read again and are forgotten.

    Returns:
        The tasks whose state differs from the one last passed on (in read order), and
        the new ``last``.
    """
    now_last = {
        i: entry
        for i, entry in last.items()
        if entry[1] >= horizon  # still inside the overlap: may be read again
    }
    send = []
    for task in tasks:
        state = task_state(task)
        previous = now_last.get(task.id)
        if previous is None or previous[0] != state:
            send.append(task)
        if task.updated_at is not None:
            now_last[task.id] = (state, task.updated_at)
    return tuple(send), now_last


def follow(seen: Mapping[int, TaskState], tasks: Iterable[Task]) -> ProgressStep:
    """What one stream sends of the feed's changes it may see.

    Args:
        seen: what the connection last sent or read of each task it follows.
        tasks: changes from the feed (each allowed to the caller).

    Returns:
        ``send``: tasks new to the connection or whose state differs, in id order;
        ``seen``: updated, without the tasks that ended (their last state was sent: a
        finished task is not followed any more, so the map stays as small as the live
        work). ``missing`` is empty.
    """
    now_seen = dict(seen)
    by_id = {t.id: t for t in tasks}
    send = []
    for i, task in sorted(by_id.items()):
        state = task_state(task)
        if now_seen.get(i) != state:
            send.append(task)
        if state[0] in ACTIVE_STATUSES:
            now_seen[i] = state
        else:
            now_seen.pop(i, None)
    return ProgressStep(tuple(send), (), now_seen)


def task_event(task: Task) -> bytes:
    """One ``event: task`` of the stream: the task JSON of ``GET …/export-tasks/{id}``
    (:func:`actors.core.task_json.task_json`) on one ``data:`` line. The same bytes for
    every reader: nothing in them depends on who sees the task."""
    data = json.dumps(task_json(task), separators=(",", ":"), ensure_ascii=False)
    return f"event: task\ndata: {data}\n\n".encode()


class Audience(NamedTuple):
    """The streams that see the same tasks.

    Attributes:
        tenant_id: the tenant of the streams' callers.
        app_code: their app.
        user_id: the requester whose tasks they see; ``None`` for administrators, who see
            every requester of the tenant and app.
    """

    tenant_id: int
    app_code: str
    user_id: int | None


def audience(principal: Principal) -> Audience:
    """The audience of ``principal``'s streams: its (tenant, app) with every requester when
    it sees all of them (``actors.core.access.sees_all_requesters``), else its own
    (tenant, app, user)."""
    user = None if sees_all_requesters(principal) else principal.user_id
    return Audience(principal.tenant_id, principal.app_code.value, user)


def audiences(task: Task) -> tuple[Audience, Audience]:
    """The two audiences that see ``task``: its requester's and its tenant and app's
    administrators'. ``audience(p) in audiences(task)`` exactly when
    ``actors.core.access.owns(p, task)``."""
    return (
        Audience(task.tenant_id, task.app_code, task.requested_by),
        Audience(task.tenant_id, task.app_code, None),
    )


def fan_out(
    changes: Iterable[Task], listening: Container[Audience]
) -> dict[Audience, tuple[Task, ...]]:
    """Which audience is handed which of one feed read's changes.

    Args:
        changes: the tasks the read passes on (:func:`feed_round`).
        listening: the audiences with a stream open.

    Returns:
        Each listening audience that may see a change, with those changes in id order (a
        task read twice counts once: its last state); audiences with nothing to see are
        left out. The work is one look-up per change and audience, whatever the number of
        streams.
    """
    by_audience: dict[Audience, dict[int, Task]] = {}
    for task in changes:
        for who in audiences(task):
            if who in listening:
                by_audience.setdefault(who, {})[task.id] = task
    return {who: tuple(t for _, t in sorted(mine.items())) for who, mine in by_audience.items()}


@dataclass(frozen=True, slots=True)
class Delivery:
    """One feed read's changes for one audience, encoded: every stream of the audience is
    handed this same object.

    Attributes:
        tasks: the changes, in id order (:func:`fan_out`).
        events: each one's :func:`task_event`, in the same order (encoded once per
            change, shared with the other audiences that see it).
        payload: ``events`` joined: what a stream writes when it sends them all.
    """

    tasks: tuple[Task, ...]
    events: tuple[bytes, ...]
    payload: bytes

    @classmethod
    def of(cls, tasks: tuple[Task, ...], encoded: Mapping[int, bytes]) -> Delivery:
        """The delivery of ``tasks`` with their events taken from ``encoded`` (by id)."""
        events = tuple(encoded[t.id] for t in tasks)
        return cls(tasks, events, b"".join(events))

    def bytes_of(self, send: tuple[Task, ...]) -> bytes:
        """What a stream writes to send ``send``, tasks of this delivery in its order
        (:func:`follow`): the shared ``payload`` when it is all of them, else their events
        joined."""
        if len(send) == len(self.tasks):
            return self.payload
        wanted = {t.id for t in send}
        return b"".join(e for t, e in zip(self.tasks, self.events, strict=True) if t.id in wanted)
