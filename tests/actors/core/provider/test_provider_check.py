"""Table tests of the provider-check rules (actors/core/provider/check.py): each breach of
the contract fails exactly its rule, with the service's own message; a Provider that keeps
the contract passes every rule."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from actors.core.batch import ColumnDef, ColumnType, ProviderBatch
from actors.core.errors import (
    CursorNotAdvancingError,
    ExportError,
    LimitExceededError,
    ProviderContractError,
    ProviderUnavailableError,
)
from actors.core.provider.check import ProviderCheck
from actors.core.provider.rules import (
    PROBES,
    RULE_KEYS,
    RULES,
    Finding,
    Stage,
    Verdict,
    passed,
)

COLUMNS = (
    ColumnDef("id", "ID", ColumnType.INTEGER, 12),
    ColumnDef("amount", "Amount", ColumnType.DECIMAL),
)
LIMIT = 50


def batch(n: int, *, last: int = 3, **changes: Any) -> ProviderBatch:
    """Batch ``n`` (1-based) of a clean run of ``last`` batches of two rows."""
    base = ProviderBatch(
        schema_version=1,
        schema_hash="sha256:abc",
        snapshot_token="snap-1",
        columns=COLUMNS if n == 1 else None,
        rows=[{"id": 2 * n - 1, "amount": "1.50"}, {"id": 2 * n, "amount": 2}],
        next_cursor=str(2 * n),
        has_more=n < last,
        total_rows=2 * last,
    )
    return dataclasses.replace(base, **changes)


def run(*batches: ProviderBatch, read_rows: int = 10_000, max_rows: int = 1000) -> ProviderCheck:
    check = ProviderCheck("ORDER_LIST", max_rows=max_rows, batch_size=LIMIT, read_rows=read_rows)
    for b in batches:
        if not check.accept(b):
            break
    return check


def by_rule(findings: tuple[Finding, ...]) -> dict[str, Finding]:
    return {f.rule.key: f for f in findings}


REFUSED = ProviderContractError("provider p answered code 400: tenantId is required")


def refuse_all(check: ProviderCheck) -> None:
    for probe in PROBES:
        check.probed(probe, REFUSED, Stage.REFUSED)


def test_a_provider_that_keeps_the_contract_passes_every_rule() -> None:
    check = run(batch(1), batch(2), batch(3))
    check.rerun(batch(1))
    refuse_all(check)
    findings = check.findings()
    assert [f.rule.key for f in findings] == [r.key for r in RULES]
    assert {f.rule.key: f.verdict for f in findings} == dict.fromkeys(RULE_KEYS, Verdict.PASS)
    assert passed(findings)
    found = by_rule(findings)
    assert found["end"].detail == "hasMore false after 3 batches, 6 rows"
    assert found["cells"].detail == "12 cells fit their columns"
    assert found["tenant-fields"].detail.startswith(
        "a request without tenantId: refused (provider p answered code 400"
    )
    assert check.findings() == findings  # reading twice judges once


def test_the_rows_budget_stops_the_run_and_skips_its_end() -> None:
    check = run(batch(1), batch(2), batch(3), read_rows=3)
    found = by_rule(check.findings())
    assert (check.batches, check.rows) == (2, 4)
    assert found["end"].verdict is Verdict.SKIP
    assert found["end"].detail == (
        "stopped after 4 rows in 2 batches, as asked (--rows 3); the end of the export "
        "was not reached"
    )
    assert found["cursor"].verdict is Verdict.PASS


def test_a_single_batch_cannot_show_the_cursor_or_the_snapshot() -> None:
    found = by_rule(run(batch(1, last=1)).findings())
    for key in ("cursor", "snapshot-token", "schema-hash"):
        assert found[key].verdict is Verdict.SKIP
        assert found[key].detail.startswith("one batch only")
    assert found["end"].verdict is Verdict.PASS


def test_a_provider_without_snapshot_token_skips_that_rule_and_its_probe() -> None:
    check = run(*(batch(n, snapshot_token=None) for n in (1, 2, 3)))
    check.cannot_probe(PROBES[-1], "the first batch has no snapshotToken and nextCursor")
    found = by_rule(check.findings())
    assert found["snapshot-token"].verdict is Verdict.SKIP
    assert "no snapshotToken" in found["snapshot-token"].detail
    assert found["tampered-snapshot"].verdict is Verdict.SKIP


@pytest.mark.parametrize(
    ("batches", "rule", "message"),
    [
        (
            [batch(1, columns=None)],
            "fields",
            "batch 1: the first batch carries no columns",
        ),
        (
            [batch(1), batch(2, schema_hash="sha256:other")],
            "schema-hash",
            "batch 2: schemaHash changed between batches (sha256:abc -> sha256:other)",
        ),
        (
            [batch(1), batch(2, snapshot_token="snap-2")],
            "snapshot-token",
            "batch 2: snapshotToken changed between batches: it answered 'snap-2' after 'snap-1'",
        ),
        (
            [batch(1), batch(2, rows=[{"id": i} for i in range(LIMIT + 1)])],
            "limits",
            f"batch 2: batch has {LIMIT + 1} rows; the batch-size limit is {LIMIT} rows",
        ),
        (
            [batch(1, total_rows=1001)],
            "limits",
            "batch 1: provider announced totalRows 1001 in its first batch; export type "
            "ORDER_LIST allows at most max-rows 1000",
        ),
        (
            [batch(1), batch(2, next_cursor=None)],
            "cursor",
            "batch 2: provider answered hasMore with an empty nextCursor in batch 2",
        ),
        (
            [batch(1), batch(2, next_cursor="2")],
            "cursor",
            "batch 2: provider answered hasMore without advancing the cursor: batch 2 "
            "returned nextCursor '2', the cursor it was asked with",
        ),
        (
            [batch(1), batch(2), batch(3, next_cursor="2", has_more=True)],
            "cursor",
            "batch 3: provider cursor cycle: nextCursor '2' repeated after 3 batches",
        ),
        (
            [batch(1, rows=[{"id": 1, "amount": "abc"}, {"id": "x"}])],
            "cells",
            "batch 1 row 1 column amount: invalid DECIMAL value 'abc' written as text; the "
            "service counts it as a data warning (and 1 more)",
        ),
        (
            [batch(1, rows=[{"id": 1, "price": 3}])],
            "cells",
            "batch 1 row 1: key 'price' is not a declared column (ignored by the service and "
            "counted as a warning)",
        ),
    ],
)
def test_each_breach_fails_its_rule_with_the_services_message(
    batches: list[ProviderBatch], rule: str, message: str
) -> None:
    findings = run(*batches).findings()
    failed = {f.rule.key: f.detail for f in findings if f.verdict is Verdict.FAIL}
    assert list(failed) == [rule]
    assert failed[rule].startswith(message), failed[rule]
    assert not passed(findings)


def test_rules_a_stopped_run_never_reached_are_skipped_with_the_reason() -> None:
    found = by_rule(run(batch(1), batch(2, next_cursor=None)).findings())
    assert found["cursor"].verdict is Verdict.FAIL
    # Batch 1 was good, so the rules it shows passed; the end was never reached.
    assert found["fields"].verdict is Verdict.PASS
    assert found["end"].detail == "not reached: the run stopped at batch 2 (cursor)"
    assert found["snapshot-token"].verdict is Verdict.SKIP


@pytest.mark.parametrize(
    ("exc", "stage", "rule", "message"),
    [
        (
            ProviderUnavailableError("provider p answered HTTP 503"),
            Stage.HTTP,
            "answer",
            "batch 1: provider p answered HTTP 503 (transient: retried by the service)",
        ),
        (
            ProviderContractError("provider p answered HTTP 404: code 404: no route"),
            Stage.HTTP,
            "answer",
            "batch 1: provider p answered HTTP 404: code 404: no route (permanent by the service)",
        ),
        (
            ProviderContractError("provider p answered code 400: rowCount too big"),
            Stage.REFUSED,
            "answer",
            "batch 1: provider p answered code 400: rowCount too big (permanent",
        ),
        (
            ProviderContractError("provider p: hasMore is missing or not a boolean"),
            Stage.CONTENT,
            "fields",
            "batch 1: provider p: hasMore is missing or not a boolean",
        ),
        (
            LimitExceededError("provider response body exceeds the limit of 4 MB"),
            Stage.HTTP,
            "limits",
            "batch 1: provider response body exceeds the limit of 4 MB",
        ),
        (
            LimitExceededError("provider declared 101 columns; the limit is 100 columns"),
            Stage.CONTENT,
            "limits",
            "batch 1: provider declared 101 columns",
        ),
    ],
)
def test_a_failed_request_fails_the_rule_of_its_stage(
    exc: ExportError, stage: Stage, rule: str, message: str
) -> None:
    check = run()
    check.failed(exc, stage)
    found = by_rule(check.findings())
    assert found[rule].verdict is Verdict.FAIL
    assert found[rule].detail.startswith(message), found[rule].detail
    assert found["end"].detail == f"not reached: the run stopped at batch 1 ({rule})"


@pytest.mark.parametrize(
    ("outcome", "stage", "verdict", "message"),
    [
        (REFUSED, Stage.REFUSED, Verdict.PASS, "a request without tenantId: refused ("),
        (
            ProviderContractError("provider p answered HTTP 401"),
            Stage.HTTP,
            Verdict.PASS,
            "a request without tenantId: refused (provider p answered HTTP 401)",
        ),
        (
            batch(1),
            Stage.CONTENT,
            Verdict.FAIL,
            'a request without tenantId was accepted (code "200" with 2 rows); the Provider '
            "must refuse it",
        ),
        (
            ProviderUnavailableError("provider p answered HTTP 500"),
            Stage.HTTP,
            Verdict.FAIL,
            "a request without tenantId was answered as a transient failure, which the "
            "service retries: provider p answered HTTP 500",
        ),
        (
            ProviderContractError("provider p: rows is not a list of objects"),
            Stage.CONTENT,
            Verdict.FAIL,
            'a request without tenantId was answered code "200" with a malformed answer',
        ),
    ],
)
def test_a_probe_passes_only_when_refused_as_permanent(
    outcome: ProviderBatch | ExportError, stage: Stage, verdict: Verdict, message: str
) -> None:
    check = run(batch(1), batch(2), batch(3))
    probe = next(p for p in PROBES if p.what == "a request without tenantId")
    check.probed(probe, outcome, stage)
    finding = by_rule(check.findings())["tenant-fields"]
    assert finding.verdict is verdict
    assert finding.detail.startswith(message), finding.detail


@pytest.mark.parametrize(
    ("again", "verdict", "message"),
    [
        (batch(1), Verdict.PASS, "the same in a new run"),
        (
            batch(1, schema_hash="sha256:new"),
            Verdict.FAIL,
            "a new run with the same columns answered schemaHash 'sha256:new', the first "
            "run 'sha256:abc': the hash must stand for the columns",
        ),
        (
            batch(1, columns=COLUMNS[:1]),
            Verdict.FAIL,
            "a new run answered other columns with the same schemaHash 'sha256:abc'",
        ),
        (
            ProviderUnavailableError("provider p answered HTTP 503"),
            Verdict.PASS,  # the first run's batches still showed it; the rerun is noted
            "the same on 3 batches",
        ),
    ],
)
def test_schema_hash_across_runs(
    again: ProviderBatch | ExportError, verdict: Verdict, message: str
) -> None:
    check = run(batch(1), batch(2), batch(3))
    check.rerun(again)
    finding = by_rule(check.findings())["schema-hash"]
    assert finding.verdict is verdict
    assert message in finding.detail, finding.detail


def test_read_rows_must_be_positive() -> None:
    with pytest.raises(ValueError):
        ProviderCheck("T", max_rows=10, batch_size=50, read_rows=0)


def test_cursor_breach_class_is_the_services() -> None:
    """The cursor rule fails on what the service raises as CursorNotAdvancingError."""
    check = run(batch(1), batch(2, next_cursor=""))
    assert by_rule(check.findings())["cursor"].verdict is Verdict.FAIL
    assert issubclass(CursorNotAdvancingError, ExportError)
