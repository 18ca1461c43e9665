"""Table tests of how a run is settled (actors/core/settlement.py): the fenced final
commit, error classes, retries and attempts, the file's fate, shutdown."""

from __future__ import annotations

import pytest

from actors.core.errors import (
    CursorNotAdvancingError,
    DeadlineExceededError,
    ExportAbortedError,
    ExportWorkerDiedError,
    LimitExceededError,
    PermanentExportError,
    ProviderContractError,
    ProviderUnavailableError,
    TransientExportError,
)
from actors.core.models import TaskStatus
from actors.core.outcomes import AbortReason
from actors.core.settlement import (
    SHUTDOWN_RELEASE_SECONDS,
    Ending,
    FileFate,
    Settlement,
    Write,
    abort_error,
    deadline_message,
    ending_of,
    settle,
    settle_lost_commit,
)

HB = 10.0  # heartbeat seconds
WATCHDOG = Ending.WATCHDOG_FAILED


@pytest.mark.parametrize(
    ("finished", "error", "abort_reason", "database_fault", "ending"),
    [
        (True, None, None, False, Ending.FINISHED),
        (False, ProviderContractError("x"), None, False, Ending.PERMANENT),
        (False, LimitExceededError("x"), None, False, Ending.PERMANENT),
        (False, PermanentExportError("x"), None, False, Ending.PERMANENT),
        (False, ProviderUnavailableError("x"), None, False, Ending.TRANSIENT),
        (False, CursorNotAdvancingError("x"), None, False, Ending.TRANSIENT),
        (False, ExportWorkerDiedError("x"), None, False, Ending.TRANSIENT),
        (False, TransientExportError("internal error: a bug"), None, False, Ending.TRANSIENT),
        (False, OSError("database gone"), None, True, Ending.DATABASE),
        (False, ExportAbortedError("x"), None, False, Ending.ABORTED),
        # An abort wins over whatever the run produced or raised.
        (True, None, AbortReason.LEASE_LOST, False, Ending.ABORTED),
        (True, None, AbortReason.CANCELLED, False, Ending.ABORTED),  # cancel beats a result
        (False, DeadlineExceededError("x"), AbortReason.DEADLINE, False, Ending.TRANSIENT),
        (True, None, AbortReason.DEADLINE, False, Ending.TRANSIENT),
        (
            False,
            ExportAbortedError("x"),
            AbortReason.WATCHDOG_FAILED,
            False,
            Ending.WATCHDOG_FAILED,
        ),
        (False, ExportAbortedError("x"), AbortReason.SHUTDOWN, False, Ending.SHUTDOWN),
        (False, OSError("db"), AbortReason.SHUTDOWN, True, Ending.SHUTDOWN),
    ],
)
def test_ending_of(
    finished: bool,
    error: BaseException | None,
    abort_reason: AbortReason | None,
    database_fault: bool,
    ending: Ending,
) -> None:
    got = ending_of(
        finished=finished, error=error, abort_reason=abort_reason, database_fault=database_fault
    )
    assert got == ending


DEL, KEEP = FileFate.DELETE, FileFate.KEEP
PENDING, FAILED, SUCCEEDED = TaskStatus.PENDING, TaskStatus.FAILED, TaskStatus.SUCCEEDED


@pytest.mark.parametrize(
    ("ending", "attempts", "max_attempts", "write", "file", "status", "margin"),
    [
        (Ending.FINISHED, 1, 3, Write.COMPLETE, KEEP, SUCCEEDED, HB),
        (Ending.PERMANENT, 1, 3, Write.FAIL, DEL, FAILED, HB),
        # attempt_count includes the failed attempt: 1 and 2 of 3 retry, 3 of 3 fails.
        (Ending.TRANSIENT, 1, 3, Write.SCHEDULE_RETRY, DEL, PENDING, HB),
        (Ending.TRANSIENT, 2, 3, Write.SCHEDULE_RETRY, DEL, PENDING, HB),
        (Ending.TRANSIENT, 3, 3, Write.SCHEDULE_RETRY, DEL, FAILED, HB),
        (Ending.TRANSIENT, 1, 1, Write.SCHEDULE_RETRY, DEL, FAILED, HB),
        # The database, not the export, failed: the attempt is not counted.
        (Ending.DATABASE, 3, 3, Write.HAND_BACK, DEL, PENDING, HB),
        (Ending.WATCHDOG_FAILED, 3, 3, Write.HAND_BACK, DEL, PENDING, 0.0),
        (Ending.SHUTDOWN, 1, 3, Write.RELEASE_SHIELDED, DEL, PENDING, None),
        (Ending.ABORTED, 1, 3, Write.NOTHING, DEL, None, None),
    ],
)
def test_settle(
    ending: Ending,
    attempts: int,
    max_attempts: int,
    write: Write,
    file: FileFate,
    status: TaskStatus | None,
    margin: float | None,
) -> None:
    got = settle(ending, attempt_count=attempts, max_attempts=max_attempts, heartbeat_seconds=HB)
    assert got == Settlement(ending, write, file, status, margin)


@pytest.mark.parametrize(
    ("past_deadline", "attempts", "expected"),
    [
        (True, 1, Settlement(Ending.TRANSIENT, Write.SCHEDULE_RETRY, DEL, PENDING, HB)),
        (True, 3, Settlement(Ending.TRANSIENT, Write.SCHEDULE_RETRY, DEL, FAILED, HB)),
        (False, 1, Settlement(Ending.ABORTED, Write.NOTHING, DEL, None, None)),
        (None, 1, Settlement(Ending.ABORTED, Write.NOTHING, DEL, None, None)),  # could not ask
    ],
)
def test_settle_lost_commit(
    past_deadline: bool | None, attempts: int, expected: Settlement
) -> None:
    got = settle_lost_commit(
        past_deadline, attempt_count=attempts, max_attempts=3, heartbeat_seconds=HB
    )
    assert got == expected


@pytest.mark.parametrize(
    ("reason", "minutes", "error_type", "message"),
    [
        (
            AbortReason.DEADLINE,
            30,
            DeadlineExceededError,
            "execution exceeded the maximum duration of 30 minutes",
        ),
        (
            AbortReason.DEADLINE,
            1,
            DeadlineExceededError,
            "execution exceeded the maximum duration of 1 minute",
        ),
        (
            AbortReason.DEADLINE,
            0.5,
            DeadlineExceededError,
            "execution exceeded the maximum duration of 0.5 minutes",
        ),
        (AbortReason.LEASE_LOST, 30, ExportAbortedError, "export aborted: lease_lost"),
        (AbortReason.SHUTDOWN, 30, ExportAbortedError, "export aborted: shutdown"),
        (AbortReason.WATCHDOG_FAILED, 30, ExportAbortedError, "export aborted: watchdog_failed"),
    ],
)
def test_abort_error(
    reason: AbortReason, minutes: float, error_type: type[Exception], message: str
) -> None:
    error = abort_error(reason, minutes)
    assert type(error) is error_type
    assert str(error) == message


def test_deadline_message_and_shutdown_bound() -> None:
    assert deadline_message(2) == "execution exceeded the maximum duration of 2 minutes"
    assert SHUTDOWN_RELEASE_SECONDS == 10.0
