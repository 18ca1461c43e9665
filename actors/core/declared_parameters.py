"""The create request's parameters against the ones its export type declares.

A registry entry may declare the parameters its Provider takes (``parameters``: name, type,
required — ``actors/defaults/registry.yaml`` documents the keys). The same list builds the
page's form and ``GET /export-types``; this module makes it a promise too: a create whose
declared parameter is missing or of the wrong JSON type is refused at once with a 400
naming it, instead of becoming a task that holds an active place and spends an attempt
before the Provider refuses it.

What is not declared is not judged: an entry without ``parameters`` takes any object, and
keys outside the list pass through (the Provider checks them, and the values of declared
ones, e.g. a range).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from actors.core.definitions import ParameterHint
from actors.core.errors import ParameterError

#: What each declared type accepts, in words for the error message.
_EXPECTED = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "date": "a date as YYYY-MM-DD",
    "datetime": "an ISO 8601 date-time (e.g. 2026-12-01T08:00:00Z)",
}


def check_declared_parameters(
    hints: Iterable[ParameterHint], parameters: Mapping[str, Any]
) -> None:
    """Refuse ``parameters`` that break what the export type declares.

    Args:
        hints: the registry entry's declared parameters (empty: nothing is checked).
        parameters: the create request's ``parameters`` object, already within the
            general limits (``actors.core.limits.normalise_parameters``).

    Raises:
        ParameterError: field ``parameters.<name>``: a required parameter is missing (or
            null), a declared one has a value of another type than declared, outside its
            ``values`` or outside its ``minimum``..``maximum``. A null optional parameter
            counts as absent.
    """
    for hint in hints:
        value = parameters.get(hint.name)
        field = f"parameters.{hint.name}"
        if value is None:
            if hint.required:
                raise ParameterError(field, f"{field} is required by this export type")
            continue
        if not _matches(hint.type, value):
            raise ParameterError(
                field, f"{field} must be {_EXPECTED.get(hint.type, hint.type)}, not {_kind(value)}"
            )
        if hint.values and value not in {choice.value for choice in hint.values}:
            allowed = ", ".join(repr(choice.value) for choice in hint.values)
            raise ParameterError(field, f"{field} must be one of {allowed}")
        if isinstance(value, int | float) and not isinstance(value, bool):
            _check_bounds(field, value, hint.minimum, hint.maximum)


def _shown(bound: float) -> str:
    return f"{int(bound):,}" if bound == int(bound) else f"{bound:,g}"


def _check_bounds(field: str, value: float, low: float | None, high: float | None) -> None:
    if (low is None or value >= low) and (high is None or value <= high):
        return
    if high is None:
        rule = f"at least {_shown(low or 0)}"
    elif low is None:
        rule = f"at most {_shown(high)}"
    else:
        rule = f"between {_shown(low)} and {_shown(high)}"
    raise ParameterError(field, f"{field} must be {rule}, not {value}")


def _matches(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":  # bool is an int subclass in Python, never in JSON
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "date":
        return isinstance(value, str) and _parses(dt.date.fromisoformat, value, 10)
    if kind == "datetime":
        return isinstance(value, str) and _parses(dt.datetime.fromisoformat, value, 35)
    return True  # a type the registry validation would have refused: not ours to judge


def _parses(parse: Any, value: str, longest: int) -> bool:
    if not value.isascii() or len(value) > longest:
        return False
    try:
        parse(value)
    except ValueError:
        return False
    return True


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string" if len(value) <= 40 else "a longer string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


__all__ = ["check_declared_parameters"]
