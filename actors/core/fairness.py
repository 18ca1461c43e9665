"""Fair share of one instance's consumer slots between requesters: pure decisions.

An instance has ``N`` slots (``FILE_EXPORT_CONSUMER_CONCURRENCY``). "Holding a slot" means
having a RUNNING task whose ``lease_owner`` is this instance. Two rules cap what one
requester (tenant, app, user) may hold, and one order picks the next task for a free slot:

* **Reserve**: a requester holds at most ``max(1, N - reserved)`` slots
  (``FILE_EXPORT_CONSUMER_RESERVED_SLOTS``, default 1). So with ``N >= 2`` a slot is
  always left for someone else, and a light export starts at once even when one user's
  long exports arrived first. The price: a lone user runs at most ``N - 1`` exports on an
  instance. With the defaults (4 slots, 3 active tasks per user) that costs nothing.
* **Share**: while another requester has a due PENDING task, a requester holds at most
  ``ceil(N / 2)`` slots.
* **Order** (round robin by requester): a free slot takes, among the due PENDING tasks
  whose requester is under both caps, one of the requester holding the fewest slots here,
  then of the requester served least recently by this instance, then the oldest
  (``next_retry_at``, id).

A command whose task the rules refuse is acked and the task stays PENDING (nothing is
re-sent and no version changes); a slot that becomes free pulls the next task by the order
above. Whenever some slot is free and a due task waits, one of them can run, except for
the reserved slot while a single requester has work.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class Requester:
    """Who owns a task: the tenant, app and user that requested it."""

    tenant_id: int
    app_code: str
    user_id: int


@dataclass(frozen=True, slots=True)
class DueTask:
    """A PENDING task whose ``next_retry_at`` has passed by DB time."""

    task_id: int
    dispatch_version: int
    requester: Requester
    next_retry_at: datetime


@dataclass(frozen=True, slots=True)
class SlotLoad:
    """One instance's view of the queue, read in one transaction.

    Attributes:
        running: slots held on this instance, by requester (RUNNING tasks leased to it).
        due: due PENDING tasks, oldest first (``next_retry_at``, id); may be truncated.
    """

    running: Mapping[Requester, int]
    due: Sequence[DueTask]

    def find(self, task_id: int) -> DueTask | None:
        """The due task with this id, or ``None``."""
        return next((t for t in self.due if t.task_id == task_id), None)


@dataclass(frozen=True, slots=True)
class SlotShare:
    """The fair-share settings of one instance.

    Attributes:
        slots: consumer slots of the instance (``N``, ≥ 1).
        reserved_slots: slots one requester may never fill (≥ 0).
    """

    slots: int
    reserved_slots: int = 1

    def cap(self, others_waiting: bool) -> int:
        """Most slots one requester may hold.

        Args:
            others_waiting: another requester has a due PENDING task.

        Returns:
            ``max(1, N - reserved)``, lowered to ``ceil(N / 2)`` while others wait;
            never below 1, so a requester holding nothing may always claim.
        """
        reserve_cap = max(1, self.slots - self.reserved_slots)
        if not others_waiting:
            return reserve_cap
        return min(reserve_cap, math.ceil(self.slots / 2))


def others_waiting(requester: Requester, load: SlotLoad) -> bool:
    """Does a requester other than ``requester`` have a due PENDING task?"""
    return any(t.requester != requester for t in load.due)


def may_claim(requester: Requester, load: SlotLoad, share: SlotShare) -> bool:
    """May this instance start one more task of ``requester`` now?

    Returns:
        True while the requester holds fewer slots here than ``share.cap(...)``.
    """
    held = load.running.get(requester, 0)
    return held < share.cap(others_waiting(requester, load))


def claim_order(
    load: SlotLoad, share: SlotShare, last_served: Mapping[Requester, int]
) -> list[DueTask]:
    """The due tasks a free slot may claim, best first (see the module's order).

    Args:
        load: the instance's view of the queue.
        share: the fair-share settings.
        last_served: for requesters this instance served before, a number that grows
            with each claim (larger = more recent); absent = never, which ranks first.

    Returns:
        Every due task whose requester may claim, ordered by (slots held here, last
        served, the requester's oldest due task) and, within a requester, oldest first.
        Empty when nothing may run now.
    """
    by_requester: dict[Requester, list[DueTask]] = {}
    for task in load.due:
        by_requester.setdefault(task.requester, []).append(task)
    allowed = {r: tasks for r, tasks in by_requester.items() if may_claim(r, load, share)}

    def rank(requester: Requester) -> tuple[int, int, datetime, int]:
        first = allowed[requester][0]  # load.due is oldest first
        return (
            load.running.get(requester, 0),
            last_served.get(requester, -1),
            first.next_retry_at,
            first.task_id,
        )

    return [task for requester in sorted(allowed, key=rank) for task in allowed[requester]]
