"""Registry validation rules (§10.3): permission, scope, integer and display keys; fingerprint."""

from __future__ import annotations

from typing import Any

import pytest

from actors.core.definitions import ChoiceValue, ParameterHint, Registry
from actors.core.registry import parse_registry, registry_fingerprint
from tests.actors.core.registry_documents import ALLOWED, FULL_DEFINITION, KEY, doc, parse_error

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


# --- texts per language ------------------------------------------------------------------


def test_texts_per_language_default_to_english_and_keep_the_others() -> None:
    data = doc(
        display_name={"zh-CN": "客户列表", "en": "Customers"},
        description={"zh-CN": "全部客户"},
        parameters=[
            {
                "name": "status",
                "type": "string",
                "label": {"en": "Status", "zh-CN": "状态"},
                "values": [
                    "ACTIVE",
                    {"value": "INACTIVE", "label": {"en": "Off", "zh-CN": "停用"}},
                ],
            },
            {"name": "rows", "type": "integer", "minimum": 1, "maximum": 500},
        ],
    )
    definition = parse_registry(data, ALLOWED).definitions["CUSTOMER_LIST"]

    # English when given, else the first language given.
    assert (definition.display_name, definition.description) == ("Customers", "全部客户")
    assert definition.translations == (("zh-CN", "客户列表", None),)
    status, rows = definition.parameters
    assert (status.label, status.translations) == ("Status", (("zh-CN", "状态", None),))
    assert status.values == (
        ChoiceValue("ACTIVE", "ACTIVE"),  # no label: the value itself
        ChoiceValue("INACTIVE", "Off", (("zh-CN", "停用"),)),
    )
    assert (rows.label, rows.minimum, rows.maximum) == (None, 1, 500)


def test_fingerprint_changes_with_a_translation_or_a_value() -> None:
    hint = {"name": "s", "type": "string", "values": ["A"]}
    base = registry_fingerprint(parse_registry(doc(parameters=[hint]), ALLOWED))
    other = {**hint, "values": ["A", "B"]}
    named = doc(display_name={"en": "X", "zh-CN": "甲"}, parameters=[hint])

    assert registry_fingerprint(parse_registry(doc(parameters=[other]), ALLOWED)) != base
    assert registry_fingerprint(parse_registry(named, ALLOWED)) != registry_fingerprint(
        parse_registry(doc(display_name="X", parameters=[hint]), ALLOWED)
    )
