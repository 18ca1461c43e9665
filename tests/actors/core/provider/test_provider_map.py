"""Provider map validation (actors/core/provider/provider_map.py): one table row per rule, on
already-loaded YAML documents.

The allowlist rule (docs/design-rules.md §10.3 in docs/design-rules.md: Provider service names are
fixed at process start) is the ``services`` rows: a reload may move a service or change its
token, never add or drop one. Reading and reloading the file is in
tests/actors/plumbing/test_provider_map_source.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from actors.core.errors import ProviderMapError
from actors.core.provider.provider_map import (
    MAX_TOKEN_LENGTH,
    ProviderEndpoint,
    ProviderMap,
    base_url_problem,
    parse_provider_map,
    provider_map_fingerprint,
)

SERVICES = frozenset({"iam-service", "order-service"})


def doc(**entries: Any) -> dict[str, Any]:
    """``providers:`` with ``iam-service`` and ``order-service`` (each a valid entry),
    overridden by ``entries`` (python names: iam_service=…); ``...`` drops one."""
    providers: dict[str, Any] = {
        "iam-service": {"url": "http://iam.internal:8080", "token": "iam-token"},
        "order-service": {"url": "https://orders.internal/api"},
    }
    for name, entry in entries.items():
        key = name.replace("_", "-")
        if entry is ...:
            providers.pop(key)
        else:
            providers[key] = entry
    return {"providers": providers}


URL_KEY = "providers.iam-service.url"
TOKEN_KEY = "providers.iam-service.token"


def url(value: Any, rule: str) -> tuple[Any, None, bool, str, str]:
    """A table row: ``iam-service`` at ``value`` is refused with ``rule``."""
    return doc(iam_service={"url": value}), None, True, URL_KEY, rule


def token(value: Any, rule: str) -> tuple[Any, None, bool, str, str]:
    """A table row: ``iam-service`` with token ``value`` is refused with ``rule``."""
    return doc(iam_service={"url": "http://i", "token": value}), None, True, TOKEN_KEY, rule


def test_a_valid_map_keeps_urls_tokens_and_order() -> None:
    parsed = parse_provider_map(doc(), services=None, default_token=True)

    assert list(parsed.endpoints) == ["iam-service", "order-service"]
    assert parsed.get("iam-service") == ProviderEndpoint("http://iam.internal:8080", "iam-token")
    assert parsed.get("order-service") == ProviderEndpoint("https://orders.internal/api", None)
    assert parsed.get("warehouse-service") is None
    assert parsed.services == SERVICES


def test_a_reload_with_the_same_names_may_move_a_service_and_change_its_token() -> None:
    moved = doc(iam_service={"url": "http://iam-2.internal:9090", "token": "new-token"})

    parsed = parse_provider_map(moved, services=SERVICES, default_token=True)

    assert parsed.get("iam-service") == ProviderEndpoint("http://iam-2.internal:9090", "new-token")


@pytest.mark.parametrize(
    ("document", "services", "default_token", "key", "rule"),
    [
        # the document
        (["iam-service"], None, True, "<document>", "must be a mapping"),
        (None, None, True, "<document>", "must be a mapping, got null"),
        ({"providers": {}, "extra": 1}, None, True, "extra", "unknown top-level key"),
        ({}, None, True, "providers", "is required"),
        ({"providers": ["a"]}, None, True, "providers", "must be a mapping"),
        # service names
        (doc(**{"bad name": {"url": "http://x"}}), None, True, "providers.bad name", "1-64"),
        (doc(**{"-lead": {"url": "http://x"}}), None, True, "providers.-lead", "1-64"),
        (doc(**{"a" * 65: {"url": "http://x"}}), None, True, "providers." + "a" * 65, "1-64"),
        # entries
        (doc(iam_service="http://iam"), None, True, "providers.iam-service", "mapping with 'url'"),
        (doc(iam_service={"token": "t"}), None, True, "providers.iam-service.url", "is required"),
        (
            doc(iam_service={"url": "http://iam", "ulr": "x"}),
            None,
            True,
            "providers.iam-service.ulr",
            "unknown key 'ulr'",
        ),
        # malformed URLs
        url(8080, "string"),
        url("", "empty"),
        url("http://[::1", "valid"),
        url("http://a b", "space"),
        url("http://iam:99999", "not a valid URL"),
        url("http://iam:0", "0"),
        url("http://", "no host"),
        url("iam:8080", "http"),
        url("http://iam/x?a=1", "query"),
        url("http://iam/#f", "fragment"),
        # non-http schemes
        url("file:///etc/passwd", "must be an http:// or https:// URL"),
        url("ftp://iam/", "http"),
        url("gopher://x", "http"),
        # tokens
        (
            doc(order_service={"url": "http://o"}),
            None,
            False,  # no INTERNAL_SERVICE_TOKEN to fall back on: missing token
            "providers.order-service.token",
            "is required when INTERNAL_SERVICE_TOKEN is not set",
        ),
        token(5, "string"),
        token("", "visible"),
        token("a\r\nX: 1", "header"),
        token("a b", "visible"),
        token("t" * (MAX_TOKEN_LENGTH + 1), "visible"),
        # the allowlist fixed at start: unknown name added, known name dropped
        (
            doc(warehouse_service={"url": "http://169.254.169.254"}),
            SERVICES,
            True,
            "providers.warehouse-service",
            "not in the allowlist fixed at start-up (iam-service, order-service)",
        ),
        (doc(order_service=...), SERVICES, True, "providers", "order-service fixed at start-up"),
    ],
)
def test_a_broken_rule_names_its_key(
    document: Any, services: frozenset[str] | None, default_token: bool, key: str, rule: str
) -> None:
    with pytest.raises(ProviderMapError) as caught:
        parse_provider_map(document, services=services, default_token=default_token)

    assert caught.value.key == key
    assert rule in caught.value.rule


def test_an_error_never_quotes_a_token_or_url_credentials() -> None:
    with pytest.raises(ProviderMapError) as bad_token:
        parse_provider_map(
            doc(iam_service={"url": "http://i", "token": "s3cret value"}),
            services=None,
            default_token=True,
        )
    with pytest.raises(ProviderMapError) as bad_url:
        parse_provider_map(
            doc(iam_service={"url": "ftp://user:s3cret@iam/"}), services=None, default_token=True
        )

    assert "s3cret" not in str(bad_token.value)
    assert "s3cret" not in str(bad_url.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080",
        "https://orders.internal/api/",
        "http://user:pw@iam.internal",
        "HTTP://IAM",
        "http://[::1]:8080",
    ],
)
def test_usable_base_urls_have_no_problem(url: str) -> None:
    assert base_url_problem(url) is None


def test_the_fingerprint_tells_a_token_change_without_revealing_the_token() -> None:
    one = parse_provider_map(doc(), services=None, default_token=True)
    same = parse_provider_map(doc(), services=None, default_token=True)
    new_token = parse_provider_map(
        doc(iam_service={"url": "http://iam.internal:8080", "token": "other"}),
        services=None,
        default_token=True,
    )

    assert provider_map_fingerprint(one) == provider_map_fingerprint(same)
    assert provider_map_fingerprint(one) != provider_map_fingerprint(new_token)
    assert "iam-token" not in repr(one)
    assert provider_map_fingerprint(ProviderMap()) != provider_map_fingerprint(one)
