"""Registry file loading (§10.3): a file read strictly, validated whole, and held.

What the file is, read once: :func:`load_registry_file` and the shipped default, errors
named on the file or on the YAML key, and :class:`RegistryHolder`. Its hot reload (file
change, SIGHUP, an invalid reload kept out) is ``test_registry_source_reload.py``'s.
"""

from __future__ import annotations

import pathlib

import pytest

from actors.core.definitions import Registry
from actors.core.errors import RegistryError
from actors.plumbing.registry_source import (
    RegistryHolder,
    default_registry_path,
    load_registry_file,
)
from tests.actors.plumbing.registry_helpers import ALLOWED, batch_size, registry_yaml

# --- load_registry_file ---------------------------------------------------------------------


def test_load_registry_file_parses_a_valid_file(registry_file: pathlib.Path) -> None:
    registry = load_registry_file(registry_file, ALLOWED)

    assert batch_size(registry) == 500


def test_load_registry_file_accepts_a_str_path(registry_file: pathlib.Path) -> None:
    assert batch_size(load_registry_file(str(registry_file), ALLOWED)) == 500


def test_default_registry_path_points_at_the_shipped_file() -> None:
    path = default_registry_path()

    assert path.is_absolute()
    assert path.parts[-3:] == ("actors", "defaults", "registry.yaml")
    assert load_registry_file(path, {"demo-service"}).get("CUSTOMER_LIST") is not None


def test_missing_file_is_a_registry_error_on_the_file(tmp_path: pathlib.Path) -> None:
    with pytest.raises(RegistryError) as info:
        load_registry_file(tmp_path / "absent.yaml", ALLOWED)

    assert info.value.key == "<file>"
    assert "cannot read" in info.value.rule


def test_invalid_yaml_is_a_registry_error_on_the_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("definitions: {CUSTOMER_LIST: [\n", encoding="utf-8")

    with pytest.raises(RegistryError) as info:
        load_registry_file(path, ALLOWED)

    assert info.value.key == "<file>"
    assert "not valid YAML" in info.value.rule


def test_non_utf8_file_is_a_registry_error_on_the_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"definitions: {}\n# caf\xe9\n")

    with pytest.raises(RegistryError) as info:
        load_registry_file(path, ALLOWED)

    assert info.value.key == "<file>"


def test_duplicate_export_type_in_the_file_is_rejected(tmp_path: pathlib.Path) -> None:
    """§10.3 "key 不重复": PyYAML would silently keep the last block."""
    path = tmp_path / "dup.yaml"
    body = registry_yaml(500).removeprefix("definitions:\n")
    path.write_text("definitions:\n" + body + body, encoding="utf-8")

    with pytest.raises(RegistryError) as info:
        load_registry_file(path, ALLOWED)

    assert info.value.key == "<file>"
    assert "duplicate key 'CUSTOMER_LIST'" in info.value.rule


def test_yaml_merge_keys_are_not_mistaken_for_duplicates(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "merge.yaml"
    # Anchors must live inside the document; the only top-level key allowed is
    # ``definitions``, so put the anchor on the first definition and merge into the second.
    path.write_text(
        "definitions:\n"
        "  CUSTOMER_LIST: &common\n"
        "    provider-service: demo-service\n"
        "    provider-path: /internal/exports/v1/CUSTOMER_LIST/batches\n"
        "    required-permission: platform:customer:export\n"
        "    app-scope: PLATFORM\n"
        "    batch-size: 500\n"
        "  ORDER_LIST:\n"
        "    <<: *common\n"
        "    provider-path: /internal/exports/v1/ORDER_LIST/batches\n"
        "    batch-size: 200\n",
        encoding="utf-8",
    )

    registry = load_registry_file(path, ALLOWED)

    assert registry.definitions["ORDER_LIST"].batch_size == 200
    assert registry.definitions["ORDER_LIST"].provider_service == "demo-service"


def test_file_with_a_rule_violation_names_the_yaml_key(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(registry_yaml(path_type="ORDER_LIST"), encoding="utf-8")

    with pytest.raises(RegistryError) as info:
        load_registry_file(path, ALLOWED)

    assert info.value.key == "definitions.CUSTOMER_LIST.provider-path"


# --- RegistryHolder ------------------------------------------------------------------------


def test_holder_replace_swaps_the_whole_registry(registry_file: pathlib.Path) -> None:
    first = load_registry_file(registry_file, ALLOWED)
    holder = RegistryHolder(first)
    second = Registry()

    seen_before = holder.current
    holder.replace(second)

    assert seen_before is first
    assert holder.current is second


def test_holder_refuses_something_that_is_not_a_registry() -> None:
    with pytest.raises(TypeError):
        RegistryHolder({"CUSTOMER_LIST": None})  # type: ignore[arg-type]
    holder = RegistryHolder(Registry())
    with pytest.raises(TypeError):
        holder.replace(None)  # type: ignore[arg-type]
