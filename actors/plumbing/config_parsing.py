"""How the text of a variable becomes a setting's value, where the text has a form of its
own or a rule beyond its type: each function is a validator of
:class:`~actors.plumbing.config.Settings` (``field_validator``), given the variable's text
(or, from a test's overrides, the value itself) and raising ``ValueError`` with what is
wrong, which :func:`~actors.plumbing.config_loading.load_settings` reports under the
variable's name.
"""

from __future__ import annotations

import json
from typing import Any


def parse_provider_urls(value: Any) -> Any:
    """FILE_EXPORT_PROVIDER_URLS: a JSON object of service name → ``http(s)://`` base URL;
    empty text is no Provider."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError as exc:
            raise ValueError(f"is not valid JSON: {exc}") from None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v.startswith(("http://", "https://"))
        for k, v in value.items()
    ):
        raise ValueError('must be a JSON object of service name -> "http(s)://" base URL')
    return value


def parse_algorithms(value: Any) -> Any:
    """FILE_EXPORT_JWT_ALGORITHMS: comma-separated names; none is unset (the default)."""
    if isinstance(value, str):
        value = tuple(p.strip() for p in value.split(",") if p.strip()) or None
    return value


def parse_schedule(value: Any) -> Any:
    """A retry schedule (FILE_EXPORT_RETRY_BACKOFF_SECONDS, …_PUBLISH_BACKOFF_SECONDS):
    comma-separated delays in seconds, at least one, none negative."""
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()]
        if not parts:
            raise ValueError("must list at least one delay in seconds, e.g. 60,900")
        try:
            value = tuple(float(p) for p in parts)
        except ValueError:
            raise ValueError("must be comma-separated seconds, e.g. 60,900") from None
    if any(v < 0 for v in value):
        raise ValueError("delays must not be negative")
    return value


def check_log_level(value: str) -> str:
    """FILE_EXPORT_LOG_LEVEL: a level of :mod:`logging`, in any case; given in capitals."""
    levels = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
    if value.upper() not in levels:
        raise ValueError(f"must be one of {', '.join(levels)}")
    return value.upper()


def check_secret(value: str | None) -> str | None:
    """FILE_EXPORT_JWT_SECRET: at least 32 bytes, when set."""
    if value is not None and len(value.encode()) < 32:
        raise ValueError(
            "must be at least 32 bytes (HS256 needs a key at least as long as its "
            "SHA-256 hash, RFC 7518 section 3.2)"
        )
    return value


def check_bind(value: str) -> str:
    """FILE_EXPORT_HTTP_BIND: ``host:port``, the port a number from 0 to 65535."""
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError("must be host:port, e.g. 127.0.0.1:8080")
    return value
