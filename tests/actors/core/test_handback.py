"""Table tests of bounded hand-backs (actors/core/handback.py): up to
FILE_EXPORT_MAX_HANDBACKS in a row the attempt is refunded, past it every hand-back of the
row counts, and the last attempt ends FAILED with a message saying why (issue 22 item 3,
docs/design-rules.md: hand-backs are bounded so max_attempts ends a task in any flapping
environment)."""

from __future__ import annotations

import pytest

from actors.core.handback import (
    DEFAULT_MAX_HANDBACKS,
    HandBack,
    HandBackCause,
    HandBackFate,
    decide_hand_back,
    hand_back_message,
)
from actors.core.settlement import Ending, hand_back_cause

SHUT, DB, DOG = HandBackCause.SHUTDOWN, HandBackCause.DATABASE, HandBackCause.WATCHDOG
REFUNDED, COUNTED, FAILED = HandBackFate.REFUNDED, HandBackFate.COUNTED, HandBackFate.FAILED


@pytest.mark.parametrize(
    ("handback_count", "attempt_count", "max_attempts", "max_handbacks", "fate", "in_a_row"),
    [
        # free while the row is short
        (0, 1, 3, 3, REFUNDED, 1),
        (2, 1, 3, 3, REFUNDED, 3),
        # the fourth in a row counts; attempts left: a retry at once
        (3, 1, 3, 3, COUNTED, 4),
        (4, 2, 3, 3, COUNTED, 5),
        # the row goes on counting until the attempts are spent
        (5, 3, 3, 3, FAILED, 6),
        # attempts spent by earlier failures: the first counted hand-back ends it
        (3, 3, 3, 3, FAILED, 4),
        # 0: every hand-back counts
        (0, 1, 3, 0, COUNTED, 1),
        (0, 1, 1, 0, FAILED, 1),
        # a single attempt allowed: free hand-backs still are free
        (0, 1, 1, 3, REFUNDED, 1),
    ],
)
def test_hand_backs_are_free_up_to_the_bound_then_count(
    handback_count: int,
    attempt_count: int,
    max_attempts: int,
    max_handbacks: int,
    fate: HandBackFate,
    in_a_row: int,
) -> None:
    got = decide_hand_back(
        SHUT,
        handback_count=handback_count,
        attempt_count=attempt_count,
        max_attempts=max_attempts,
        max_handbacks=max_handbacks,
    )
    assert (got.fate, got.in_a_row, got.attempt, got.max_attempts) == (
        fate,
        in_a_row,
        attempt_count,
        max_attempts,
    )
    assert (got.message is None) == (fate == REFUNDED)


def test_a_task_interrupted_forever_ends_after_the_free_hand_backs_plus_its_attempts() -> None:
    """Replays a task that every run is handed back (a deploy loop): the claim counts an
    attempt, a refunded hand-back gives it back. It ends FAILED at hand-back
    DEFAULT_MAX_HANDBACKS + max_attempts."""
    handbacks, attempts, fates = 0, 0, []
    while True:
        attempts += 1  # the claim
        got = decide_hand_back(
            SHUT,
            handback_count=handbacks,
            attempt_count=attempts,
            max_attempts=3,
            max_handbacks=DEFAULT_MAX_HANDBACKS,
        )
        fates.append(got.fate)
        handbacks = got.in_a_row
        if got.fate == REFUNDED:
            attempts -= 1
        if got.fate == FAILED:
            break
    assert fates == [REFUNDED] * DEFAULT_MAX_HANDBACKS + [COUNTED, COUNTED, FAILED]
    assert got == HandBack(
        SHUT,
        FAILED,
        6,
        3,
        3,
        "handed back 6 times in a row (shutdown) without finishing; counted as attempt 3 of 3",
    )


def test_the_message_names_each_cause_of_the_row_once_in_order() -> None:
    got = hand_back_message(4, ["shutdown", "database fault", "shutdown", DOG.value], 3, 3)
    assert got == (
        "handed back 4 times in a row (shutdown, database fault, watchdog outage) without"
        " finishing; counted as attempt 3 of 3"
    )


@pytest.mark.parametrize(
    ("causes", "text"),
    [
        ([], "handed back 2 times in a row without finishing; counted as attempt 1 of 3"),
        (
            ["", "shutdown"],  # an event without a cause (written before causes were)
            "handed back 2 times in a row (shutdown) without finishing; counted as attempt 1 of 3",
        ),
    ],
)
def test_hand_back_message(causes: list[str], text: str) -> None:
    assert hand_back_message(2, causes, 1, 3) == text


@pytest.mark.parametrize(
    ("ending", "cause"),
    [
        (Ending.SHUTDOWN, SHUT),
        (Ending.DATABASE, DB),
        (Ending.WATCHDOG_FAILED, DOG),
    ],
)
def test_each_hand_back_ending_names_its_cause(ending: Ending, cause: HandBackCause) -> None:
    assert hand_back_cause(ending) == cause


@pytest.mark.parametrize(
    "ending", [Ending.FINISHED, Ending.PERMANENT, Ending.TRANSIENT, Ending.ABORTED]
)
def test_other_endings_are_not_hand_backs(ending: Ending) -> None:
    with pytest.raises(ValueError, match="is not handed back"):
        hand_back_cause(ending)
