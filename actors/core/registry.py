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
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Mapping
from types import MappingProxyType
from typing import Any

from actors.core.definitions import ChoiceValue, ExportDefinition, ParameterHint, Registry
from actors.core.errors import RegistryError
from actors.core.principal import AppCode

__all__ = [
    "ALLOWED_KEYS",
    "BATCH_SIZE_RANGE",
    "MAX_ATTEMPTS_RANGE",
    "MAX_ROWS_RANGE",
    "PARAMETER_TYPES",
    "parse_registry",
    "registry_fingerprint",
]

# re.fullmatch, not re.match with "$": "$" also matches before a trailing newline, so
# "platform:customer:export\n" would slip through an anchored re.match.
_EXPORT_TYPE_RE = re.compile(r"[A-Z0-9_]+")
_PROVIDER_PATH_RE = re.compile(r"/internal/exports/v1/([A-Z0-9_]+)/batches")
_PERMISSION_RE = re.compile(r"[a-z]+:[a-z-]+:[a-z-]+")
# A parameter name is a JSON key a form and a Provider can both spell plainly.
_PARAMETER_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")

#: The ``type`` a parameter hint may name: JSON's scalar types plus ISO-8601 dates and
#: times (sent as strings), so a form can pick a fitting input.
PARAMETER_TYPES: tuple[str, ...] = ("string", "integer", "number", "boolean", "date", "datetime")
#: Longest ``display-name``, ``description`` and parameter ``description``, characters.
MAX_DISPLAY_NAME_CHARS = 100
MAX_DESCRIPTION_CHARS = 500
#: Most parameter hints of one definition.
MAX_PARAMETERS = 30
_PARAMETER_KEYS = frozenset(
    {"name", "type", "required", "description", "label", "values", "minimum", "maximum"}
)
#: Most ``values`` of one parameter.
MAX_VALUES = 50
#: A language tag of a text given per language, e.g. ``en``, ``zh-CN`` (BCP 47, simplified).
_LANGUAGE_TAG_RE = re.compile(r"[a-z]{2,3}(-[A-Za-z0-9]{2,8}){0,2}")
#: The language a text given per language falls back to (else its first).
DEFAULT_LANGUAGE = "en"

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
        raise RegistryError(_ROOT_KEY, f"the document must be a mapping, got {_type_name(data)}")
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
        raise RegistryError("definitions", f"must be a mapping, got {_type_name(raw_definitions)}")

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
            f"export type must be a string, got {_type_name(export_type)} {export_type!r}",
        )
    base = f"definitions.{export_type}"
    if not export_type:
        raise RegistryError(base, "export type must not be empty")
    if not _EXPORT_TYPE_RE.fullmatch(export_type):
        raise RegistryError(base, f"export type {export_type!r} must match ^[A-Z0-9_]+$")
    if not isinstance(raw, Mapping):
        raise RegistryError(base, f"definition must be a mapping, got {_type_name(raw)}")

    # Unknown keys first: a typo such as ``max_rows`` must be reported as the typo, not
    # hidden behind the default the correctly spelled key would have fallen back to.
    _refuse_unknown_keys(raw, base, ALLOWED_KEYS)

    provider_service = _required_str(raw, base, "provider-service")
    if provider_service not in allowed_services:
        raise RegistryError(
            f"{base}.provider-service",
            f"service {provider_service!r} is not in the allowlist of Provider services "
            f"fixed at start-up ({', '.join(sorted(allowed_services)) or 'empty'})",
        )

    provider_path = _required_str(raw, base, "provider-path")
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

    required_permission = _required_str(raw, base, "required-permission")
    if not _PERMISSION_RE.fullmatch(required_permission):
        raise RegistryError(
            f"{base}.required-permission",
            f"permission {required_permission!r} must match ^[a-z]+:[a-z-]+:[a-z-]+$",
        )

    app_scope_raw = _required_str(raw, base, "app-scope")
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

    display_name, display_names = _local_text(raw, base, "display-name", MAX_DISPLAY_NAME_CHARS)
    description, descriptions = _local_text(raw, base, "description", MAX_DESCRIPTION_CHARS)
    return ExportDefinition(
        export_type=export_type,
        provider_service=provider_service,
        provider_path=provider_path,
        required_permission=required_permission,
        app_scope=app_scope,
        enabled=enabled,
        max_rows=_bounded_int(raw, base, "max-rows", 200_000, MAX_ROWS_RANGE),
        max_attempts=_bounded_int(raw, base, "max-attempts", 3, MAX_ATTEMPTS_RANGE),
        batch_size=_bounded_int(raw, base, "batch-size", 500, BATCH_SIZE_RANGE),
        display_name=display_name,
        description=description or "",
        parameters=_parameters(raw.get("parameters"), f"{base}.parameters"),
        translations=_translations(display_names, descriptions),
    )


def _optional_text(raw: Mapping[Any, Any], base: str, key: str, max_chars: int) -> str | None:
    """``raw[key]`` as a non-blank single-line string of at most ``max_chars``, or
    ``None`` when the key is absent or null."""
    value = raw.get(key)
    if value is None:
        return None
    path = f"{base}.{key}"
    if not isinstance(value, str):
        raise RegistryError(path, f"must be a string, got {_type_name(value)} {value!r}")
    if not value.strip():
        raise RegistryError(path, "must not be empty")
    if len(value) > max_chars:
        raise RegistryError(path, f"must be at most {max_chars} characters, got {len(value)}")
    if any(c in value for c in "\r\n"):  # one line: a form shows it as a label
        raise RegistryError(path, "must be a single line")
    return value.strip()


def _local_text(
    raw: Mapping[Any, Any], base: str, key: str, max_chars: int
) -> tuple[str | None, dict[str, str]]:
    """A text people read, given once (a string) or per language (a mapping of language
    tags to strings, e.g. ``{en: Customer list, zh-CN: 客户列表}``).

    Returns:
        (the text in :data:`DEFAULT_LANGUAGE`, else the first given; the others by tag).
        ``(None, {})`` when the key is absent or null.
    """
    value = raw.get(key)
    if not isinstance(value, Mapping):
        return _optional_text(raw, base, key, max_chars), {}
    if not value:
        raise RegistryError(f"{base}.{key}", "must name at least one language")
    texts: dict[str, str] = {}
    for tag in value:
        if not isinstance(tag, str) or not _LANGUAGE_TAG_RE.fullmatch(tag):
            raise RegistryError(
                f"{base}.{key}.{tag}", f"{tag!r} is not a language tag such as en or zh-CN"
            )
        text = _optional_text(value, f"{base}.{key}", tag, max_chars)
        if text is None:
            raise RegistryError(f"{base}.{key}.{tag}", "must not be empty")
        texts[tag] = text
    default = DEFAULT_LANGUAGE if DEFAULT_LANGUAGE in texts else next(iter(texts))
    first = texts.pop(default)
    return first, texts


def _translations(
    labels: Mapping[str, str], descriptions: Mapping[str, str]
) -> tuple[tuple[str, str | None, str | None], ...]:
    return tuple(
        (tag, labels.get(tag), descriptions.get(tag)) for tag in sorted({*labels, *descriptions})
    )


def _values(raw: Any, path: str, type_: str) -> tuple[ChoiceValue, ...]:
    """A parameter's ``values``: strings, or ``{value, label}`` mappings whose label may be
    given per language; distinct, at most :data:`MAX_VALUES`."""
    if raw is None:
        return ()
    if type_ != "string":
        raise RegistryError(path, f"is allowed for string parameters only, not {type_}")
    if not isinstance(raw, list) or not raw:
        raise RegistryError(path, f"must be a non-empty list, got {_type_name(raw)}")
    if len(raw) > MAX_VALUES:
        raise RegistryError(path, f"must have at most {MAX_VALUES} entries, got {len(raw)}")
    choices: list[ChoiceValue] = []
    for index, entry in enumerate(raw):
        at = f"{path}[{index}]"
        if isinstance(entry, str):
            entry = {"value": entry}
        if not isinstance(entry, Mapping) or set(entry) - {"value", "label"}:
            raise RegistryError(at, "must be a string or a mapping of value and label")
        value = _required_str(entry, at, "value")
        if any(c.value == value for c in choices):
            raise RegistryError(f"{at}.value", f"value {value!r} is listed twice")
        label, labels = _local_text(entry, at, "label", MAX_DISPLAY_NAME_CHARS)
        choices.append(ChoiceValue(value, label or value, tuple(sorted(labels.items()))))
    return tuple(choices)


def _bound(raw: Mapping[Any, Any], path: str, key: str, type_: str) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if type_ not in ("integer", "number"):
        raise RegistryError(f"{path}.{key}", f"is allowed for numbers only, not {type_}")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RegistryError(f"{path}.{key}", f"must be a number, got {_type_name(value)}")
    return float(value)


def _parameters(raw: Any, path: str) -> tuple[ParameterHint, ...]:
    """The ``parameters`` hints: a list of ``{name, type, required, description}``
    mappings with distinct names; absent or null is no hints."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise RegistryError(path, f"must be a list, got {_type_name(raw)}")
    if len(raw) > MAX_PARAMETERS:
        raise RegistryError(path, f"must have at most {MAX_PARAMETERS} entries, got {len(raw)}")
    hints: list[ParameterHint] = []
    for index, entry in enumerate(raw):
        at = f"{path}[{index}]"
        if not isinstance(entry, Mapping):
            raise RegistryError(at, f"must be a mapping, got {_type_name(entry)}")
        _refuse_unknown_keys(entry, at, _PARAMETER_KEYS)
        name = _required_str(entry, at, "name")
        if not _PARAMETER_NAME_RE.fullmatch(name):
            raise RegistryError(
                f"{at}.name", f"name {name!r} must match ^[A-Za-z][A-Za-z0-9_]{{0,63}}$"
            )
        if any(h.name == name for h in hints):
            raise RegistryError(f"{at}.name", f"name {name!r} is listed twice")
        type_ = _required_str(entry, at, "type")
        if type_ not in PARAMETER_TYPES:
            raise RegistryError(
                f"{at}.type", f"type {type_!r} must be one of {', '.join(PARAMETER_TYPES)}"
            )
        required = entry.get("required", False)
        if not isinstance(required, bool):
            raise RegistryError(
                f"{at}.required", f"must be a boolean (true/false), got {required!r}"
            )
        label, labels = _local_text(entry, at, "label", MAX_DISPLAY_NAME_CHARS)
        description, descriptions = _local_text(entry, at, "description", MAX_DESCRIPTION_CHARS)
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
                translations=_translations(labels, descriptions),
            )
        )
    return tuple(hints)


def _refuse_unknown_keys(raw: Mapping[Any, Any], base: str, allowed: frozenset[str]) -> None:
    """Raise naming the first key of ``raw`` that is not in ``allowed``, and the allowed ones."""
    for key in raw:
        if key not in allowed:
            raise RegistryError(
                f"{base}.{key}",
                f"unknown key {key!r}; allowed keys are {', '.join(sorted(allowed))}",
            )


def _required_str(raw: Mapping[Any, Any], base: str, key: str) -> str:
    """Return ``raw[key]`` if it is a non-empty string, else raise naming the key."""
    if key not in raw or raw[key] is None:
        raise RegistryError(f"{base}.{key}", "is required")
    value = raw[key]
    if not isinstance(value, str):
        raise RegistryError(f"{base}.{key}", f"must be a string, got {_type_name(value)} {value!r}")
    if not value.strip():
        raise RegistryError(f"{base}.{key}", "must not be empty")
    return value


def _bounded_int(
    raw: Mapping[Any, Any], base: str, key: str, default: int, bounds: tuple[int, int]
) -> int:
    """Return ``raw[key]`` (or ``default``) checked to be an int within ``bounds``.

    ``bool`` is a subclass of ``int`` in Python and ``"1000"`` is what a quoted YAML value
    loads as; both are rejected so that a mistyped value fails loudly instead of coercing.
    """
    value = raw.get(key, default)
    low, high = bounds
    if not isinstance(value, int) or isinstance(value, bool):
        raise RegistryError(
            f"{base}.{key}",
            f"must be an integer in [{low}, {high}], got {_type_name(value)} {value!r}",
        )
    if not low <= value <= high:
        raise RegistryError(f"{base}.{key}", f"must be an integer in [{low}, {high}], got {value}")
    return value


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__
