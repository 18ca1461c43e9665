"""Validation of the Provider map: which address (and token) each Provider service has.

Pure functions, no IO. The map file (``FILE_EXPORT_PROVIDER_MAP``), already loaded from
YAML, looks like::

    providers:
      iam-service:
        url: http://iam.internal:8080          # base URL; the registry's provider-path is appended
        token: 7f0c…                           # optional: X-Internal-Service-Token for this service
      order-service:
        url: https://orders.internal/api       # no token: INTERNAL_SERVICE_TOKEN is sent

The rules, checked at start-up and on every reload (the first one broken raises
:class:`~actors.core.errors.ProviderMapError` naming the YAML key and the rule):

* the document is a mapping whose only key is ``providers``, a mapping
  ``service name -> entry``; a service name is 1-64 characters of ``A-Z a-z 0-9 . _ -``
  starting with a letter or digit;
* an entry has ``url`` and optionally ``token``, nothing else;
* ``url`` is an absolute ``http``/``https`` URL with a host, a valid port if any, and no
  query or fragment (the registry's ``provider-path`` is appended to it); credentials in
  it are sent as Basic authentication, and redacted in every log line;
* ``token`` is 1-512 visible ASCII characters (it travels in an HTTP header); an entry
  without one needs ``INTERNAL_SERVICE_TOKEN``, which every Provider request otherwise
  carries;
* on a reload, the service names are exactly those of the map in force at start-up.

The last rule keeps docs/design-rules.md §10.3 (no SSRF): the Provider allowlist — the services a
registry may name — is fixed at process start. With a map file it is the names of the file
as read at start (plus the demo Provider's service when it is mounted); a reload may move a
service to a new address or change its token, never add a service (the registry could then
point at any host someone can write into the file) nor drop one (the registry may still
name it: its exports would fail for want of an address). Changing the set of services is a
deploy: edit the file and restart.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.parse
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from actors.core.errors import ProviderMapError
from actors.core.text import redact_credentials

__all__ = [
    "MAX_TOKEN_LENGTH",
    "ProviderEndpoint",
    "ProviderMap",
    "base_url_problem",
    "parse_provider_map",
    "provider_map_fingerprint",
]

#: Longest accepted per-service token, characters.
MAX_TOKEN_LENGTH = 512

_SERVICE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_TOKEN_RE = re.compile(r"[\x21-\x7e]+")
_ENTRY_KEYS = frozenset({"url", "token"})
_ROOT_KEY = "<document>"


@dataclass(frozen=True, slots=True)
class ProviderEndpoint:
    """Where one Provider service is reached.

    Attributes:
        base_url: ``http(s)://host[:port][/base]``; the registry's ``provider-path`` is
            appended to it.
        token: the ``X-Internal-Service-Token`` for this service; ``None`` sends
            ``INTERNAL_SERVICE_TOKEN``.
    """

    base_url: str
    token: str | None = None

    def __repr__(self) -> str:  # never print a token
        token = "None" if self.token is None else "'***'"
        return f"ProviderEndpoint(base_url={redact_credentials(self.base_url)!r}, token={token})"


@dataclass(frozen=True, slots=True)
class ProviderMap:
    """Service name -> :class:`ProviderEndpoint`; replaced whole on a valid reload."""

    endpoints: Mapping[str, ProviderEndpoint] = field(default_factory=dict)

    @property
    def services(self) -> frozenset[str]:
        """The service names of the map."""
        return frozenset(self.endpoints)

    def get(self, service: str) -> ProviderEndpoint | None:
        """The endpoint of ``service``, or ``None`` when the map does not name it."""
        return self.endpoints.get(service)


def base_url_problem(url: Any) -> str | None:
    """What is wrong with a Provider base URL, or ``None`` when it is usable.

    Args:
        url: the value as configured.

    Returns:
        The broken rule in words (the URL quoted with its credentials redacted), or
        ``None``.
    """
    if not isinstance(url, str):
        return f"must be a string, got {_type_name(url)}"
    shown = repr(redact_credentials(url))
    if not url or any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        return f"{shown} is empty or holds whitespace or control characters"
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port  # raises ValueError on a port out of range or not a number
    except ValueError as exc:
        return f"{shown} is not a valid URL: {exc}"
    if parts.scheme.lower() not in ("http", "https"):
        return f"{shown} must be an http:// or https:// URL"
    if not parts.hostname:
        return f"{shown} has no host"
    if port == 0:
        return f"{shown} has port 0"
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        return f"{shown} must not have a query or a fragment (the provider-path is appended)"
    return None


def parse_provider_map(
    data: Any, *, services: Collection[str] | None, default_token: bool
) -> ProviderMap:
    """Validate a loaded Provider map document and build the :class:`ProviderMap`.

    Args:
        data: the YAML document as loaded by ``yaml.safe_load`` (see the module docstring).
        services: ``None`` at start-up (the file's names become the allowlist); on a
            reload, the service names fixed at start: the map must name exactly these.
        default_token: whether ``INTERNAL_SERVICE_TOKEN`` is set; without it every entry
            needs its own ``token``.

    Returns:
        The map; its ``endpoints`` mapping is read-only and keeps document order.

    Raises:
        ProviderMapError: the first rule broken; ``key`` is the YAML path of the offending
            key (``providers.iam-service.url``), ``rule`` says what was wrong. Token values
            are never quoted.
    """
    if not isinstance(data, Mapping):
        raise ProviderMapError(_ROOT_KEY, f"the document must be a mapping, got {_type_name(data)}")
    for top_key in data:
        if top_key != "providers":
            raise ProviderMapError(
                str(top_key), f"unknown top-level key {top_key!r}; the only key is 'providers'"
            )
    if "providers" not in data:
        raise ProviderMapError("providers", "is required")
    raw = data["providers"]
    if not isinstance(raw, Mapping):
        raise ProviderMapError("providers", f"must be a mapping, got {_type_name(raw)}")
    fixed = None if services is None else frozenset(services)
    endpoints: dict[str, ProviderEndpoint] = {}
    for name, entry in raw.items():
        base = f"providers.{name}"
        if not isinstance(name, str) or not _SERVICE_RE.fullmatch(name):
            raise ProviderMapError(
                base,
                f"service name {name!r} must be 1-64 characters of A-Z a-z 0-9 . _ - "
                "starting with a letter or digit",
            )
        if fixed is not None and name not in fixed:
            raise ProviderMapError(
                base,
                f"service {name!r} is not in the allowlist fixed at start-up "
                f"({', '.join(sorted(fixed)) or 'empty'}); adding a service needs a restart",
            )
        endpoints[name] = _parse_entry(base, entry, default_token)
    if fixed is not None:
        missing = sorted(fixed - endpoints.keys())
        if missing:
            raise ProviderMapError(
                "providers",
                f"service(s) {', '.join(missing)} fixed at start-up are missing; a reload "
                "may change addresses and tokens, not drop a service",
            )
    return ProviderMap(endpoints=MappingProxyType(endpoints))


def provider_map_fingerprint(provider_map: ProviderMap) -> str:
    """A stable SHA-256 hex digest of the map, for reload logs (tokens enter as their own
    digests, so the fingerprint tells a token change without revealing the token).

    Returns:
        64 lowercase hex characters.
    """
    canonical = {
        name: [
            e.base_url,
            None if e.token is None else hashlib.sha256(e.token.encode()).hexdigest(),
        ]
        for name, e in provider_map.endpoints.items()
    }
    blob = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(blob.encode("ascii")).hexdigest()


def _parse_entry(base: str, entry: Any, default_token: bool) -> ProviderEndpoint:
    if not isinstance(entry, Mapping):
        raise ProviderMapError(base, f"must be a mapping with 'url', got {_type_name(entry)}")
    for key in entry:
        if key not in _ENTRY_KEYS:
            raise ProviderMapError(
                f"{base}.{key}", f"unknown key {key!r}; allowed: {', '.join(sorted(_ENTRY_KEYS))}"
            )
    if "url" not in entry:
        raise ProviderMapError(f"{base}.url", "is required")
    problem = base_url_problem(entry["url"])
    if problem is not None:
        raise ProviderMapError(f"{base}.url", problem)
    token = entry.get("token")
    if token is None:
        if not default_token:
            raise ProviderMapError(
                f"{base}.token",
                "is required when INTERNAL_SERVICE_TOKEN is not set: every Provider request "
                "carries a service token",
            )
    elif not isinstance(token, str):
        raise ProviderMapError(f"{base}.token", f"must be a string, got {_type_name(token)}")
    elif len(token) > MAX_TOKEN_LENGTH or not _TOKEN_RE.fullmatch(token):
        raise ProviderMapError(
            f"{base}.token",
            f"must be 1-{MAX_TOKEN_LENGTH} visible ASCII characters (it is an HTTP header value)",
        )
    return ProviderEndpoint(base_url=entry["url"], token=token)


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__
