"""Table tests of the create request and list query rules (actors/core/limits.py): each
refusal is a ParameterError naming the field, answered with envelope code 400."""

from __future__ import annotations

from typing import Any

import pytest

from actors.core.errors import ParameterError
from actors.core.limits import (
    LIST_TOTAL_CAP,
    MAX_TASK_NAME,
    CreateRequest,
    create_request,
    list_total,
)
from web.errors import envelope_code


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"exportType": "T"}, CreateRequest("T", "XLSX", "T", None)),
        (
            {"exportType": "T", "format": "XLSX", "taskName": "mine", "parameters": {"a": 1}},
            CreateRequest("T", "XLSX", "mine", {"a": 1}),
        ),
        ({"exportType": "T", "taskName": ""}, CreateRequest("T", "XLSX", "T", None)),
        ({"exportType": "T", "taskName": ""}, CreateRequest("T", "XLSX", "T", None)),
        # Issue 24: a present value is taken for what it says, never as "the default"
        *[
            (
                {"exportType": "T", "format": bad},
                ParameterError("format", "format must be XLSX (the only supported format)"),
            )
            for bad in ("", None, {}, [], 0, False, "xlsx")
        ],
        *[
            (
                {"exportType": "T", "taskName": bad},
                ParameterError("taskName", "taskName must be a string of at most 128 characters"),
            )
            for bad in (None, {}, [], 0, False)
        ],
        (
            {"exportType": "T", "taskName": "x" * MAX_TASK_NAME},
            CreateRequest("T", "XLSX", "x" * MAX_TASK_NAME, None),
        ),
        ({}, ParameterError("exportType", "exportType is required")),
        # an unknown key is refused, not ignored: a misspelt "parameters" would export all
        (
            {"exportType": "T", "paramters": {"status": "ACTIVE"}},
            ParameterError(
                "paramters",
                "unknown field paramters: a create takes exportType, format, taskName, parameters",
            ),
        ),
        (
            {"exportType": "T", "evil\r\nX": 1, "zz": 2},
            ParameterError(
                "evil\\r\\nX",
                "unknown field evil\\r\\nX: a create takes exportType, format, taskName, "
                "parameters",
            ),
        ),
        ({"exportType": ""}, ParameterError("exportType", "exportType must not be empty")),
        (
            {"exportType": 5},
            ParameterError("exportType", "exportType must be a string (an export type's key)"),
        ),
        (
            {"exportType": "T", "format": "CSV"},
            ParameterError("format", "format must be XLSX (the only supported format)"),
        ),
        (
            {"exportType": "T", "taskName": "x" * (MAX_TASK_NAME + 1)},
            ParameterError("taskName", "taskName must be a string of at most 128 characters"),
        ),
        (
            {"exportType": "T", "taskName": ["x"]},
            ParameterError("taskName", "taskName must be a string of at most 128 characters"),
        ),
    ],
)
def test_create_request(body: dict[str, Any], expected: CreateRequest | ParameterError) -> None:
    if isinstance(expected, CreateRequest):
        assert create_request(body) == expected
        return
    with pytest.raises(ParameterError) as caught:
        create_request(body)
    assert (caught.value.field, caught.value.message) == (expected.field, expected.message)
    assert envelope_code(caught.value) == "400"


@pytest.mark.parametrize(
    ("counted", "shown", "capped"),
    [
        (0, 0, False),
        (1, 1, False),
        (LIST_TOTAL_CAP, LIST_TOTAL_CAP, False),  # exactly the cap: still exact
        (LIST_TOTAL_CAP + 1, LIST_TOTAL_CAP, True),  # the store counts one past the cap
    ],
)
def test_list_total(counted: int, shown: int, capped: bool) -> None:
    assert list_total(counted) == (shown, capped)
