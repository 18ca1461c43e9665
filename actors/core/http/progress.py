"""What the progress stream sends: the tasks whose visible state changed since last time.

``GET /api/platform/v1/files/progress`` (``web/progress.py``) reads the caller's live
tasks and its newest ones once per poll and sends a task only when its status, processed
rows or total rows differ from what this connection last saw. The rules, pure:

* On connect every live (PENDING or RUNNING) task is sent; finished tasks among the
  newest are remembered but not sent — the page has them from the list.
* Afterwards a task is sent when it is new to the connection (created meanwhile, even if
  it already finished between two polls) or its state changed.
* A live task that left the read (finished and pushed out of the newest, or beyond the
  read's cap) is looked up by id, so its final state is never missed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypeAlias

from actors.core.models import ACTIVE_STATUSES, Task, TaskStatus

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
