"""The request rewrites provider-check makes (``actors/pipeline/provider/fetch.py``):
:meth:`FetchSpec.with_header` and :meth:`FetchSpec.with_body` change one part of a frozen
request and keep the rest."""

from __future__ import annotations

from typing import Any

from actors.pipeline.provider.fetch import FetchSpec
from tests.actors.pipeline.provider.helpers import SPEC


def test_with_header_replaces_a_header_in_any_case_and_keeps_the_rest() -> None:
    lower = SPEC.with_header("x-internal-service-token", "wrong")
    assert lower.headers == (
        ("Content-Type", "application/json"),
        ("x-internal-service-token", "wrong"),
    )
    added = SPEC.with_header("traceparent", "00-abc")
    assert added.headers == (*SPEC.headers, ("traceparent", "00-abc"))
    assert (lower.url, lower.body, lower.request_timeout) == (SPEC.url, SPEC.body, 60.0)


def test_with_body_replaces_only_the_body() -> None:
    changed = SPEC.with_body(b"not json")
    assert changed.body == b"not json"
    assert changed == FetchSpec(**{**_fields(SPEC), "body": b"not json"})
    assert SPEC.body == b'{"limit":2}'  # frozen: the original is unchanged


def _fields(spec: FetchSpec) -> dict[str, Any]:
    return {name: getattr(spec, name) for name in FetchSpec.__slots__}
