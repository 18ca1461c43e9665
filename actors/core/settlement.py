"""How a finished or failed run is settled, as a pure decision.

The executor of a claimed task (``actors/supervised/execution.py``) reduces how its run ended to an
:class:`Ending` (:func:`ending_of`), asks :func:`settle` what to do, and carries the answer
out: the fenced store write, the file deletion, the log line and the metric. The table::

    ending           write              file    expected status     lease margin
    FINISHED         COMPLETE           keep    SUCCEEDED           heartbeat
    PERMANENT        FAIL               delete  FAILED              heartbeat
    TRANSIENT        SCHEDULE_RETRY     delete  PENDING (retry) or  heartbeat
                                                FAILED (attempts spent)
    DATABASE         HAND_BACK          delete  PENDING, new version, heartbeat
                                                attempt not counted (*)
    WATCHDOG_FAILED  HAND_BACK          delete  as DATABASE          0 (to the lease end)
    SHUTDOWN         RELEASE_SHIELDED   delete  as DATABASE          shielded, 10 s
    ABORTED          NOTHING            delete  unchanged (someone else owns the task)

(*) Hand-backs are bounded: past ``FILE_EXPORT_MAX_HANDBACKS`` in a row the attempt counts,
and the last one ends FAILED (``actors/core/handback.py``, decided by the store in the
hand-back's transaction; :func:`hand_back_cause` names the cause it records).

Every write is fenced; the store has the last word (a write that matches 0 rows means the
slot lost the task, and a retry past ``max_attempts`` ends FAILED in the same
transition, by :func:`actors.core.backoff.should_retry`). A final commit that matched 0
rows is settled again by :func:`settle_lost_commit`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from actors.core.backoff import should_retry
from actors.core.errors import (
    DeadlineExceededError,
    ExportAbortedError,
    ExportError,
    PermanentExportError,
)
from actors.core.handback import HandBackCause
from actors.core.models import TaskStatus
from actors.core.outcomes import AbortReason

#: Abort reasons the settlement tells apart.
ABORT_DEADLINE = AbortReason.DEADLINE
ABORT_WATCHDOG_FAILED = AbortReason.WATCHDOG_FAILED
ABORT_SHUTDOWN = AbortReason.SHUTDOWN

#: How long the shielded hand-back of a shutdown may take, seconds.
SHUTDOWN_RELEASE_SECONDS = 10.0


class Ending(StrEnum):
    """How a run ended, as far as settling it goes."""

    #: The pipeline returned a file.
    FINISHED = "finished"
    #: A business error (:class:`PermanentExportError`): no retry.
    PERMANENT = "permanent"
    #: A dependency error, the deadline, a dead worker, a bug in the pipeline: retry.
    TRANSIENT = "transient"
    #: The database failed under the run: no fault of the export.
    DATABASE = "database"
    #: The watchdog could not renew the lease (the database did not answer in time).
    WATCHDOG_FAILED = "watchdog_failed"
    #: The process is stopping.
    SHUTDOWN = "shutdown"
    #: The lease was lost or the run cancelled: another owner decides now.
    ABORTED = "aborted"


class Write(StrEnum):
    """The store write that settles a run."""

    #: ``complete_task``: SUCCEEDED, fenced by version, owner, status and deadline.
    COMPLETE = "complete"
    #: ``fail_task``: FAILED at once.
    FAIL = "fail"
    #: ``schedule_retry``: PENDING at a new version after backoff, or FAILED when the
    #: attempts are spent.
    SCHEDULE_RETRY = "schedule_retry"
    #: ``release_lease``: PENDING at a new version, attempt not counted, retried until
    #: the lease margin.
    HAND_BACK = "hand_back"
    #: ``release_lease`` once, shielded from the stopping process and bounded by
    #: :data:`SHUTDOWN_RELEASE_SECONDS`; if it fails the lease simply expires.
    RELEASE_SHIELDED = "release_shielded"
    #: Nothing: the task is no longer this slot's (invariant 8).
    NOTHING = "nothing"


class FileFate(StrEnum):
    """What becomes of the run's file before the write."""

    #: Keep: a landed commit references it. If the commit does not land, the lost-commit
    #: settlement deletes it, and lease recovery deletes it if the outcome stays unknown.
    KEEP = "keep"
    #: Delete it now (a failed delete is only a warning; the orphan scan removes it).
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class Settlement:
    """The decision for one run.

    Attributes:
        ending: how the run ended (what the settlement was decided from).
        write: the store write to make.
        file: the file's fate, carried out before the write.
        status: the task status the write leads to if it lands, ``None`` when nothing is
            written (the store's fenced answer has the last word).
        margin: for a write retried until the lease margin, how many seconds before the
            lease ends it gives up; ``None`` for :attr:`Write.RELEASE_SHIELDED` and
            :attr:`Write.NOTHING`.
    """

    ending: Ending
    write: Write
    file: FileFate
    status: TaskStatus | None
    margin: float | None


def ending_of(
    *,
    finished: bool,
    error: BaseException | None,
    abort_reason: AbortReason | None,
    database_fault: bool,
) -> Ending:
    """Reduce how a run ended to an :class:`Ending`.

    Args:
        finished: the pipeline returned a result.
        error: what it raised otherwise (an :class:`ExportError`, a database error, or the
            error of the abort, see :func:`abort_error`).
        abort_reason: the run's ``AbortReason``, if it was aborted; an abort
            wins over a result (the run's file is then not trusted).
        database_fault: ``error`` is a database error (the store gave up on a write the
            run needed), which the core cannot name itself.

    Returns:
        The ending.
    """
    if abort_reason == ABORT_SHUTDOWN:
        return Ending.SHUTDOWN
    if abort_reason == ABORT_WATCHDOG_FAILED:
        return Ending.WATCHDOG_FAILED
    if abort_reason == ABORT_DEADLINE:
        return Ending.TRANSIENT  # the deadline counts as a transient failure
    if abort_reason is not None:
        return Ending.ABORTED
    if finished:
        return Ending.FINISHED
    if isinstance(error, ExportAbortedError):
        return Ending.ABORTED
    if database_fault:
        return Ending.DATABASE
    if isinstance(error, PermanentExportError):
        return Ending.PERMANENT
    return Ending.TRANSIENT


def settle(
    ending: Ending, *, attempt_count: int, max_attempts: int, heartbeat_seconds: float
) -> Settlement:
    """What to write, and what becomes of the file, for a run that ended so.

    Args:
        ending: from :func:`ending_of`.
        attempt_count: the task's attempts, including this one (the claim counted it).
        max_attempts: the task's automatic-retry ceiling.
        heartbeat_seconds: ``FILE_EXPORT_TASK_HEARTBEAT_SECONDS``; a settling write gives
            up one heartbeat before the lease ends, so the reconciler finds a clean lease.

    Returns:
        The :class:`Settlement` (see the table in the module docstring).
    """
    hb = heartbeat_seconds
    if ending == Ending.FINISHED:
        return Settlement(ending, Write.COMPLETE, FileFate.KEEP, TaskStatus.SUCCEEDED, hb)
    if ending == Ending.PERMANENT:
        return Settlement(ending, Write.FAIL, FileFate.DELETE, TaskStatus.FAILED, hb)
    if ending == Ending.TRANSIENT:
        status = (
            TaskStatus.PENDING if should_retry(attempt_count, max_attempts) else TaskStatus.FAILED
        )
        return Settlement(ending, Write.SCHEDULE_RETRY, FileFate.DELETE, status, hb)
    if ending == Ending.DATABASE:
        return Settlement(ending, Write.HAND_BACK, FileFate.DELETE, TaskStatus.PENDING, hb)
    if ending == Ending.WATCHDOG_FAILED:
        # The renewals already failed: use the lease to its end before leaving the task
        # to the reconciler.
        return Settlement(ending, Write.HAND_BACK, FileFate.DELETE, TaskStatus.PENDING, 0.0)
    if ending == Ending.SHUTDOWN:
        return Settlement(ending, Write.RELEASE_SHIELDED, FileFate.DELETE, TaskStatus.PENDING, None)
    return Settlement(ending, Write.NOTHING, FileFate.DELETE, None, None)


#: The cause a hand-back records, by the ending that leads to one.
_HAND_BACK_CAUSES = {
    Ending.SHUTDOWN: HandBackCause.SHUTDOWN,
    Ending.DATABASE: HandBackCause.DATABASE,
    Ending.WATCHDOG_FAILED: HandBackCause.WATCHDOG,
}


def hand_back_cause(ending: Ending) -> HandBackCause:
    """The cause a hand-back of a run that ended so records (``actors.core.handback``).

    Raises:
        ValueError: ``ending`` does not lead to a hand-back.
    """
    try:
        return _HAND_BACK_CAUSES[ending]
    except KeyError:
        raise ValueError(f"a run that ended {ending.value!r} is not handed back") from None


def settle_lost_commit(
    past_deadline: bool | None, *, attempt_count: int, max_attempts: int, heartbeat_seconds: float
) -> Settlement:
    """The final commit matched 0 rows: the file is an orphan in any case.

    Args:
        past_deadline: the store's answer whether this slot still holds the run and only
            the deadline refused the commit; ``None`` if it could not be asked.
        attempt_count, max_attempts, heartbeat_seconds: as for :func:`settle`.

    Returns:
        A retry (the deadline is a transient failure) when only the deadline
        refused the commit; otherwise nothing, since the task is no longer this slot's.
        The file is deleted either way.
    """
    if past_deadline is True:
        return settle(
            Ending.TRANSIENT,
            attempt_count=attempt_count,
            max_attempts=max_attempts,
            heartbeat_seconds=heartbeat_seconds,
        )
    return Settlement(Ending.ABORTED, Write.NOTHING, FileFate.DELETE, None, None)


def deadline_message(max_duration_minutes: float) -> str:
    """The failure message of a run that passed its deadline, e.g. "execution exceeded the
    maximum duration of 30 minutes" (the message names the limit)."""
    unit = "minute" if max_duration_minutes == 1 else "minutes"
    return f"execution exceeded the maximum duration of {max_duration_minutes:g} {unit}"


def abort_error(abort_reason: AbortReason, max_duration_minutes: float) -> ExportError:
    """The error an aborted run settles with.

    Args:
        abort_reason: the run's ``AbortReason``.
        max_duration_minutes: ``FILE_EXPORT_TASK_MAX_DURATION_MINUTES``, for the message.

    Returns:
        :class:`DeadlineExceededError` for the deadline, else :class:`ExportAbortedError`
        ("export aborted: lease_lost").
    """
    if abort_reason == ABORT_DEADLINE:
        return DeadlineExceededError(deadline_message(max_duration_minutes))
    return ExportAbortedError(f"export aborted: {abort_reason}")
