"""Validation of the export registry (§10.3): pure functions, no IO.

The registry document, already loaded from YAML, looks like::

    definitions:
      CUSTOMER_LIST:
        provider-service: demo-service
        provider-path: /internal/exports/v1/CUSTOMER_LIST/batches
        required-permission: platform:customer:export
        app-scope: PLATFORM
        enabled: true
        max-rows: 200000
        max-attempts: 3
        batch-size: 500
        display-name: Customer list          # optional, shown to people
        description: Every customer of the tenant.
        parameters:                          # optional hints for a "new export" form
          - {name: status, type: string, required: false, description: ACTIVE or INACTIVE}

Every rule of §10.3 is checked on start-up *and* on every hot reload; the first rule broken
raises :class:`~actors.core.errors.RegistryError` naming the YAML key path and the rule, so
start-up fails and a reload is rejected (the caller keeps the old registry, §10.3 "刷新时同样
执行全量校验，校验失败保留旧配置并告警").

``provider-service`` must come from ``allowed_services``, the static allowlist fixed at
process start (the services named in ``FILE_EXPORT_PROVIDER_URLS``): configuration can only
pick from it, never add to it, which is the SSRF guard of §10.3 and docs/design-rules.md §10.3.

Which values are read when (create time vs. run time) is a concern of the callers, not of
this module (§10.4).

This module holds the rules of the document and of each definition, and the fingerprint;
a definition's ``parameters`` are checked by ``actors.core.registry_parameters``, and every
field is read through ``actors.core.registry_fields`` (required strings, bounded integers,
texts given once or per language, unknown keys). What they build, the validated values, is
``actors.core.definitions``'s.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Mapping
from types import MappingProxyType
from typing import Any

from actors.core.definitions import ExportDefinition, Registry
from actors.core.errors import RegistryError
from actors.core.principal import AppCode
from actors.core.registry_fields import (
    MAX_DESCRIPTION_CHARS,
    MAX_DISPLAY_NAME_CHARS,
    bounded_int,
    local_text,
    refuse_unknown_keys,
    required_str,
    translations,
    type_name,
)
from actors.core.registry_parameters import parameter_hints

__all__ = [
    "ALLOWED_KEYS",
    "BATCH_SIZE_RANGE",
    "MAX_ATTEMPTS_RANGE",
    "MAX_ROWS_RANGE",
    "parse_registry",
    "registry_fingerprint",
]

# re.fullmatch, not re.match with "$": "$" also matches before a trailing newline, so
# "platform:customer:export\n" would slip through an anchored re.match.
_EXPORT_TYPE_RE = re.compile(r"[A-Z0-9_]+")
_PROVIDER_PATH_RE = re.compile(r"/internal/exports/v1/([A-Z0-9_]+)/batches")
_PERMISSION_RE = re.compile(r"[a-z]+:[a-z-]+:[a-z-]+")

#: Inclusive bounds of the integer keys (§10.3).
MAX_ROWS_RANGE = (1, 500_000)
BATCH_SIZE_RANGE = (50, 1000)
MAX_ATTEMPTS_RANGE = (1, 5)

#: The keys a definition may carry, exactly as in the seed (§10.3). Anything else is a typo
#: (``max_rows``, ``batchSize`` …) that would otherwise silently fall back to a default.
ALLOWED_KEYS: frozenset[str] = frozenset(
    {
        "provider-service",
        "provider-path",
        "required-permission",
        "app-scope",
        "enabled",
        "max-rows",
        "max-attempts",
        "batch-size",
        "display-name",
        "description",
        "parameters",
    }
)

_TOP_LEVEL_KEYS = frozenset({"definitions"})
_ROOT_KEY = "<document>"


def parse_registry(data: Any, allowed_services: Collection[str]) -> Registry:
    """Validate a loaded registry document and build the :class:`Registry` (§10.3).

    Args:
        data: the YAML document as loaded by ``yaml.safe_load``: a mapping whose only key is
            ``definitions``, itself a mapping ``EXPORT_TYPE -> definition``. An empty
            ``definitions`` mapping is allowed and yields an empty registry.
        allowed_services: the static allowlist of Provider service names fixed at process
            start; every ``provider-service`` must be one of them (SSRF guard).

    Returns:
        The registry; its ``definitions`` mapping is read-only and keeps document order.

    Raises:
        RegistryError: the first rule broken. ``key`` is the YAML path of the offending
            key, e.g. ``definitions.CUSTOMER_LIST.provider-path``; ``rule`` says in words
            what was wrong, including the offending value.
    """
    if not isinstance(data, Mapping):
        raise RegistryError(_ROOT_KEY, f"the document must be a mapping, got {type_name(data)}")
    for top_key in data:
        if top_key not in _TOP_LEVEL_KEYS:
            raise RegistryError(
                str(top_key),
                f"unknown top-level key {top_key!r}; the only allowed key is 'definitions'",
            )
    if "definitions" not in data:
        raise RegistryError("definitions", "is required")
    raw_definitions = data["definitions"]
    if not isinstance(raw_definitions, Mapping):
        raise RegistryError("definitions", f"must be a mapping, got {type_name(raw_definitions)}")

    allowed = frozenset(allowed_services)
    definitions: dict[str, ExportDefinition] = {}
    for export_type, raw in raw_definitions.items():
        definition = _parse_definition(export_type, raw, allowed)
        definitions[definition.export_type] = definition
    # A read-only view: the registry is shared by every reader and replaced whole on reload,
    # never edited in place.
    return Registry(definitions=MappingProxyType(definitions))


def registry_fingerprint(registry: Registry) -> str:
    """A stable SHA-256 hex digest of the registry's content, for reload logs.

    Two registries with the same definitions have the same fingerprint whatever the order
    of the YAML keys, so an operator can tell "reloaded, nothing changed" from a real change.

    Args:
        registry: the registry to fingerprint.

    Returns:
        64 lowercase hex characters.
    """
    canonical = {
        export_type: {
            "provider-service": d.provider_service,
            "provider-path": d.provider_path,
            "required-permission": d.required_permission,
            "app-scope": str(d.app_scope),
            "enabled": d.enabled,
            "max-rows": d.max_rows,
            "max-attempts": d.max_attempts,
            "batch-size": d.batch_size,
            "display-name": d.display_name,
            "description": d.description,
            "parameters": [
                [p.name, p.type, p.required, p.description, p.label, p.minimum, p.maximum]
                + [[[c.value, c.label, c.translations] for c in p.values], p.translations]
                for p in d.parameters
            ],
            "translations": d.translations,
        }
        for export_type, d in registry.definitions.items()
    }
    blob = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(blob.encode("ascii")).hexdigest()


def _parse_definition(
    export_type: Any, raw: Any, allowed_services: frozenset[str]
) -> ExportDefinition:
    """Validate one ``definitions.<EXPORT_TYPE>`` entry; see :func:`parse_registry`."""
    # YAML may hand us a non-string key (``123:``, ``null:``); it is still an illegal type.
    if not isinstance(export_type, str):
        raise RegistryError(
            f"definitions.{export_type}",
            f"export type must be a string, got {type_name(export_type)} {export_type!r}",
        )
    base = f"definitions.{export_type}"
    if not export_type:
        raise RegistryError(base, "export type must not be empty")
    if not _EXPORT_TYPE_RE.fullmatch(export_type):
        raise RegistryError(base, f"export type {export_type!r} must match ^[A-Z0-9_]+$")
    if not isinstance(raw, Mapping):
        raise RegistryError(base, f"definition must be a mapping, got {type_name(raw)}")

    # Unknown keys first: a typo such as ``max_rows`` must be reported as the typo, not
    # hidden behind the default the correctly spelled key would have fallen back to.
    refuse_unknown_keys(raw, base, ALLOWED_KEYS)

    provider_service = required_str(raw, base, "provider-service")
    if provider_service not in allowed_services:
        raise RegistryError(
            f"{base}.provider-service",
            f"service {provider_service!r} is not in the allowlist of Provider services "
            f"fixed at start-up ({', '.join(sorted(allowed_services)) or 'empty'})",
        )

    provider_path = required_str(raw, base, "provider-path")
    path_match = _PROVIDER_PATH_RE.fullmatch(provider_path)
    if path_match is None:
        raise RegistryError(
            f"{base}.provider-path",
            f"path {provider_path!r} must match "
            r"^/internal/exports/v1/[A-Z0-9_]+/batches$",
        )
    if path_match.group(1) != export_type:
        raise RegistryError(
            f"{base}.provider-path",
            f"export type in the path ({path_match.group(1)!r}) must equal the definition "
            f"key ({export_type!r})",
        )

    required_permission = required_str(raw, base, "required-permission")
    if not _PERMISSION_RE.fullmatch(required_permission):
        raise RegistryError(
            f"{base}.required-permission",
            f"permission {required_permission!r} must match ^[a-z]+:[a-z-]+:[a-z-]+$",
        )

    app_scope_raw = required_str(raw, base, "app-scope")
    try:
        app_scope = AppCode(app_scope_raw)
    except ValueError:
        raise RegistryError(
            f"{base}.app-scope",
            f"app scope {app_scope_raw!r} must be one of "
            f"{', '.join(code.value for code in AppCode)}",
        ) from None

    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        raise RegistryError(f"{base}.enabled", f"must be a boolean (true/false), got {enabled!r}")

    display_name, display_names = local_text(raw, base, "display-name", MAX_DISPLAY_NAME_CHARS)
    description, descriptions = local_text(raw, base, "description", MAX_DESCRIPTION_CHARS)
    return ExportDefinition(
        export_type=export_type,
        provider_service=provider_service,
        provider_path=provider_path,
        required_permission=required_permission,
        app_scope=app_scope,
        enabled=enabled,
        max_rows=bounded_int(raw, base, "max-rows", 200_000, MAX_ROWS_RANGE),
        max_attempts=bounded_int(raw, base, "max-attempts", 3, MAX_ATTEMPTS_RANGE),
        batch_size=bounded_int(raw, base, "batch-size", 500, BATCH_SIZE_RANGE),
        display_name=display_name,
        description=description or "",
        parameters=parameter_hints(raw.get("parameters"), f"{base}.parameters"),
        translations=translations(display_names, descriptions),
    )
