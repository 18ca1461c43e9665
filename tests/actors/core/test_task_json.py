"""The task JSON shared by the API and the operator's commands (``actors/core/task_json.py``):
``lastError`` only while an automatic retry waits, the warnings read from the stored JSON."""

from __future__ import annotations

from actors.core.models import TaskStatus
from actors.core.task_json import last_error, task_json
from tests.helpers import task_value


def test_last_error_only_while_a_retry_waits() -> None:
    cases = [
        (TaskStatus.PENDING, 0, None, None),  # never ran
        (TaskStatus.PENDING, 1, "timeout", "timeout"),  # retry waits
        (TaskStatus.RUNNING, 1, "timeout", None),  # the retry runs
        (TaskStatus.FAILED, 3, "timeout", None),  # failureMessage says it
        (TaskStatus.CANCELLED, 1, "timeout", None),
    ]
    for status, attempts, message, expected in cases:
        task = task_value(status=status, attempt_count=attempts, failure_message=message)
        assert last_error(task) == expected, (status, attempts)


def test_warnings_read_from_the_stored_json() -> None:
    assert task_json(task_value())["warnings"] == []
    stored = task_value(
        warnings_json='[{"kind": "truncated-cells", "detail": "1 cells truncated to 32767'
        ' characters"}, {"kind": "from-the-future", "detail": "x"}, {"kind": "note"}, 7]'
    )
    assert task_json(stored)["warnings"] == ["1 cells truncated to 32767 characters", "x"]
    assert task_json(stored)["dataWarnings"] == [
        {"kind": "truncated-cells", "detail": "1 cells truncated to 32767 characters"},
        {"kind": "note", "detail": "x"},  # a kind this version does not know
    ]
    # stored before kinds were kept: each sentence is a note, nothing is parsed from it
    before = task_value(warnings_json='["1 cells truncated to 32767 characters"]')
    assert task_json(before)["dataWarnings"] == [
        {"kind": "note", "detail": "1 cells truncated to 32767 characters"}
    ]
    assert task_json(task_value(warnings_json="not json"))["warnings"] == []
    assert task_json(task_value(warnings_json='{"a": 1}'))["warnings"] == []
