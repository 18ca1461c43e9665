"""Table tests of how a run is settled (actors/core/settlement.py): §8.4 final commit,
§9.1 error classes, §9.2 retries and attempts, §9.5 the file's fate, §14 shutdown."""

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
from actors.pipeline.context import AbortReason

HB = 10.0  # heartbeat seconds
WATCHDOG = Ending.WATCHDOG_FAILED
S, W, F = Settlement, Write, FileFate


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


@pytest.mark.parametrize(
    ("ending", "attempts", "max_attempts", "expected"),
    [
        (
            Ending.FINISHED,
            1,
            3,
            Settlement(Write.COMPLETE, FileFate.KEEP, TaskStatus.SUCCEEDED, HB),
        ),
        (Ending.PERMANENT, 1, 3, Settlement(Write.FAIL, FileFate.DELETE, TaskStatus.FAILED, HB)),
        # attempt_count includes the failed attempt: 1 and 2 of 3 retry, 3 of 3 fails.
        (
            Ending.TRANSIENT,
            1,
            3,
            Settlement(Write.SCHEDULE_RETRY, FileFate.DELETE, TaskStatus.PENDING, HB),
        ),
        (
            Ending.TRANSIENT,
            2,
            3,
            Settlement(Write.SCHEDULE_RETRY, FileFate.DELETE, TaskStatus.PENDING, HB),
        ),
        (
            Ending.TRANSIENT,
            3,
            3,
            Settlement(Write.SCHEDULE_RETRY, FileFate.DELETE, TaskStatus.FAILED, HB),
        ),
        (
            Ending.TRANSIENT,
            1,
            1,
            Settlement(Write.SCHEDULE_RETRY, FileFate.DELETE, TaskStatus.FAILED, HB),
        ),
        # The database, not the export, failed: the attempt is not counted.
        (
            Ending.DATABASE,
            3,
            3,
            Settlement(Write.HAND_BACK, FileFate.DELETE, TaskStatus.PENDING, HB),
        ),
        (
            Ending.WATCHDOG_FAILED,
            3,
            3,
            Settlement(Write.HAND_BACK, FileFate.DELETE, TaskStatus.PENDING, 0.0),
        ),
        (
            Ending.SHUTDOWN,
            1,
            3,
            Settlement(Write.RELEASE_SHIELDED, FileFate.DELETE, TaskStatus.PENDING, None),
        ),
        (Ending.ABORTED, 1, 3, Settlement(Write.NOTHING, FileFate.DELETE, None, None)),
    ],
)
def test_settle(ending: Ending, attempts: int, max_attempts: int, expected: Settlement) -> None:
    got = settle(ending, attempt_count=attempts, max_attempts=max_attempts, heartbeat_seconds=HB)
    assert got == expected


@pytest.mark.parametrize(
    ("past_deadline", "attempts", "expected"),
    [
        (True, 1, Settlement(Write.SCHEDULE_RETRY, FileFate.DELETE, TaskStatus.PENDING, HB)),
        (True, 3, Settlement(Write.SCHEDULE_RETRY, FileFate.DELETE, TaskStatus.FAILED, HB)),
        (False, 1, Settlement(Write.NOTHING, FileFate.DELETE, None, None)),
        (None, 1, Settlement(Write.NOTHING, FileFate.DELETE, None, None)),  # could not ask
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
