"""Hand-backs, bounded: when a run that the export did not end still costs an attempt.

A shutdown, a database fault under the run and a watchdog that could not renew the lease
end a run through no fault of the export. The executor then *hands the task back*
(``actors/supervised/execution.py``): PENDING at a new ``dispatch_version``, the attempt refunded.
Unbounded, that refund lets a task caught in repeated deploys or a flapping database run
forever without ever reaching ``max_attempts``, the loop guard of the design
(docs/design-rules.md). So each task counts its hand-backs in a row
(``file_export_task.handback_count``: every hand-back adds one; an attempt that ends any
other way — success, failure, retry, lease recovery — and a manual retry set it to 0),
and :func:`decide_hand_back` decides, in the hand-back's transaction::

    hand-backs in a row, this one included   fate
    <= FILE_EXPORT_MAX_HANDBACKS              REFUNDED  PENDING, new version, attempt refunded
    >  FILE_EXPORT_MAX_HANDBACKS, attempts    COUNTED   PENDING, new version, attempt counted,
       left (should_retry)                              failure_message says why
    >  FILE_EXPORT_MAX_HANDBACKS, last        FAILED    FAILED, failure_message says why
       attempt

Counting does not end the row: with the default of 3 and ``max_attempts`` 3, hand-backs
1 to 3 are free and 4, 5 and 6 each count, so a task never interrupted otherwise ends
FAILED at its sixth hand-back in a row (fewer when attempts had failed before). A counted
hand-back is retried at once, like a refunded one: nothing failed that a back-off would
let recover.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from actors.core.backoff import should_retry

#: ``FILE_EXPORT_MAX_HANDBACKS``' default: three deploys (or database blips) in a row
#: interrupt a task for free; the fourth in a row costs an attempt.
DEFAULT_MAX_HANDBACKS = 3


class HandBackCause(StrEnum):
    """Why a run was handed back (the ``cause`` of a ``handed_back`` event)."""

    #: The process stopped (SIGTERM) before the run finished within the grace period.
    SHUTDOWN = "shutdown"
    #: The store gave up on a write the run needed (the database was unavailable).
    DATABASE = "database fault"
    #: The lease watchdog could not renew the lease (the database did not answer in time).
    WATCHDOG = "watchdog outage"


class HandBackFate(StrEnum):
    """What a hand-back does to the task (see the table in the module docstring)."""

    REFUNDED = "refunded"
    COUNTED = "counted"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class HandBack:
    """The decision for one hand-back.

    Attributes:
        cause: why the run was handed back.
        fate: refunded, counted (and retried), or counted as the last attempt (FAILED).
        in_a_row: the task's ``handback_count`` after this hand-back.
        attempt: the attempt the run was (the claim counted it), e.g. 3 of ``max_attempts``.
        max_attempts: the task's automatic-retry ceiling.
        message: the ``failure_message`` a counted hand-back writes; ``None`` when refunded.
    """

    cause: HandBackCause
    fate: HandBackFate
    in_a_row: int
    attempt: int
    max_attempts: int
    message: str | None


def decide_hand_back(
    cause: HandBackCause,
    *,
    handback_count: int,
    attempt_count: int,
    max_attempts: int,
    max_handbacks: int,
) -> HandBack:
    """Decide one hand-back (the table in the module docstring).

    Args:
        cause: why this run is handed back.
        handback_count: the task's hand-backs in a row before this one.
        attempt_count: the task's attempts, this run included (the claim counted it).
        max_attempts: the task's automatic-retry ceiling.
        max_handbacks: ``FILE_EXPORT_MAX_HANDBACKS``: hand-backs in a row that are free.

    Returns:
        The :class:`HandBack`; a counted one's message names this cause only (the store,
        which can read the row's earlier causes from the history, names them all with
        :func:`hand_back_message`).
    """
    in_a_row = handback_count + 1
    if in_a_row <= max_handbacks:
        return HandBack(cause, HandBackFate.REFUNDED, in_a_row, attempt_count, max_attempts, None)
    fate = (
        HandBackFate.COUNTED if should_retry(attempt_count, max_attempts) else HandBackFate.FAILED
    )
    message = hand_back_message(in_a_row, [cause.value], attempt_count, max_attempts)
    return HandBack(cause, fate, in_a_row, attempt_count, max_attempts, message)


def hand_back_message(in_a_row: int, causes: Sequence[str], attempt: int, max_attempts: int) -> str:
    """The failure message of a counted hand-back, e.g. "handed back 4 times in a row
    (shutdown, database fault) without finishing; counted as attempt 3 of 3".

    Args:
        in_a_row: hand-backs in a row, this one included.
        causes: their causes as known, oldest first; each named once, in the order they
            first occurred (none known: the parenthesis is left out).
        attempt: the attempt this hand-back counts as.
        max_attempts: the task's ceiling.
    """
    named = list(dict.fromkeys(c for c in causes if c))
    why = f" ({', '.join(named)})" if named else ""
    return (
        f"handed back {in_a_row} times in a row{why} without finishing;"
        f" counted as attempt {attempt} of {max_attempts}"
    )
