"""A valid registry document and a parse-error catcher, shared by the registry rule tests."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from actors.core.errors import RegistryError
from actors.core.registry import parse_registry

ALLOWED = frozenset({"demo-service", "iam-service"})

FULL_DEFINITION: dict[str, Any] = {
    "provider-service": "demo-service",
    "provider-path": "/internal/exports/v1/CUSTOMER_LIST/batches",
    "required-permission": "platform:customer:export",
    "app-scope": "PLATFORM",
    "enabled": True,
    "max-rows": 200000,
    "max-attempts": 3,
    "batch-size": 500,
}

KEY = "definitions.CUSTOMER_LIST"


def doc(**overrides: Any) -> dict[str, Any]:
    """A valid one-definition document; ``overrides`` use python names (max_rows=…).

    A value of ``...`` removes the key.
    """
    definition = copy.deepcopy(FULL_DEFINITION)
    for name, value in overrides.items():
        key = name.replace("_", "-")
        if value is ...:
            definition.pop(key, None)
        else:
            definition[key] = value
    return {"definitions": {"CUSTOMER_LIST": definition}}


def parse_error(data: Any, allowed: frozenset[str] = ALLOWED) -> RegistryError:
    with pytest.raises(RegistryError) as info:
        parse_registry(data, allowed)
    return info.value
