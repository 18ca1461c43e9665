"""Why a claim matched no row: the seven branches of §8.2, as a pure function, plus the
fair-share deferral (``actors.core.fairness``), decided before any claim is tried.

Every branch acks the command and does nothing else (docs/design-rules.md §8.5: the reconciler is
the only re-send path). The classification exists for logs and metrics, and so tests
can pin each branch.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from actors.core.models import TERMINAL_STATUSES, Task, TaskStatus


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
