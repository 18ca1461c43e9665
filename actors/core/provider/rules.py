"""The rules ``export-center provider-check`` holds a Provider to: a pure list.

docs/provider-guide.md explains every rule in words (section 8 lists them). :data:`RULES`
is the list, in report order; :data:`PROBES` are the requests a Provider must refuse, each
made from the well-formed request; :class:`Finding` is one rule's verdict. How each rule is
judged from what the Provider answered is :class:`actors.core.provider.check.ProviderCheck`;
the command that makes the requests is ``actors/cli/provider.py``. Pure: no IO.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from actors.core.provider.contract import SUCCESS_CODE


class Verdict(StrEnum):
    """The result of one rule."""

    PASS = "PASS"
    FAIL = "FAIL"
    #: Not judged: the check never reached what the rule needs (the detail says why).
    SKIP = "SKIP"


class Stage(StrEnum):
    """Where a request failed, which tells the rule that broke."""

    #: Transport, HTTP status or body size: nothing of the answer was decoded.
    HTTP = "http"
    #: An envelope whose ``code`` is not ``"200"``: the Provider refused the request.
    REFUSED = "refused"
    #: A ``"200"`` envelope whose ``data`` breaks the contract.
    CONTENT = "content"


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule of the report.

    Attributes:
        key: short name, shown in the report and used by ``--json``.
        title: what the rule asserts, in one sentence.
        guide: the part of docs/provider-guide.md that explains it.
    """

    key: str
    title: str
    guide: str


RULES: tuple[Rule, ...] = (
    Rule(
        "answer",
        'every well-formed request is answered HTTP 200 with code "200"',
        "5. What your errors do to the task",
    ),
    Rule(
        "fields",
        "every answer has the contract's fields and types: schemaVersion 1, schemaHash, "
        "snapshotToken, columns (on the first batch), rows, nextCursor, hasMore, totalRows",
        "3. The answer",
    ),
    Rule(
        "cells",
        "every cell fits its column's type and every row key is a declared column",
        "Cell types",
    ),
    Rule(
        "limits",
        "rows <= limit per batch, <= 100 columns, body <= 4 MB, the first totalRows <= "
        "max-rows, at most 2 x ceil(max-rows / batch-size) + 100 batches",
        "4. Rules across batches",
    ),
    Rule(
        "cursor",
        "nextCursor moves forward: never empty with hasMore, never a cursor already sent, "
        "at most 100 empty batches in a row",
        "4. Rules across batches",
    ),
    Rule("end", "the export ends with a batch whose hasMore is false", "3. The answer"),
    Rule(
        "snapshot-token",
        "the first batch mints a snapshotToken and no later batch changes it",
        "4. Rules across batches",
    ),
    Rule(
        "schema-hash",
        "schemaHash is the same on every batch, and in a new run with the same columns",
        "3. The answer",
    ),
    Rule(
        "tampered-snapshot",
        "a snapshotToken the Provider did not mint is refused",
        "4. Rules across batches",
    ),
    Rule(
        "service-token",
        "a request with a wrong X-Internal-Service-Token is refused",
        "2. The request",
    ),
    Rule(
        "tenant-fields",
        "a request without tenantId, appCode or requestedBy, or with a negative tenantId, "
        "is refused",
        "2. The request",
    ),
    Rule(
        "error-answers",
        "a body that is not a JSON object is refused as permanent (HTTP 4xx or an envelope "
        "error code), never with a 5xx or 429 that the service would retry",
        "5. What your errors do to the task",
    ),
)
RULE_KEYS = frozenset(rule.key for rule in RULES)
#: The service token the ``service-token`` probe sends instead of the right one.
WRONG_SERVICE_TOKEN = "provider-check-wrong-token"


def _json(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _without(name: str) -> Callable[[dict[str, Any]], bytes]:
    return lambda body: _json({k: v for k, v in body.items() if k != name})


def _with(name: str, value: Any) -> Callable[[dict[str, Any]], bytes]:
    return lambda body: _json({**body, name: value})


def tampered_token(token: str) -> str:
    """``token`` with its last character changed: what a Provider that signs or looks up
    its tokens cannot mistake for its own."""
    last = token[-1:]
    return token[:-1] + ("1" if last == "0" else "0")


@dataclass(frozen=True, slots=True)
class Probe:
    """A request the Provider must refuse.

    Attributes:
        rule: the key of the rule it tests.
        what: the request, in words ("a request without tenantId").
        tamper: the body sent, made from the well-formed request body (a dict in the
            contract's camelCase).
        wrong_token: send :data:`WRONG_SERVICE_TOKEN` as the service token.
        later_batch: sent as the request for batch 2 (with the first answer's cursor and
            its snapshot token, tampered by ``tamper``) rather than as a first request.
    """

    rule: str
    what: str
    tamper: Callable[[dict[str, Any]], bytes] = _json
    wrong_token: bool = False
    later_batch: bool = False


PROBES: tuple[Probe, ...] = (
    Probe("service-token", "a request with a wrong service token", wrong_token=True),
    Probe("tenant-fields", "a request without tenantId", _without("tenantId")),
    Probe("tenant-fields", "a request without appCode", _without("appCode")),
    Probe("tenant-fields", "a request without requestedBy", _without("requestedBy")),
    Probe("tenant-fields", 'a request with tenantId "-1"', _with("tenantId", "-1")),
    Probe("error-answers", "a body that is not JSON", lambda _: b"not json"),
    Probe("error-answers", "a body that is a JSON array", lambda _: b"[]"),
    Probe(
        "tampered-snapshot",
        "a later batch with a tampered snapshotToken",
        lambda body: _json({**body, "snapshotToken": tampered_token(body["snapshotToken"])}),
        later_batch=True,
    ),
)


def is_refusal(envelope: Any) -> bool:
    """True when a decoded answer is an envelope with an error ``code``: the Provider
    refused the request (as opposed to answering ``"200"`` with a broken ``data``)."""
    if not isinstance(envelope, dict):
        return False
    code = envelope.get("code")
    return isinstance(code, str | int) and not isinstance(code, bool) and str(code) != SUCCESS_CODE


@dataclass(frozen=True, slots=True)
class Finding:
    """The verdict of one rule, with what was seen, in words."""

    rule: Rule
    verdict: Verdict
    detail: str


def passed(findings: tuple[Finding, ...]) -> bool:
    """True when no rule failed (skipped rules do not fail the check)."""
    return all(f.verdict is not Verdict.FAIL for f in findings)
