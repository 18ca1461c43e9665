"""The rules of a definition's ``parameters`` (§10.3): the hints a form is built from and
the create checks a request's parameters against (``actors.core.declared_parameters``):
each one's name, type and whether it is required, its label and description, the only
values it takes (with their labels) and the bounds of a number.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from actors.core.definitions import ChoiceValue, ParameterHint
from actors.core.errors import RegistryError
from actors.core.registry_fields import (
    MAX_DESCRIPTION_CHARS,
    MAX_DISPLAY_NAME_CHARS,
    local_text,
    refuse_unknown_keys,
    required_str,
    translations,
    type_name,
)

# A parameter name is a JSON key a form and a Provider can both spell plainly.
_PARAMETER_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")

#: The ``type`` a parameter hint may name: JSON's scalar types plus ISO-8601 dates and
#: times (sent as strings), so a form can pick a fitting input.
PARAMETER_TYPES: tuple[str, ...] = ("string", "integer", "number", "boolean", "date", "datetime")
#: Most parameter hints of one definition.
MAX_PARAMETERS = 30
_PARAMETER_KEYS = frozenset(
    {"name", "type", "required", "description", "label", "values", "minimum", "maximum"}
)
#: Most ``values`` of one parameter.
MAX_VALUES = 50


def parameter_hints(raw: Any, path: str) -> tuple[ParameterHint, ...]:
    """The ``parameters`` hints: a list of ``{name, type, required, description}``
    mappings with distinct names; absent or null is no hints."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise RegistryError(path, f"must be a list, got {type_name(raw)}")
    if len(raw) > MAX_PARAMETERS:
        raise RegistryError(path, f"must have at most {MAX_PARAMETERS} entries, got {len(raw)}")
    hints: list[ParameterHint] = []
    for index, entry in enumerate(raw):
        at = f"{path}[{index}]"
        if not isinstance(entry, Mapping):
            raise RegistryError(at, f"must be a mapping, got {type_name(entry)}")
        refuse_unknown_keys(entry, at, _PARAMETER_KEYS)
        name = required_str(entry, at, "name")
        if not _PARAMETER_NAME_RE.fullmatch(name):
            raise RegistryError(
                f"{at}.name", f"name {name!r} must match ^[A-Za-z][A-Za-z0-9_]{{0,63}}$"
            )
        if any(h.name == name for h in hints):
            raise RegistryError(f"{at}.name", f"name {name!r} is listed twice")
        type_ = required_str(entry, at, "type")
        if type_ not in PARAMETER_TYPES:
            raise RegistryError(
                f"{at}.type", f"type {type_!r} must be one of {', '.join(PARAMETER_TYPES)}"
            )
        required = entry.get("required", False)
        if not isinstance(required, bool):
            raise RegistryError(
                f"{at}.required", f"must be a boolean (true/false), got {required!r}"
            )
        label, labels = local_text(entry, at, "label", MAX_DISPLAY_NAME_CHARS)
        description, descriptions = local_text(entry, at, "description", MAX_DESCRIPTION_CHARS)
        minimum, maximum = _bound(entry, at, "minimum", type_), _bound(entry, at, "maximum", type_)
        if minimum is not None and maximum is not None and minimum > maximum:
            raise RegistryError(f"{at}.minimum", f"{minimum} is above the maximum {maximum}")
        hints.append(
            ParameterHint(
                name,
                type_,
                required,
                description or "",
                label=label,
                values=_values(entry.get("values"), f"{at}.values", type_),
                minimum=minimum,
                maximum=maximum,
                translations=translations(labels, descriptions),
            )
        )
    return tuple(hints)


def _values(raw: Any, path: str, type_: str) -> tuple[ChoiceValue, ...]:
    """A parameter's ``values``: strings, or ``{value, label}`` mappings whose label may be
    given per language; distinct, at most :data:`MAX_VALUES`."""
    if raw is None:
        return ()
    if type_ != "string":
        raise RegistryError(path, f"is allowed for string parameters only, not {type_}")
    if not isinstance(raw, list) or not raw:
        raise RegistryError(path, f"must be a non-empty list, got {type_name(raw)}")
    if len(raw) > MAX_VALUES:
        raise RegistryError(path, f"must have at most {MAX_VALUES} entries, got {len(raw)}")
    choices: list[ChoiceValue] = []
    for index, entry in enumerate(raw):
        at = f"{path}[{index}]"
        if isinstance(entry, str):
            entry = {"value": entry}
        if not isinstance(entry, Mapping) or set(entry) - {"value", "label"}:
            raise RegistryError(at, "must be a string or a mapping of value and label")
        value = required_str(entry, at, "value")
        if any(c.value == value for c in choices):
            raise RegistryError(f"{at}.value", f"value {value!r} is listed twice")
        label, labels = local_text(entry, at, "label", MAX_DISPLAY_NAME_CHARS)
        choices.append(ChoiceValue(value, label or value, tuple(sorted(labels.items()))))
    return tuple(choices)


def _bound(raw: Mapping[Any, Any], path: str, key: str, type_: str) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if type_ not in ("integer", "number"):
        raise RegistryError(f"{path}.{key}", f"is allowed for numbers only, not {type_}")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RegistryError(f"{path}.{key}", f"must be a number, got {type_name(value)}")
    return float(value)
