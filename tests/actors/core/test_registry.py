"""Registry validation rules (§10.3), one test per rule, on already-loaded YAML documents.

§19.1 bullet covered here: "注册表：白名单外服务名启动失败、路径格式非法启动失败、路径与 key
不一致启动失败" (the hot-reload half is in tests/actors/service/test_registry_source.py).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from actors.core.errors import RegistryError
from actors.core.models import AppCode, ExportDefinition, ParameterHint, Registry
from actors.core.registry import parse_registry, registry_fingerprint
from actors.service.registry_source import default_registry_path

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


# --- happy path and defaults -------------------------------------------------------------


def test_valid_document_builds_the_definition() -> None:
    registry = parse_registry(doc(), ALLOWED)

    assert isinstance(registry, Registry)
    assert registry.get("CUSTOMER_LIST") == ExportDefinition(
        export_type="CUSTOMER_LIST",
        provider_service="demo-service",
        provider_path="/internal/exports/v1/CUSTOMER_LIST/batches",
        required_permission="platform:customer:export",
        app_scope=AppCode.PLATFORM,
        enabled=True,
        max_rows=200000,
        max_attempts=3,
        batch_size=500,
    )
    assert registry.get("ORDER_LIST") is None


def test_several_definitions_keep_document_order() -> None:
    data = doc()
    data["definitions"]["ORDER_LIST"] = {
        **FULL_DEFINITION,
        "provider-service": "iam-service",
        "provider-path": "/internal/exports/v1/ORDER_LIST/batches",
        "app-scope": "MERCHANT",
        "required-permission": "merchant:order:export",
    }

    registry = parse_registry(data, ALLOWED)

    assert list(registry.definitions) == ["CUSTOMER_LIST", "ORDER_LIST"]
    assert registry.definitions["ORDER_LIST"].app_scope is AppCode.MERCHANT


def test_optional_keys_take_the_documented_defaults() -> None:
    registry = parse_registry(
        doc(enabled=..., max_rows=..., max_attempts=..., batch_size=...), ALLOWED
    )

    definition = registry.definitions["CUSTOMER_LIST"]
    assert definition.enabled is True
    assert definition.max_rows == 200_000
    assert definition.batch_size == 500
    assert definition.max_attempts == 3


def test_empty_definitions_give_an_empty_registry() -> None:
    registry = parse_registry({"definitions": {}}, ALLOWED)

    assert dict(registry.definitions) == {}


def test_registry_definitions_are_read_only() -> None:
    registry = parse_registry(doc(), ALLOWED)

    with pytest.raises(TypeError):
        registry.definitions["X"] = registry.definitions["CUSTOMER_LIST"]  # type: ignore[index]


def test_shipped_default_registry_parses_with_demo_service() -> None:
    data = yaml.safe_load(default_registry_path().read_text(encoding="utf-8"))

    registry = parse_registry(data, {"demo-service"})

    assert registry.get("CUSTOMER_LIST") == ExportDefinition(
        export_type="CUSTOMER_LIST",
        provider_service="demo-service",
        provider_path="/internal/exports/v1/CUSTOMER_LIST/batches",
        required_permission="platform:customer:export",
        app_scope=AppCode.PLATFORM,
        enabled=True,
        max_rows=200000,
        max_attempts=3,
        batch_size=500,  # the design's batch-size (docs/design-rules.md)
        display_name="Customer list",
        description=("The tenant's customers (demo data), optionally filtered by status or name."),
        parameters=(
            ParameterHint("status", "string", False, "ACTIVE or INACTIVE; empty for both"),
            ParameterHint(
                "keyword", "string", False, "Part of the customer name, at most 256 characters"
            ),
            ParameterHint(
                "rowCount", "integer", False, "Size of the demo table, 1 to 1,000,000 rows"
            ),
        ),
    )


# --- document shape ----------------------------------------------------------------------


@pytest.mark.parametrize("data", [None, [], "definitions", 42])
def test_document_that_is_not_a_mapping_is_rejected(data: Any) -> None:
    err = parse_error(data)

    assert err.key == "<document>"
    assert "mapping" in err.rule


def test_missing_definitions_is_rejected() -> None:
    err = parse_error({})

    assert err.key == "definitions"
    assert "required" in err.rule


@pytest.mark.parametrize("definitions", [None, [], ["CUSTOMER_LIST"], "CUSTOMER_LIST"])
def test_definitions_that_is_not_a_mapping_is_rejected(definitions: Any) -> None:
    err = parse_error({"definitions": definitions})

    assert err.key == "definitions"
    assert "mapping" in err.rule


def test_unknown_top_level_key_is_rejected() -> None:
    err = parse_error({**doc(), "definition": {}})

    assert err.key == "definition"
    assert "unknown top-level key" in err.rule


def test_definition_that_is_not_a_mapping_is_rejected() -> None:
    err = parse_error({"definitions": {"CUSTOMER_LIST": "demo-service"}})

    assert err.key == KEY
    assert "mapping" in err.rule


# --- export type key: non-empty, ^[A-Z0-9_]+$ --------------------------------------------


@pytest.mark.parametrize(
    "export_type",
    ["", "customer_list", "CUSTOMER-LIST", "CUSTOMER LIST", "CUSTOMER_LIST\n", "客户"],
)
def test_export_type_key_must_be_non_empty_upper_snake(export_type: str) -> None:
    path = f"/internal/exports/v1/{export_type}/batches"
    err = parse_error({"definitions": {export_type: {**FULL_DEFINITION, "provider-path": path}}})

    assert err.key == f"definitions.{export_type}"
    assert ("empty" in err.rule) if not export_type else ("[A-Z0-9_]" in err.rule)


@pytest.mark.parametrize("export_type", [123, None, True])
def test_export_type_key_must_be_a_string(export_type: Any) -> None:
    err = parse_error({"definitions": {export_type: dict(FULL_DEFINITION)}})

    assert err.key == f"definitions.{export_type}"
    assert "must be a string" in err.rule


# --- unknown keys --------------------------------------------------------------------------


@pytest.mark.parametrize("typo", ["max_rows", "batchSize", "provider_service", "timeout"])
def test_unknown_definition_key_is_rejected(typo: str) -> None:
    data = doc()
    data["definitions"]["CUSTOMER_LIST"][typo] = 1000

    err = parse_error(data)

    assert err.key == f"{KEY}.{typo}"
    assert "unknown key" in err.rule


# --- required string keys ------------------------------------------------------------------


@pytest.mark.parametrize(
    "key", ["provider-service", "provider-path", "required-permission", "app-scope"]
)
@pytest.mark.parametrize("value", [..., None])
def test_required_key_missing_is_rejected(key: str, value: Any) -> None:
    data = doc(**{key.replace("-", "_"): value})

    err = parse_error(data)

    assert err.key == f"{KEY}.{key}"
    assert "required" in err.rule


@pytest.mark.parametrize(
    "key", ["provider-service", "provider-path", "required-permission", "app-scope"]
)
def test_required_key_that_is_not_a_string_is_rejected(key: str) -> None:
    err = parse_error(doc(**{key.replace("-", "_"): 42}))

    assert err.key == f"{KEY}.{key}"
    assert "must be a string" in err.rule


# --- provider-service allowlist (SSRF guard) ----------------------------------------------


@pytest.mark.parametrize(
    "service", ["evil-service", "http://169.254.169.254", "DEMO-SERVICE", "demo-service "]
)
def test_provider_service_outside_allowlist_fails_startup(service: str) -> None:
    """§19.1 注册表：白名单外服务名启动失败."""
    err = parse_error(doc(provider_service=service))

    assert err.key == f"{KEY}.provider-service"
    assert "allowlist" in err.rule
    assert repr(service) in err.rule


def test_empty_allowlist_rejects_every_provider_service() -> None:
    err = parse_error(doc(), allowed=frozenset())

    assert err.key == f"{KEY}.provider-service"
    assert "allowlist" in err.rule


# --- provider-path format and consistency with the key -------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "",
        "/internal/exports/v1/CUSTOMER_LIST",
        "/internal/exports/v2/CUSTOMER_LIST/batches",
        "/internal/exports/v1/customer_list/batches",
        "internal/exports/v1/CUSTOMER_LIST/batches",
        "/internal/exports/v1/CUSTOMER_LIST/batches/",
        "/internal/exports/v1/CUSTOMER_LIST/batches\n",
        "/internal/exports/v1/../admin/batches",
        "http://evil/internal/exports/v1/CUSTOMER_LIST/batches",
        "/internal/exports/v1/CUSTOMER_LIST/batches?x=1",
    ],
)
def test_provider_path_with_illegal_format_fails_startup(path: str) -> None:
    """§19.1 注册表：路径格式非法启动失败."""
    err = parse_error(doc(provider_path=path))

    assert err.key == f"{KEY}.provider-path"
    assert ("empty" in err.rule) if not path else ("must match" in err.rule)


def test_provider_path_type_differing_from_key_fails_startup() -> None:
    """§19.1 注册表：路径与 key 不一致启动失败."""
    err = parse_error(doc(provider_path="/internal/exports/v1/ORDER_LIST/batches"))

    assert err.key == f"{KEY}.provider-path"
    assert "must equal the definition key" in err.rule
    assert "'ORDER_LIST'" in err.rule


# --- required-permission -------------------------------------------------------------------


@pytest.mark.parametrize(
    "permission",
    [
        "platform:customer",
        "Platform:customer:export",
        "platform:customer:export:all",
        "platform::export",
        "platform:customer_list:export",
        "platform:customer:export\n",
        " platform:customer:export",
    ],
)
def test_required_permission_must_match_the_code_format(permission: str) -> None:
    err = parse_error(doc(required_permission=permission))

    assert err.key == f"{KEY}.required-permission"
    assert "must match" in err.rule


@pytest.mark.parametrize("permission", ["", "   "])
def test_required_permission_must_not_be_empty(permission: str) -> None:
    err = parse_error(doc(required_permission=permission))

    assert err.key == f"{KEY}.required-permission"
    assert "empty" in err.rule


def test_required_permission_with_hyphens_is_accepted() -> None:
    registry = parse_registry(
        doc(required_permission="platform:customer-list:bulk-export"), ALLOWED
    )

    assert registry.definitions["CUSTOMER_LIST"].required_permission == (
        "platform:customer-list:bulk-export"
    )


# --- app-scope -------------------------------------------------------------------------------


@pytest.mark.parametrize("scope", ["platform", "ADMIN", "PLATFORM,MERCHANT"])
def test_app_scope_outside_platform_merchant_is_rejected(scope: str) -> None:
    err = parse_error(doc(app_scope=scope))

    assert err.key == f"{KEY}.app-scope"
    assert "PLATFORM, MERCHANT" in err.rule
    assert repr(scope) in err.rule


# --- enabled -----------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["true", 1, 0, None])
def test_enabled_must_be_a_boolean(value: Any) -> None:
    err = parse_error(doc(enabled=value))

    assert err.key == f"{KEY}.enabled"
    assert "boolean" in err.rule


def test_enabled_false_is_kept() -> None:
    registry = parse_registry(doc(enabled=False), ALLOWED)

    assert registry.definitions["CUSTOMER_LIST"].enabled is False


# --- integer ranges ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "low", "high"),
    [("max-rows", 1, 500_000), ("batch-size", 50, 1000), ("max-attempts", 1, 5)],
)
def test_integer_keys_accept_their_bounds(key: str, low: int, high: int) -> None:
    attr = key.replace("-", "_")
    for value in (low, high):
        registry = parse_registry(doc(**{attr: value}), ALLOWED)

        assert getattr(registry.definitions["CUSTOMER_LIST"], attr) == value


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("max-rows", 0),
        ("max-rows", 500_001),
        ("max-rows", -1),
        ("batch-size", 49),
        ("batch-size", 1001),
        ("max-attempts", 0),
        ("max-attempts", 6),
    ],
)
def test_integer_key_out_of_range_is_rejected(key: str, value: int) -> None:
    err = parse_error(doc(**{key.replace("-", "_"): value}))

    assert err.key == f"{KEY}.{key}"
    assert "must be an integer in [" in err.rule
    assert str(value) in err.rule


@pytest.mark.parametrize("key", ["max-rows", "batch-size", "max-attempts"])
@pytest.mark.parametrize("value", [True, False, "100", 100.0, None])
def test_integer_key_of_another_type_is_rejected(key: str, value: Any) -> None:
    """Bools are ints in Python and quoted YAML numbers are strings: neither may coerce."""
    err = parse_error(doc(**{key.replace("-", "_"): value}))

    assert err.key == f"{KEY}.{key}"
    assert "must be an integer" in err.rule


# --- fingerprint ---------------------------------------------------------------------------


def test_fingerprint_is_stable_and_ignores_key_order() -> None:
    forward = doc()
    forward["definitions"]["ORDER_LIST"] = {
        **FULL_DEFINITION,
        "provider-path": "/internal/exports/v1/ORDER_LIST/batches",
    }
    backward = {"definitions": dict(reversed(list(forward["definitions"].items())))}

    first = registry_fingerprint(parse_registry(forward, ALLOWED))

    assert first == registry_fingerprint(parse_registry(backward, ALLOWED))
    assert len(first) == 64 and all(c in "0123456789abcdef" for c in first)


def test_fingerprint_changes_with_any_value() -> None:
    base = registry_fingerprint(parse_registry(doc(), ALLOWED))

    assert registry_fingerprint(parse_registry(doc(batch_size=501), ALLOWED)) != base
    assert registry_fingerprint(parse_registry(doc(enabled=False), ALLOWED)) != base
    assert registry_fingerprint(Registry()) != base


# --- display name, description and parameter hints ---------------------------------------


def test_display_keys_are_optional_and_default_to_nothing() -> None:
    definition = parse_registry(doc(), ALLOWED).definitions["CUSTOMER_LIST"]

    assert (definition.display_name, definition.description, definition.parameters) == (
        None,
        "",
        (),
    )


def test_display_keys_build_hints() -> None:
    data = doc(
        display_name="  Customers  ",
        description="All of them.",
        parameters=[
            {"name": "from", "type": "date", "required": True, "description": "first day"},
            {"name": "flag", "type": "boolean"},
        ],
    )
    definition = parse_registry(data, ALLOWED).definitions["CUSTOMER_LIST"]

    assert definition.display_name == "Customers"
    assert definition.description == "All of them."
    assert definition.parameters == (
        ParameterHint("from", "date", True, "first day"),
        ParameterHint("flag", "boolean", False, ""),
    )


@pytest.mark.parametrize(
    ("overrides", "key", "rule"),
    [
        ({"display_name": 5}, "display-name", "must be a string"),
        ({"display_name": "   "}, "display-name", "must not be empty"),
        ({"display_name": "x" * 101}, "display-name", "at most 100 characters"),
        ({"display_name": "two\nlines"}, "display-name", "single line"),
        ({"description": ["a"]}, "description", "must be a string"),
        ({"description": "x" * 501}, "description", "at most 500 characters"),
        ({"parameters": {"name": "a"}}, "parameters", "must be a list"),
        ({"parameters": "status"}, "parameters", "must be a list"),
        ({"parameters": [{"name": "a", "type": "string"}] * 31}, "parameters", "at most 30"),
        ({"parameters": ["status"]}, "parameters[0]", "must be a mapping"),
        ({"parameters": [{"type": "string"}]}, "parameters[0].name", "is required"),
        ({"parameters": [{"name": "a"}]}, "parameters[0].type", "is required"),
        ({"parameters": [{"name": 1, "type": "string"}]}, "parameters[0].name", "a string"),
        ({"parameters": [{"name": "1a", "type": "string"}]}, "parameters[0].name", "must match"),
        ({"parameters": [{"name": "a b", "type": "string"}]}, "parameters[0].name", "match"),
        ({"parameters": [{"name": "a", "type": "text"}]}, "parameters[0].type", "one of"),
        (
            {"parameters": [{"name": "a", "type": "string", "required": "yes"}]},
            "parameters[0].required",
            "boolean",
        ),
        (
            {"parameters": [{"name": "a", "type": "string", "default": 1}]},
            "parameters[0].default",
            "unknown key",
        ),
        (
            {"parameters": [{"name": "a", "type": "string", "description": 3}]},
            "parameters[0].description",
            "must be a string",
        ),
        (
            {"parameters": [{"name": "a", "type": "string"}, {"name": "a", "type": "date"}]},
            "parameters[1].name",
            "listed twice",
        ),
    ],
)
def test_display_keys_are_validated(overrides: dict[str, Any], key: str, rule: str) -> None:
    err = parse_error(doc(**overrides))

    assert err.key == f"{KEY}.{key}"
    assert rule in err.rule


@pytest.mark.parametrize("typo", ["displayName", "display_name_", "params"])
def test_camel_case_display_keys_are_typos(typo: str) -> None:
    definition = {**FULL_DEFINITION, typo: "x"}
    err = parse_error({"definitions": {"CUSTOMER_LIST": definition}})

    assert err.key == f"{KEY}.{typo}"
    assert "unknown key" in err.rule


def test_fingerprint_changes_with_the_display_keys() -> None:
    base = registry_fingerprint(parse_registry(doc(), ALLOWED))
    hint = [{"name": "a", "type": "string"}]

    assert registry_fingerprint(parse_registry(doc(display_name="X"), ALLOWED)) != base
    assert registry_fingerprint(parse_registry(doc(description="X"), ALLOWED)) != base
    assert registry_fingerprint(parse_registry(doc(parameters=hint), ALLOWED)) != base
