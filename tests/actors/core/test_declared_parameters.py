"""The create's check of declared parameters (actors/core/declared_parameters.py), by table."""

from __future__ import annotations

from typing import Any

import pytest

from actors.core.declared_parameters import check_declared_parameters
from actors.core.definitions import ChoiceValue, ParameterHint
from actors.core.errors import ParameterError

HINTS = (
    ParameterHint("status", "string"),
    ParameterHint("rowCount", "integer"),
    ParameterHint("ratio", "number"),
    ParameterHint("active", "boolean"),
    ParameterHint("from", "date", required=True),
    ParameterHint("at", "datetime"),
)
VALID: dict[str, Any] = {"from": "2026-12-01"}


@pytest.mark.parametrize(
    "parameters",
    [
        VALID,
        {**VALID, "status": "ACTIVE", "rowCount": 10, "ratio": 0.5, "active": False},
        {**VALID, "ratio": 3, "at": "2026-12-01T08:00:00+00:00"},
        {**VALID, "at": "2026-12-01T08:00:00Z"},
        {**VALID, "status": None, "rowCount": None},  # null optional = absent
        {**VALID, "undeclared": [1, {"x": 2}]},  # keys not declared pass through
    ],
)
def test_what_the_type_declares_passes(parameters: dict[str, Any]) -> None:
    check_declared_parameters(HINTS, parameters)


@pytest.mark.parametrize(
    ("parameters", "field", "says"),
    [
        ({}, "parameters.from", "parameters.from is required by this export type"),
        ({"from": None}, "parameters.from", "is required"),
        ({**VALID, "rowCount": "abc"}, "parameters.rowCount", "must be an integer, not a string"),
        ({**VALID, "rowCount": 1.5}, "parameters.rowCount", "must be an integer, not a number"),
        ({**VALID, "rowCount": True}, "parameters.rowCount", "not a boolean"),
        ({**VALID, "ratio": "1"}, "parameters.ratio", "must be a number"),
        ({**VALID, "ratio": False}, "parameters.ratio", "must be a number, not a boolean"),
        ({**VALID, "active": 1}, "parameters.active", "must be true or false"),
        ({**VALID, "status": 5}, "parameters.status", "must be a string, not a number"),
        ({**VALID, "status": ["A"]}, "parameters.status", "not a list"),
        ({"from": "2026-13-01"}, "parameters.from", "a date as YYYY-MM-DD"),
        ({"from": "2026-12-01T00:00:00"}, "parameters.from", "a date"),
        ({"from": "２０２６-12-01"}, "parameters.from", "a date"),  # fullwidth digits
        ({**VALID, "at": "yesterday"}, "parameters.at", "ISO 8601 date-time"),
        ({**VALID, "at": "2026-12-01T08:00:00" + "0" * 100}, "parameters.at", "date-time"),
    ],
)
def test_a_declared_parameter_broken_is_named(
    parameters: dict[str, Any], field: str, says: str
) -> None:
    with pytest.raises(ParameterError) as raised:
        check_declared_parameters(HINTS, parameters)
    assert raised.value.field == field
    assert says in str(raised.value)


def test_a_type_without_declarations_takes_any_object() -> None:
    check_declared_parameters((), {"rowCount": "abc", "anything": None})


STATUS = ParameterHint("status", "string", values=(ChoiceValue("ACTIVE", "Active"),))
ROWS = ParameterHint("rowCount", "integer", minimum=1, maximum=200_000)


@pytest.mark.parametrize(
    ("parameters", "says"),
    [
        ({"status": "active"}, "parameters.status must be one of 'ACTIVE'"),
        ({"rowCount": 0}, "parameters.rowCount must be between 1 and 200,000, not 0"),
        ({"rowCount": 300_000}, "between 1 and 200,000, not 300000"),
    ],
)
def test_values_and_bounds_are_promises_too(parameters: dict[str, Any], says: str) -> None:
    with pytest.raises(ParameterError) as caught:
        check_declared_parameters((STATUS, ROWS), parameters)
    assert says in caught.value.message


def test_values_and_bounds_pass_what_they_allow() -> None:
    check_declared_parameters((STATUS, ROWS), {"status": "ACTIVE", "rowCount": 200_000})
    check_declared_parameters((ParameterHint("r", "number", maximum=1.5),), {"r": 1.5})
