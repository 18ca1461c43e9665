"""How the registry reads one field of its document (§10.3): a required string, an integer
within bounds, a text people read (given once or per language), and the check that a
mapping carries no key but the allowed ones. Each raises
:class:`~actors.core.errors.RegistryError` naming the key's YAML path and the rule.

The rules of a definition are ``actors.core.registry``'s, those of its parameter hints
``actors.core.registry_parameters``'s; both read their fields through these.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from actors.core.errors import RegistryError

#: Longest ``display-name``, ``description`` and parameter ``description``, characters.
MAX_DISPLAY_NAME_CHARS = 100
MAX_DESCRIPTION_CHARS = 500
#: A language tag of a text given per language, e.g. ``en``, ``zh-CN`` (BCP 47, simplified).
_LANGUAGE_TAG_RE = re.compile(r"[a-z]{2,3}(-[A-Za-z0-9]{2,8}){0,2}")
#: The language a text given per language falls back to (else its first).
DEFAULT_LANGUAGE = "en"


def refuse_unknown_keys(raw: Mapping[Any, Any], base: str, allowed: frozenset[str]) -> None:
    """Raise naming the first key of ``raw`` that is not in ``allowed``, and the allowed ones."""
    for key in raw:
        if key not in allowed:
            raise RegistryError(
                f"{base}.{key}",
                f"unknown key {key!r}; allowed keys are {', '.join(sorted(allowed))}",
            )


def required_str(raw: Mapping[Any, Any], base: str, key: str) -> str:
    """Return ``raw[key]`` if it is a non-empty string, else raise naming the key."""
    if key not in raw or raw[key] is None:
        raise RegistryError(f"{base}.{key}", "is required")
    value = raw[key]
    if not isinstance(value, str):
        raise RegistryError(f"{base}.{key}", f"must be a string, got {type_name(value)} {value!r}")
    if not value.strip():
        raise RegistryError(f"{base}.{key}", "must not be empty")
    return value


def bounded_int(
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
            f"must be an integer in [{low}, {high}], got {type_name(value)} {value!r}",
        )
    if not low <= value <= high:
        raise RegistryError(f"{base}.{key}", f"must be an integer in [{low}, {high}], got {value}")
    return value


def type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _optional_text(raw: Mapping[Any, Any], base: str, key: str, max_chars: int) -> str | None:
    """``raw[key]`` as a non-blank single-line string of at most ``max_chars``, or
    ``None`` when the key is absent or null."""
    value = raw.get(key)
    if value is None:
        return None
    path = f"{base}.{key}"
    if not isinstance(value, str):
        raise RegistryError(path, f"must be a string, got {type_name(value)} {value!r}")
    if not value.strip():
        raise RegistryError(path, "must not be empty")
    if len(value) > max_chars:
        raise RegistryError(path, f"must be at most {max_chars} characters, got {len(value)}")
    if any(c in value for c in "\r\n"):  # one line: a form shows it as a label
        raise RegistryError(path, "must be a single line")
    return value.strip()


def local_text(
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


def translations(
    labels: Mapping[str, str], descriptions: Mapping[str, str]
) -> tuple[tuple[str, str | None, str | None], ...]:
    return tuple(
        (tag, labels.get(tag), descriptions.get(tag)) for tag in sorted({*labels, *descriptions})
    )
