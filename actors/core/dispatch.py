"""Why a claim matched no row: the seven branches of §8.2, as a pure function, plus the
fair-share deferral (``actors.core.fairness``), decided before any claim is tried; and
what the reconciler makes of a waiting task's command (§8.5-1).

Every branch acks the command and does nothing else (docs/design-rules.md §8.5: the reconciler is
the only re-send path). The classification exists for logs and metrics, and so tests
can pin each branch. One thing a no-claim does record: a branch whose task still waits
PENDING at the command's version (:func:`marks_command_seen`) marks the command *seen*
(``file_export_outbox.seen_at``), after the ack. Such a command is not lost: a slot had
it, and the task is pulled from the database as soon as a slot may run it (§8.1).

The reconciler re-sends only a command that may be lost (:func:`command_state`), for a
task PENDING at that version ``redispatchGrace`` past its ``next_retry_at``:

=============================================  ===============  ============================
the current version's outbox row               state            the reconciler
=============================================  ===============  ============================
none                                           ``MISSING``      writes one (case A)
QUARANTINED                                    ``QUARANTINED``  never (§9.4)
PENDING or CLAIMED                             ``UNSENT``       leaves it to the publisher
SENT, seen by a slot                           ``WAITING``      never: it waits for a slot
SENT < sentStaleSeconds ago, unseen            ``IN_FLIGHT``    waits
SENT ≥ sentStaleSeconds ago, unseen, once      ``LOST``         sends it again (case B)
SENT ≥ sentStaleSeconds ago, unseen, re-sent   ``RESENT``       never a third time
=============================================  ===============  ============================

An unseen command is lost, or waits undelivered in the broker behind busy slots: the
database cannot tell them apart, so it is sent once more (**better twice than never**,
``resent_at`` records it). If that copy is not seen either, a third would meet the same
wait: a slot that frees claims the fairest due task from the database before it takes
a command, so a copy never starts a task sooner, and a long queue must not multiply the
broker's traffic. The reconciler's SQL carries the table out
(``db/transitions/reconciler.py``; ``tests/db/test_store_contract_redispatch.py`` holds
it to this function on both databases).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from actors.core.models import TERMINAL_STATUSES, OutboxStatus, Task, TaskStatus


class NoClaim(StrEnum):
    """The §8.2 table, one member per row, and the fair-share deferral."""

    TASK_MISSING = "task_missing"  # very old message or data cleaned up (WARN)
    STALE_VERSION = "stale_version"  # task has a newer dispatch_version
    TERMINAL = "terminal"  # SUCCEEDED / FAILED / EXPIRED
    RUNNING_ELSEWHERE = "running_elsewhere"  # RUNNING, lease still valid
    RUNNING_LEASE_EXPIRED = "running_lease_expired"  # RUNNING, lease expired: reconciler's job
    IN_BACKOFF = "in_backoff"  # PENDING, next_retry_at in the future
    LOST_RACE = "lost_race"  # PENDING and due, another claimer won
    # Not from the seed's no-claim table: PENDING and due, but its requester already
    # holds its fair share of this instance's slots. The task stays PENDING at the same
    # version; a slot that becomes free claims it from the database (actors.core.fairness).
    DEFERRED_FAIR_SHARE = "deferred_fair_share"
    # Not from the seed's table either: this instance's storage probe fails (or has not
    # run yet), so a run could only end at its upload. The task stays PENDING at the same
    # version; a slot claims it from the database once the probe passes.
    STORAGE_UNAVAILABLE = "storage_unavailable"


def classify_no_claim(task: Task | None, dispatch_version: int, now: datetime) -> NoClaim:
    """Classify a claim that updated 0 rows.

    Args:
        task: the task re-read after the failed claim, or ``None`` if it does not exist.
        dispatch_version: the version carried by the command.
        now: the database clock at the re-read (§8.6).

    Returns:
        The branch of §8.2. A command whose version is *newer* than the task's cannot be
        produced by this service; it is reported as ``LOST_RACE`` (acked, nothing done).
    """
    if task is None:
        return NoClaim.TASK_MISSING
    if task.dispatch_version > dispatch_version:
        return NoClaim.STALE_VERSION
    if task.status in TERMINAL_STATUSES:
        return NoClaim.TERMINAL
    if task.status == TaskStatus.RUNNING:
        if task.lease_until is not None and task.lease_until > now:
            return NoClaim.RUNNING_ELSEWHERE
        return NoClaim.RUNNING_LEASE_EXPIRED
    if task.status == TaskStatus.PENDING and task.next_retry_at > now:
        return NoClaim.IN_BACKOFF
    return NoClaim.LOST_RACE


#: The no-claims whose task still waits PENDING at the command's version (or, with the
#: storage unavailable, may: nothing was read): the task waits for a slot.
_TASK_WAITS = frozenset(
    {
        NoClaim.DEFERRED_FAIR_SHARE,
        NoClaim.STORAGE_UNAVAILABLE,
        NoClaim.IN_BACKOFF,
        NoClaim.LOST_RACE,
    }
)


def marks_command_seen(reason: NoClaim) -> bool:
    """Whether a delivery acked with this no-claim marks its command *seen*.

    A seen command reached a slot, which acked it without claiming because the task
    waits: for its requester's fair share, for the instance's storage, for its back-off
    to end, or for a claimer that was a moment faster. Its task is pulled from the
    database once a slot may run it, so the reconciler never sends it again
    (:func:`command_state`). The other branches are not recorded: their task is gone,
    newer, finished or running, and the reconciler looks only at PENDING tasks at their
    version.

    Args:
        reason: why the delivery's claim matched no row.
    """
    return reason in _TASK_WAITS


class CommandState(StrEnum):
    """Where the current command of a waiting task stands, for the reconciler (§8.5-1):
    one member per row of the module's table."""

    MISSING = "missing"  # no outbox row at the task's version: case A writes one
    QUARANTINED = "quarantined"  # a poison message: never sent again (§9.4)
    UNSENT = "unsent"  # PENDING or CLAIMED: the publisher sends it (§7.4)
    WAITING = "waiting"  # SENT, and a slot acked a delivery of it without a claim
    IN_FLIGHT = "in_flight"  # SENT, unseen, less than sentStaleSeconds ago
    LOST = "lost"  # SENT, unseen, sentStaleSeconds ago or more: case B sends it again
    RESENT = "resent"  # the same, but case B sent it again already: not a third time

    @property
    def redispatched(self) -> bool:
        """Whether the reconciler writes or re-sends the command (cases A and B)."""
        return self in (CommandState.MISSING, CommandState.LOST)


def command_state(
    status: OutboxStatus | None,
    *,
    seen: bool,
    resent: bool,
    sent_age_seconds: float | None,
    stale_seconds: float,
) -> CommandState:
    """Classify the current command of a PENDING task past its ``redispatchGrace``.

    Args:
        status: the status of the outbox row at the task's version; ``None`` if none.
        seen: a slot acked a delivery of that version without claiming its task
            (``seen_at`` is set, :func:`marks_command_seen`).
        resent: the reconciler sent the row again already (``resent_at`` is set).
        sent_age_seconds: DB time since the row was last sent (``sent_at``), for a SENT
            row.
        stale_seconds: ``FILE_EXPORT_SENT_STALE_SECONDS``.

    Returns:
        The row of the module's table; ``.redispatched`` says whether the reconciler acts.
    """
    if status is None:
        return CommandState.MISSING
    if status == OutboxStatus.QUARANTINED:
        return CommandState.QUARANTINED
    if status != OutboxStatus.SENT:
        return CommandState.UNSENT
    if seen:
        return CommandState.WAITING
    if sent_age_seconds is None or sent_age_seconds < stale_seconds:
        return CommandState.IN_FLIGHT
    if resent:
        return CommandState.RESENT
    return CommandState.LOST
