"""Fair share as pure decisions: slot caps, claim order, admission (issue 13 item 7)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from actors.core.admission import ActiveCounts, CreateLimits, admit
from actors.core.fairness import (
    DueTask,
    Requester,
    SlotLoad,
    SlotShare,
    claim_order,
    may_claim,
)
from actors.core.outcomes import CreateOutcome

T0 = datetime(2027, 1, 15, 8, 0, tzinfo=UTC)
A = Requester(0, "PLATFORM", 1)
B = Requester(0, "PLATFORM", 2)
C = Requester(0, "PLATFORM", 3)
A_OTHER_TENANT = Requester(9, "PLATFORM", 1)


def due(task_id: int, requester: Requester, age_s: float = 0) -> DueTask:
    """A due task that became due ``age_s`` seconds before T0 (older = larger)."""
    return DueTask(task_id, 1, requester, T0 - timedelta(seconds=age_s))


# --- slot caps ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("slots", "reserved", "others_waiting", "cap"),
    [
        (1, 1, False, 1),  # one slot: nothing to reserve, a requester may always hold one
        (1, 1, True, 1),
        (2, 1, False, 1),  # the price of the reserve on a small instance
        (2, 0, False, 2),
        (2, 0, True, 1),  # share: ceil(2 / 2)
        (3, 1, False, 2),  # the reported case: one slot stays for someone else
        (3, 1, True, 2),
        (4, 1, False, 3),  # defaults: equals the per-user limit, so costs a lone user nothing
        (4, 1, True, 2),
        (5, 1, True, 3),  # ceil(5 / 2)
        (8, 0, False, 8),
        (8, 0, True, 4),
        (4, 9, False, 1),  # a reserve beyond the slots still leaves one
    ],
)
def test_slot_cap(slots: int, reserved: int, others_waiting: bool, cap: int) -> None:
    assert SlotShare(slots, reserved).cap(others_waiting) == cap


@pytest.mark.parametrize(
    ("running", "due_tasks", "requester", "allowed"),
    [
        ({}, [due(1, A)], A, True),
        ({A: 2}, [due(1, A)], A, False),  # 3 slots: A already holds the two it may
        ({A: 1}, [due(1, A)], A, True),
        ({A: 2}, [due(1, B)], B, True),  # B holds nothing here
        ({A: 1, B: 1}, [due(1, A), due(2, C)], A, True),  # cap 2 with C waiting: 1 < 2
        ({A_OTHER_TENANT: 2}, [due(1, A)], A, True),  # same user id, another tenant
    ],
)
def test_may_claim_on_three_slots(
    running: dict[Requester, int], due_tasks: list[DueTask], requester: Requester, allowed: bool
) -> None:
    load = SlotLoad(running, due_tasks)
    assert may_claim(requester, load, SlotShare(3, 1)) is allowed


def test_share_caps_a_requester_at_half_while_another_waits() -> None:
    share = SlotShare(4, 1)
    alone = SlotLoad({A: 2}, [due(1, A)])
    contended = SlotLoad({A: 2}, [due(1, A), due(2, B)])
    assert may_claim(A, alone, share) is True  # 2 < 3
    assert may_claim(A, contended, share) is False  # 2 >= ceil(4 / 2)
    assert may_claim(B, contended, share) is True


# --- claim order -------------------------------------------------------------------------


def test_order_prefers_the_requester_holding_fewest_slots() -> None:
    load = SlotLoad({A: 1}, [due(1, A, age_s=100), due(2, B, age_s=1)])
    assert [t.task_id for t in claim_order(load, SlotShare(4, 1), {})] == [2, 1]


def test_order_breaks_ties_by_least_recently_served_then_oldest() -> None:
    load = SlotLoad({}, [due(1, A, age_s=30), due(2, A, age_s=20), due(3, B, age_s=10)])
    share = SlotShare(1, 1)
    # never served ranks before served; A was served, B never: B first, then A oldest first
    assert [t.task_id for t in claim_order(load, share, {A: 5})] == [3, 1, 2]
    # both served: the less recent one (smaller number) first
    assert [t.task_id for t in claim_order(load, share, {A: 5, B: 7})] == [1, 2, 3]
    # neither served: the requester with the oldest due task first
    assert [t.task_id for t in claim_order(load, share, {})] == [1, 2, 3]


def test_order_leaves_out_requesters_over_their_cap() -> None:
    load = SlotLoad({A: 2, B: 1}, [due(1, A, age_s=50), due(2, B, age_s=5)])
    assert [t.task_id for t in claim_order(load, SlotShare(4, 1), {})] == [2]
    # the reserve: a lone requester holding N - 1 gets nothing more
    alone = SlotLoad({A: 2}, [due(1, A)])
    assert claim_order(alone, SlotShare(3, 1), {}) == []
    assert claim_order(SlotLoad({}, []), SlotShare(3, 1), {}) == []


# --- admission ---------------------------------------------------------------------------

LIMITS = CreateLimits(max_active_per_user=3, max_active_per_type=5, type_reserved_places=1)


@pytest.mark.parametrize(
    ("counts", "duplicate", "limits", "outcome"),
    [
        (ActiveCounts(0, 0, 0), False, LIMITS, CreateOutcome.CREATED),
        (ActiveCounts(0, 0, 0), True, LIMITS, CreateOutcome.DUPLICATE),  # duplicate first
        (ActiveCounts(3, 5, 3), True, LIMITS, CreateOutcome.DUPLICATE),
        (ActiveCounts(3, 0, 0), False, LIMITS, CreateOutcome.USER_LIMIT),
        (ActiveCounts(3, 5, 3), False, LIMITS, CreateOutcome.USER_LIMIT),  # user before type
        (ActiveCounts(0, 5, 0), False, LIMITS, CreateOutcome.TYPE_LIMIT),
        (ActiveCounts(2, 4, 2), False, LIMITS, CreateOutcome.TYPE_RESERVED),  # A: 3 + B: 1
        (ActiveCounts(1, 4, 1), False, LIMITS, CreateOutcome.TYPE_RESERVED),
        (ActiveCounts(0, 4, 0), False, LIMITS, CreateOutcome.CREATED),  # a newcomer to it
        (ActiveCounts(2, 4, 0), False, LIMITS, CreateOutcome.CREATED),  # active elsewhere only
        (ActiveCounts(2, 3, 2), False, LIMITS, CreateOutcome.CREATED),  # lone user's 3rd
        # kept places off: first come, first served (the behaviour before fair share)
        (
            ActiveCounts(1, 4, 1),
            False,
            CreateLimits(type_reserved_places=0),
            CreateOutcome.CREATED,
        ),
        # two kept places
        (
            ActiveCounts(1, 3, 1),
            False,
            CreateLimits(type_reserved_places=2),
            CreateOutcome.TYPE_RESERVED,
        ),
        # as many kept places as the type has: one active task per requester and type
        (
            ActiveCounts(1, 1, 1),
            False,
            CreateLimits(type_reserved_places=5),
            CreateOutcome.TYPE_RESERVED,
        ),
        (ActiveCounts(1, 4, 0), False, CreateLimits(type_reserved_places=5), CreateOutcome.CREATED),
    ],
)
def test_admission(
    counts: ActiveCounts, duplicate: bool, limits: CreateLimits, outcome: CreateOutcome
) -> None:
    assert admit(counts, limits, duplicate=duplicate) == outcome
