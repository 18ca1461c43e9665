"""Table tests of the provider-check rule list (actors/core/provider/rules.py): the rules,
the requests a Provider must refuse, and what counts as a refusal."""

from __future__ import annotations

import json
from typing import Any

import pytest

from actors.core.provider.rules import PROBES, RULE_KEYS, RULES, is_refusal, tampered_token


def test_rules_are_unique_and_every_probe_tests_one_of_them() -> None:
    assert len(RULE_KEYS) == len(RULES)
    assert {probe.rule for probe in PROBES} <= RULE_KEYS


def test_probes_send_the_request_changed_as_described() -> None:
    body = {
        "tenantId": "7",
        "appCode": "PLATFORM",
        "requestedBy": "1",
        "limit": 50,
        "cursor": "2",
        "snapshotToken": "snap-1",
    }
    sent = {probe.what: probe.tamper(dict(body)) for probe in PROBES}
    assert "tenantId" not in json.loads(sent["a request without tenantId"])
    assert json.loads(sent['a request with tenantId "-1"'])["tenantId"] == "-1"
    assert sent["a body that is not JSON"] == b"not json"
    assert sent["a body that is a JSON array"] == b"[]"
    tampered = json.loads(sent["a later batch with a tampered snapshotToken"])
    assert tampered == {**body, "snapshotToken": "snap-0"}
    assert json.loads(sent["a request with a wrong service token"]) == body
    assert [p.what for p in PROBES if p.wrong_token] == ["a request with a wrong service token"]


@pytest.mark.parametrize(("token", "tampered"), [("v1.10.ab", "v1.10.a0"), ("x0", "x1"), ("", "0")])
def test_tampered_token(token: str, tampered: str) -> None:
    assert tampered_token(token) == tampered


@pytest.mark.parametrize(
    ("envelope", "refused"),
    [
        ({"code": "400", "message": "no"}, True),
        ({"code": 409}, True),
        ({"code": "200"}, False),
        ({"code": True}, False),
        ({"message": "no code"}, False),
        ([], False),
    ],
)
def test_is_refusal(envelope: Any, refused: bool) -> None:
    assert is_refusal(envelope) is refused
