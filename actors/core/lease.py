"""Lease and deadline maths of a run, as plain functions over numbers.

Times here are readings of the slot's monotonic clock (``trio.current_time()``), in
seconds; the consumer reads the clock and passes it in. The lease itself is fenced and
timed by the database clock (docs/design-rules.md §8.6); these functions only decide when this
slot should renew, give up or abort, counted from the last renewal that landed
(``lease_renewed_at``). A margin of ``m`` seconds means "stop ``m`` seconds before the
lease would run out".

The lease keeper (``actors/supervised/lease_keeper.py``: the lease watchdog, the deadline guard, the
settling writes) keeps the trio scopes and sleeps; the decisions are here.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from enum import StrEnum

#: Longest pause between two tries of a settling write, seconds (the store also backs off
#: inside each call).
SETTLE_RETRY_PAUSE_SECONDS = 1.0


def margin_at(lease_renewed_at: float, lease_seconds: float, margin: float) -> float:
    """When the lease is ``margin`` seconds from running out.

    Args:
        lease_renewed_at: clock reading of the claim or of the last renewal that landed, s.
        lease_seconds: ``FILE_EXPORT_TASK_LEASE_SECONDS``.
        margin: seconds to keep before the lease ends.

    Returns:
        The clock reading, seconds.
    """
    return lease_renewed_at + lease_seconds - margin


def time_left(now: float, lease_renewed_at: float, lease_seconds: float, margin: float) -> float:
    """Seconds until :func:`margin_at`; zero or negative once it has passed.

    Args:
        now: the current clock reading, s.
        lease_renewed_at, lease_seconds, margin: as for :func:`margin_at`.
    """
    return margin_at(lease_renewed_at, lease_seconds, margin) - now


def settle_retry_pause(left: float) -> float:
    """Pause before trying a settling write again, seconds: at most
    :data:`SETTLE_RETRY_PAUSE_SECONDS`, and never past the margin (``left`` seconds away)."""
    return min(SETTLE_RETRY_PAUSE_SECONDS, left)


def renewal_follow_period(heartbeat_seconds: float) -> float:
    """How often a settling write re-reads the margin while it waits, seconds: half a
    heartbeat, so a renewal the watchdog lands meanwhile moves the margin in time."""
    return heartbeat_seconds / 2


def watchdog_abort_at(
    lease_renewed_at: float, lease_seconds: float, heartbeat_seconds: float
) -> float:
    """When the watchdog stops retrying a renewal and aborts the run: one heartbeat before
    the lease would run out, so the run never goes on unprotected.

    Returns:
        The clock reading, seconds.
    """
    return margin_at(lease_renewed_at, lease_seconds, heartbeat_seconds)


def renewal_budget(now: float, abort_at: float) -> float:
    """How long one renewal call may take before the watchdog gives up on it, seconds
    (never negative)."""
    return max(0.0, abort_at - now)


class WatchdogStep(StrEnum):
    """What the watchdog does after one renewal call (:func:`after_renewal`)."""

    #: The renewal landed: count the lease from now and sleep a heartbeat.
    RENEWED = "renewed"
    #: The renewal failed or is still in flight, and there is time: try again.
    KEEP_TRYING = "keep_trying"
    #: No renewal landed and the next try would end after ``abort_at``: abort the run
    #: (the database, not the export, stopped it).
    ABORT_UNRENEWED = "abort_unrenewed"
    #: The renewal matched 0 rows: the lease is lost, the version moved, the task was
    #: cancelled or the deadline passed. Abort; the caller asks the store which.
    LOST = "lost"


def after_renewal(
    renewed: bool | None, now: float, abort_at: float, heartbeat_seconds: float
) -> WatchdogStep:
    """The watchdog's decision after a renewal call.

    Args:
        renewed: the store's answer (True: one row renewed; False: 0 rows), or ``None``
            if the call raised or ran out of its :func:`renewal_budget`.
        now: the clock reading after the call, s.
        abort_at: :func:`watchdog_abort_at` for the last renewal that landed, s.
        heartbeat_seconds: ``FILE_EXPORT_TASK_HEARTBEAT_SECONDS``.

    Returns:
        The next step, a :class:`WatchdogStep`.
    """
    if renewed is None:
        if now + heartbeat_seconds > abort_at:
            return WatchdogStep.ABORT_UNRENEWED
        return WatchdogStep.KEEP_TRYING
    return WatchdogStep.RENEWED if renewed else WatchdogStep.LOST


def deadline_delay(started_at: datetime | None, deadline_at: datetime | None) -> float | None:
    """How long after the claim the deadline guard aborts the run, seconds.

    The deadline was computed by the database clock at claim; as a duration from the start
    it can be counted on the slot's monotonic clock, so instance clock skew cannot move it.

    Args:
        started_at: the task's ``started_at`` (DB time of the claim).
        deadline_at: the task's ``execution_deadline_at``.

    Returns:
        Seconds, never negative; ``None`` if either time is unknown (no guard).
    """
    if deadline_at is None or started_at is None:
        return None
    return max(0.0, (deadline_at - started_at).total_seconds())


def default_instance_id(host: str, pid: int, pid_namespace: int | None) -> str:
    """The ``lease_owner`` of a process whose ``FILE_EXPORT_INSTANCE_ID`` is unset:
    ``host:pid``, plus ``/namespace`` (the inode number of its PID namespace) where the
    system has one, so that :func:`is_predecessor_lease` can tell a dead process of this
    host from a live one in another container that shares the host name.

    Args:
        host: the host name.
        pid: the process id.
        pid_namespace: inode number of ``/proc/self/ns/pid``; ``None`` when unknown.
    """
    base = f"{host}:{pid}"
    return base if pid_namespace is None else f"{base}/{pid_namespace}"


def is_predecessor_lease(
    owner: str | None,
    *,
    instance_id: str,
    host: str,
    pid: int,
    pid_namespace: int | None,
    alive: Callable[[int], bool],
) -> bool:
    """Whether a RUNNING task's lease, seen as this process starts and before it claims
    anything, belongs to a process that is gone, so it can be recovered at once instead of
    after up to ``FILE_EXPORT_TASK_LEASE_SECONDS`` (a restart after a crash or kill -9).

    True when ``owner`` is

    * this instance's own id: ids are unique among live instances (fencing by
      ``lease_owner`` depends on it), and this process holds no lease yet, so the lease
      is its predecessor's under the same id — a stable ``FILE_EXPORT_INSTANCE_ID``, or
      a container restarted with the same host name and PID 1;
    * a default id (:func:`default_instance_id`) of this host and this PID namespace
      whose process no longer exists (or is this process: its PID was reused). Without
      the namespace part the owner's PID cannot be checked here (it may live in another
      container of the same host name), so it is left to its lease. A PID reused by
      another process counts as alive: the lease then expires as usual.

    Args:
        owner: the task's ``lease_owner``.
        instance_id: this process's ``FILE_EXPORT_INSTANCE_ID`` (or default).
        host, pid, pid_namespace: this process's host name, PID and PID namespace inode.
        alive: whether a PID of this namespace names a running process.
    """
    if owner is None:
        return False
    if owner == instance_id:
        return True
    if pid_namespace is None:
        return False
    name, colon, rest = owner.rpartition(":")
    digits, slash, namespace = rest.partition("/")
    if not colon or not slash or name != host or namespace != str(pid_namespace):
        return False
    if not digits.isascii() or not digits.isdigit():
        return False
    # Our own PID in our namespace: its previous holder is gone (we have it now).
    return int(digits) == pid or not alive(int(digits))
