"""The error tree's edge: what a run that raised something is settled with (``run_failure``),
and every database error has its place in the tree."""

from __future__ import annotations

import pytest

from actors.core.db_retry import DbFault
from actors.core.errors import (
    DatabaseError,
    DatabaseExportError,
    DeadlineExceededError,
    ExportAbortedError,
    ExportCenterError,
    ExportError,
    LimitExceededError,
    PermanentExportError,
    ProviderUnavailableError,
    TransientDatabaseError,
    TransientExportError,
    run_failure,
)
from db import database

SAME = "same"  # run_failure returns the raised exception itself

RUN_FAILURES: list[tuple[Exception, type[BaseException], str]] = [
    # raised by the run                              settled as             message
    (PermanentExportError("type gone"), PermanentExportError, SAME),
    (LimitExceededError("max-rows 10"), LimitExceededError, SAME),
    (ProviderUnavailableError("503"), ProviderUnavailableError, SAME),
    (DeadlineExceededError("30 minutes"), DeadlineExceededError, SAME),
    (ExportAbortedError("lease lost"), ExportAbortedError, SAME),
    # A passing database fault: the consumer hands the task back, attempt not counted.
    (database.DatabaseUnavailableError("refused"), database.DatabaseUnavailableError, SAME),
    (database.ConnectionLostError("gone away"), database.ConnectionLostError, SAME),
    (database.CommitUnknownError("lost commit"), database.CommitUnknownError, SAME),
    (database.RetryableDatabaseError("deadlock"), database.RetryableDatabaseError, SAME),
    # Any other database error: a transient export error, no longer "a bug".
    (
        database.DatabaseAccessError("1045 denied"),
        DatabaseExportError,
        "database error: DatabaseAccessError: 1045 denied",
    ),
    (
        database.DuplicateKeyError("dup"),
        DatabaseExportError,
        "database error: DuplicateKeyError: dup",
    ),
    # A bug: transient, named, so it cannot strand the task.
    (ValueError("boom"), TransientExportError, "internal error: ValueError: boom"),
    (KeyError("k"), TransientExportError, "internal error: KeyError: 'k'"),
    (
        RuntimeError("a\r\nforged line"),
        TransientExportError,
        "internal error: RuntimeError: a\\r\\nforged line",
    ),
]


@pytest.mark.parametrize(("raised", "settled_as", "message"), RUN_FAILURES)
def test_run_failure(raised: Exception, settled_as: type[BaseException], message: str) -> None:
    got = run_failure(raised)
    assert type(got) is settled_as
    if message == SAME:
        assert got is raised
    else:
        assert str(got) == message


@pytest.mark.parametrize(
    ("cls", "base"),
    [
        (database.RetryableDatabaseError, TransientDatabaseError),
        (database.ConnectionLostError, TransientDatabaseError),
        (database.CommitUnknownError, TransientDatabaseError),
        (database.DatabaseUnavailableError, TransientDatabaseError),
        (database.DatabaseAccessError, DatabaseError),
        (database.DuplicateKeyError, DatabaseError),
        (TransientDatabaseError, DatabaseError),
        (DatabaseError, ExportCenterError),
        (DatabaseExportError, TransientExportError),
    ],
)
def test_database_errors_in_the_tree(cls: type[BaseException], base: type[BaseException]) -> None:
    assert issubclass(cls, base)
    assert not issubclass(cls, PermanentExportError)


@pytest.mark.parametrize(
    ("cls", "fault"),
    [
        (database.RetryableDatabaseError, DbFault.ROLLED_BACK),
        (database.ConnectionLostError, DbFault.CONNECTION_LOST),
        (database.CommitUnknownError, DbFault.COMMIT_UNKNOWN),
        (database.DatabaseUnavailableError, DbFault.UNAVAILABLE),
    ],
)
def test_each_transient_database_error_names_its_fault(
    cls: type[TransientDatabaseError], fault: DbFault
) -> None:
    assert cls.fault is fault


def test_only_export_errors_and_passing_database_faults_settle_as_raised() -> None:
    for raised, _, message in RUN_FAILURES:
        settled = run_failure(raised)
        assert isinstance(settled, ExportError | TransientDatabaseError)
        assert (settled is raised) == (message == SAME)
