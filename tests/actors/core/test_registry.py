"""Registry validation rules (§10.3), one test per rule, on already-loaded YAML documents.

§19.1 bullet covered here: "注册表：白名单外服务名启动失败、路径格式非法启动失败、路径与 key
不一致启动失败" (the hot-reload half is in tests/actors/plumbing/test_registry_source_reload.py).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from actors.core.definitions import ChoiceValue, ExportDefinition, ParameterHint, Registry
from actors.core.principal import AppCode
from actors.core.registry import parse_registry
from actors.plumbing.registry_source import default_registry_path
from tests.actors.core.registry_documents import ALLOWED, FULL_DEFINITION, KEY, doc, parse_error

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
        description=(
            "The tenant's customers (demo data), optionally only active or inactive ones,"
            " or those whose name holds a word."
        ),
        parameters=(
            ParameterHint(
                "status",
                "string",
                False,
                "Any: both active and inactive customers.",
                label="Status",
                values=(
                    ChoiceValue("ACTIVE", "Active", (("zh-CN", "启用"),)),
                    ChoiceValue("INACTIVE", "Inactive", (("zh-CN", "停用"),)),
                ),
                translations=(("zh-CN", "状态", "全部：启用和停用的客户都导出。"),),
            ),
            ParameterHint(
                "keyword",
                "string",
                False,
                "Part of the customer name, at most 256 characters.",
                label="Name contains",
                translations=(("zh-CN", "名称包含", "客户名称的一部分，最多 256 个字符。"),),
            ),
            ParameterHint(
                "rowCount",
                "integer",
                False,
                "How many demo customers there are to export.",
                label="Rows in the demo table",
                minimum=1,
                maximum=200000,  # the type's max-rows: the form cannot ask for a failure
                translations=(("zh-CN", "演示表行数", "可导出的演示客户数量。"),),
            ),
        ),
        translations=(
            (
                "zh-CN",
                "客户列表",
                "本租户的客户（演示数据），可只导出启用或停用的客户，或名称包含某个词的客户。",
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
