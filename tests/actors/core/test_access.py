"""Table tests of the access rules (actors/core/access.py) and their envelope codes
(web/errors.py): ownership, DOWNLOAD_ALL_PERMISSION, the registry's app scope."""

from __future__ import annotations

import pytest

from actors.core.access import (
    MAX_TASK_ID,
    authorise,
    check_requestable,
    check_retryable,
    downloadable_key,
    owns,
    parse_task_id,
    parse_task_reference,
    sees_all_requesters,
    visible_task,
)
from actors.core.definitions import ExportDefinition
from actors.core.errors import ParameterError, Refusal, Refused, RequestError
from actors.core.ids import task_number
from actors.core.models import TaskStatus
from actors.core.principal import DOWNLOAD_ALL_PERMISSION, AppCode, Principal
from tests.helpers import task_value
from web.errors import envelope_code

ALL = frozenset({DOWNLOAD_ALL_PERMISSION})
# The task of task_value(): tenant 0, app PLATFORM, requested by user 7.
TASK = task_value()


@pytest.mark.parametrize(
    ("user", "tenant", "app", "perms", "expected"),
    [
        (7, 0, AppCode.PLATFORM, frozenset(), True),  # the requester
        (8, 0, AppCode.PLATFORM, frozenset(), False),  # another user
        (8, 0, AppCode.PLATFORM, ALL, True),  # download:all: every requester
        (7, 1, AppCode.PLATFORM, frozenset(), False),  # another tenant
        (8, 1, AppCode.PLATFORM, ALL, False),  # download:all stays in its tenant
        (7, 0, AppCode.MERCHANT, frozenset(), False),  # another app
        (8, 0, AppCode.MERCHANT, ALL, False),  # download:all stays in its app
    ],
)
def test_owns(user: int, tenant: int, app: AppCode, perms: frozenset[str], expected: bool) -> None:
    principal = Principal(user, tenant, app, perms)
    assert owns(principal, TASK) is expected
    assert sees_all_requesters(principal) is (DOWNLOAD_ALL_PERMISSION in perms)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", 1),
        ("42", 42),
        (str(MAX_TASK_ID), MAX_TASK_ID),
        ("abc", ParameterError("taskId", "invalid task id 'abc'")),
        ("", ParameterError("taskId", "invalid task id ''")),
        ("0", Refused(Refusal.NOT_FOUND, "export task 0 not found")),
        ("042", ParameterError("taskId", "invalid task id '042': write it without leading zeros")),
        ("00", ParameterError("taskId", "invalid task id '00': write it without leading zeros")),
        ("-5", ParameterError("taskId", "invalid task id '-5'")),
        ("+1", ParameterError("taskId", "invalid task id '+1'")),
        (" 1", ParameterError("taskId", "invalid task id ' 1'")),
        ("１２", ParameterError("taskId", "invalid task id '１２'")),
        ("1e3", ParameterError("taskId", "invalid task id '1e3'")),
        ("9" * 5000, Refused(Refusal.NOT_FOUND, f"export task {'9' * 24}… not found")),
        (str(MAX_TASK_ID + 1), Refused(Refusal.NOT_FOUND, f"export task {2**63} not found")),
    ],
)
def test_parse_task_id(raw: str, expected: int | RequestError) -> None:
    if isinstance(expected, int):
        assert parse_task_id(raw) == expected
        return
    with pytest.raises(RequestError) as caught:
        parse_task_id(raw)
    assert_refusal(caught.value, expected)


def test_visible_task_refuses_a_missing_or_foreign_task_alike() -> None:
    owner = Principal(7, 0, AppCode.PLATFORM)
    assert visible_task(owner, TASK, "1") is TASK
    for principal, task in ((owner, None), (Principal(8, 0, AppCode.PLATFORM), TASK)):
        with pytest.raises(Refused) as caught:
            visible_task(principal, task, "1")
        assert_refusal(caught.value, Refused(Refusal.NOT_FOUND, "export task 1 not found"))


@pytest.mark.parametrize(
    ("status", "object_key", "expected"),
    [
        (TaskStatus.SUCCEEDED, "k/1.xlsx", "k/1.xlsx"),
        (
            TaskStatus.EXPIRED,
            None,
            Refused(Refusal.FILE_EXPIRED, "the file has expired and was deleted"),
        ),
        (
            TaskStatus.SUCCEEDED,
            None,
            Refused(
                Refusal.NOT_DOWNLOADABLE,
                "the task is SUCCEEDED; only SUCCEEDED tasks can be downloaded",
            ),
        ),
        *[
            (
                status,
                "k/1.xlsx",
                Refused(
                    Refusal.NOT_DOWNLOADABLE,
                    f"the task is {status.value}; only SUCCEEDED tasks can be downloaded",
                ),
            )
            for status in (TaskStatus.PENDING, TaskStatus.RUNNING, TaskStatus.FAILED)
        ],
    ],
)
def test_downloadable_key(
    status: TaskStatus, object_key: str | None, expected: str | RequestError
) -> None:
    task = task_value(status=status, object_key=object_key)
    if isinstance(expected, str):
        assert downloadable_key(task) == expected
        return
    with pytest.raises(Refused) as caught:
        downloadable_key(task)
    assert_refusal(caught.value, expected)


@pytest.mark.parametrize("status", list(TaskStatus))
def test_check_retryable(status: TaskStatus) -> None:
    task = task_value(status=status)
    if status in (TaskStatus.FAILED, TaskStatus.CANCELLED):
        check_retryable(task)
        return
    with pytest.raises(Refused) as caught:
        check_retryable(task)
    expected = Refused(
        Refusal.NOT_RETRYABLE,
        f"only FAILED or CANCELLED tasks can be retried; the task is {status.value}",
    )
    assert_refusal(caught.value, expected)


def _definition(**overrides: object) -> ExportDefinition:
    fields: dict[str, object] = dict(
        export_type="CUSTOMER_LIST",
        provider_service="crm",
        provider_path="/internal/exports/v1/CUSTOMER_LIST/batches",
        required_permission="platform:customer:export",
        app_scope=AppCode.PLATFORM,
    )
    fields.update(overrides)
    return ExportDefinition(**fields)  # type: ignore[arg-type]


EXPORTER = Principal(7, 0, AppCode.PLATFORM, frozenset({"platform:customer:export"}))


@pytest.mark.parametrize(
    ("definition", "principal", "expected"),
    [
        (_definition(), EXPORTER, None),
        (
            None,
            EXPORTER,
            ParameterError("exportType", "unknown export type 'CUSTOMER_LIST'"),
        ),
        (
            _definition(enabled=False),
            EXPORTER,
            Refused(Refusal.DISABLED, "export type CUSTOMER_LIST is disabled"),
        ),
        (
            _definition(app_scope=AppCode.MERCHANT),
            EXPORTER,
            Refused(
                Refusal.OUT_OF_SCOPE, "export type CUSTOMER_LIST is not available to app PLATFORM"
            ),
        ),
        (
            _definition(),
            Principal(7, 0, AppCode.PLATFORM, ALL),  # download:all does not grant create
            Refused(Refusal.MISSING_PERMISSION, "missing permission platform:customer:export"),
        ),
        (  # the checks run in order: disabled before scope before permission
            _definition(enabled=False, app_scope=AppCode.MERCHANT),
            Principal(7, 0, AppCode.PLATFORM),
            Refused(Refusal.DISABLED, "export type CUSTOMER_LIST is disabled"),
        ),
    ],
)
def test_authorise(
    definition: ExportDefinition | None, principal: Principal, expected: RequestError | None
) -> None:
    if expected is None:
        assert authorise("CUSTOMER_LIST", definition, principal) is definition
        return
    with pytest.raises(RequestError) as caught:
        authorise("CUSTOMER_LIST", definition, principal)
    assert_refusal(caught.value, expected)


@pytest.mark.parametrize(
    ("definition", "expected"),
    [
        (_definition(), None),
        # the caller's scope and permissions are not its business (an operator has none)
        (_definition(app_scope=AppCode.MERCHANT), None),
        (None, ParameterError("exportType", "unknown export type 'CUSTOMER_LIST'")),
        (
            _definition(enabled=False),
            Refused(Refusal.DISABLED, "export type CUSTOMER_LIST is disabled"),
        ),
    ],
)
def test_check_requestable(
    definition: ExportDefinition | None, expected: RequestError | None
) -> None:
    if expected is None:
        assert check_requestable("CUSTOMER_LIST", definition) is definition
        return
    with pytest.raises(RequestError) as caught:
        check_requestable("CUSTOMER_LIST", definition)
    assert_refusal(caught.value, expected)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ParameterError("body", "x"), "400"),
        (Refused(Refusal.NOT_FOUND, "x"), "404"),
        (Refused(Refusal.DISABLED, "x"), "403"),
        (Refused(Refusal.OUT_OF_SCOPE, "x"), "403"),
        (Refused(Refusal.MISSING_PERMISSION, "x"), "403"),
        (Refused(Refusal.FILE_EXPIRED, "x"), "410"),
        (Refused(Refusal.NOT_DOWNLOADABLE, "x"), "409"),
        (Refused(Refusal.NOT_RETRYABLE, "x"), "409"),
        (Refused(Refusal.NOT_CANCELLABLE, "x"), "409"),
    ],
)
def test_envelope_codes(error: RequestError, code: str) -> None:
    assert envelope_code(error) == code


def assert_refusal(got: RequestError, expected: RequestError) -> None:
    """Same class, message, field or reason, and envelope code."""
    assert type(got) is type(expected)
    assert got.message == expected.message
    assert getattr(got, "field", None) == getattr(expected, "field", None)
    assert getattr(got, "reason", None) == getattr(expected, "reason", None)
    assert envelope_code(got) == envelope_code(expected)


@pytest.mark.parametrize(
    ("raw", "task_id"),
    [("123", 123), ("EXP123", 123), ("exp123", 123), ("Exp9", 9)],
)
def test_a_task_is_named_by_its_id_or_its_number(raw: str, task_id: int) -> None:
    """Issue 26 item 9: the operator's commands take the EXP… number the page shows."""
    assert parse_task_reference(raw) == task_id
    assert task_number(task_id) == f"EXP{task_id}"


@pytest.mark.parametrize(
    "raw", ["EXP", "EXP-1", "EXP 1", "EXPORT1", "X123", "EXP٥", "EXP0123", "007"]
)
def test_anything_else_after_the_prefix_is_not_a_task(raw: str) -> None:
    with pytest.raises(ParameterError):
        parse_task_reference(raw)
