"""``export-center provider-check`` over real HTTP: the demo Provider and the guide's example
pass every rule; Providers broken one way each fail exactly that rule, with a precise
message, and the command exits 1.

The broken Providers are the guide's example (examples/provider/minimal_provider.py) with
one thing changed, served by the standard library's WSGI server on a thread of the test."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from actors.cli.main import main
from actors.cli.provider import tampered
from actors.core.provider.rules import PROBES, RULES, WRONG_SERVICE_TOKEN
from actors.pipeline.provider.fetch import FetchSpec
from tests.actors.cli.broken_providers import (
    always,
    data_change,
    example,
    extra_row,
    failing_non_json_with_500,
    first_row,
    ignoring_the_service_token,
    later,
    many_columns,
    new_hash_per_run,
    not_checking_snapshot_tokens,
    not_checking_tenant_fields,
    pop_field,
    serve,
    set_field,
    stuck_cursor,
)
from tests.processes import demo_provider_process, example_provider_process

TOKEN = "provider-check-token"
Envelope = dict[str, Any]
App = Callable[..., list[bytes]]


def provider_check(url: str, export_type: str, *args: str) -> tuple[int, list[dict[str, str]]]:
    """Run the command as a user would (through the CLI group); its exit code and findings."""
    result = CliRunner().invoke(
        main,
        ["provider-check", url, "--type", export_type, "--token", TOKEN, "--json", *args],
        catch_exceptions=False,
    )
    return result.exit_code, json.loads(result.stdout)  # progress lines go to stderr


def verdicts(findings: list[dict[str, str]]) -> dict[str, str]:
    return {f["rule"]: f["verdict"] for f in findings}


@pytest.fixture(scope="module")
def demo_provider_url() -> Iterator[str]:
    """One demo Provider process for the module: it keeps no state between checks."""
    with demo_provider_process(TOKEN) as (_, url):
        yield url


def test_the_demo_provider_passes_every_rule(demo_provider_url: str) -> None:
    code, findings = provider_check(demo_provider_url, "CUSTOMER_LIST")
    assert verdicts(findings) == {rule.key: "PASS" for rule in RULES}, findings
    assert code == 0
    found = {f["rule"]: f["detail"] for f in findings}
    assert found["end"] == "hasMore false after 10 batches, 1000 rows"


def test_the_example_provider_passes_every_rule(tmp_path: Path) -> None:
    with example_provider_process(TOKEN, tmp_path / "provider.log") as url:
        code, findings = provider_check(url, "ORDER_LIST", "--tenant", "7")
    assert verdicts(findings) == {rule.key: "PASS" for rule in RULES}, findings
    assert code == 0


def test_the_table_names_every_rule_and_the_totals(demo_provider_url: str) -> None:
    result = CliRunner().invoke(
        main,
        ["provider-check", demo_provider_url, "--type", "CUSTOMER_LIST", "--token", TOKEN],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "10 batches, 1000 rows read" in result.output
    for rule in RULES:
        assert re.search(rf"│ {re.escape(rule.key)} +│ PASS", result.output), rule.key
    assert "12 passed, 0 failed, 0 skipped" in result.output


def test_a_stopped_run_skips_what_it_did_not_reach(demo_provider_url: str) -> None:
    code, findings = provider_check(
        demo_provider_url, "CUSTOMER_LIST", "--rows", "150", "--batch-size", "100"
    )
    assert code == 0, findings  # a skip is no failure
    end = next(f for f in findings if f["rule"] == "end")
    assert end["verdict"] == "SKIP"
    assert end["detail"].startswith("stopped after 200 rows in 2 batches, as asked (--rows 150)")


# --- broken Providers (tests/actors/cli/broken_providers.py) ----------------------------

BROKEN: list[tuple[str, Callable[[], App], str, str]] = [
    (
        "wrong schemaVersion",
        lambda: data_change(set_field("schemaVersion", 2)),
        "fields",
        "batch 1: provider {url}: unsupported schemaVersion 2",
    ),
    (
        "hasMore missing",
        lambda: data_change(pop_field("hasMore")),
        "fields",
        "batch 1: provider {url}: hasMore is missing or not a boolean",
    ),
    (
        "a word in a DECIMAL column",
        lambda: data_change(first_row("amount", "twelve")),
        "cells",
        "batch 1 row 1 column amount: invalid DECIMAL value 'twelve' written as text",
    ),
    (
        "a row key that is no column",
        lambda: data_change(first_row("discount", 5)),
        "cells",
        "batch 1 row 1: key 'discount' is not a declared column",
    ),
    (
        "one row more than the limit",
        lambda: data_change(extra_row),
        "limits",
        "batch 1: batch has 101 rows; the batch-size limit is 100 rows",
    ),
    (
        "totalRows over max-rows",
        lambda: data_change(set_field("totalRows", 300_000)),
        "limits",
        "batch 1: provider announced totalRows 300000 in its first batch; export type "
        "ORDER_LIST allows at most max-rows 200000",
    ),
    (
        "a body over 4 MB",
        lambda: data_change(first_row("amount", "9" * (5 * 1024 * 1024))),
        "limits",
        "batch 1: provider response body exceeds the limit of 4 MB (4194304 bytes;",
    ),
    (
        "101 columns",
        lambda: data_change(many_columns),
        "limits",
        "batch 1: provider declared 101 columns; the limit is 100 columns",
    ),
    (
        "a cursor that does not move",
        lambda: data_change(stuck_cursor),
        "cursor",
        "batch 2: provider answered hasMore without advancing the cursor: batch 2 returned "
        "nextCursor '100', the cursor it was asked with",
    ),
    (
        "hasMore without nextCursor",
        lambda: data_change(set_field("nextCursor", None)),
        "cursor",
        "batch 1: provider answered hasMore with an empty nextCursor in batch 1",
    ),
    (
        "a new snapshot token on later batches",
        lambda: data_change(later(lambda data: data.update(snapshotToken="250.other"))),
        "snapshot-token",
        "batch 2: snapshotToken changed between batches: it answered '250.other' after '250.",
    ),
    (
        "another schemaHash on later batches",
        lambda: data_change(later(lambda data: data.update(schemaHash="sha256:changed"))),
        "schema-hash",
        "batch 2: schemaHash changed between batches (sha256:",
    ),
    (
        "a new schemaHash in every run",
        new_hash_per_run,
        "schema-hash",
        "a new run with the same columns answered schemaHash 'run-2', the first run 'run-1': "
        "the hash must stand for the columns",
    ),
    (
        "any snapshot token accepted",
        not_checking_snapshot_tokens,
        "tampered-snapshot",
        'a later batch with a tampered snapshotToken was accepted (code "200" with 100 rows)',
    ),
    (
        "any service token accepted",
        ignoring_the_service_token,
        "service-token",
        'a request with a wrong service token was accepted (code "200" with 100 rows); the '
        "Provider must refuse it",
    ),
    (
        "missing tenant fields default to tenant 0",
        not_checking_tenant_fields,
        "tenant-fields",
        'a request without tenantId was accepted (code "200" with 100 rows); the Provider '
        "must refuse it (and 3 more)",
    ),
    (
        "HTTP 500 for a body that is not JSON",
        failing_non_json_with_500,
        "error-answers",
        "a body that is not JSON was answered as a transient failure, which the service "
        "retries: provider {url} answered HTTP 500",
    ),
]


@pytest.mark.parametrize(
    ("make_app", "rule", "message"),
    [pytest.param(make, rule, message, id=name) for name, make, rule, message in BROKEN],
)
def test_a_provider_broken_one_way_fails_that_rule_precisely(
    make_app: Callable[[], App], rule: str, message: str
) -> None:
    with serve(make_app()) as url:
        code, findings = provider_check(url, "ORDER_LIST", "--tenant", "7")
    failed = {f["rule"]: f["detail"] for f in findings if f["verdict"] == "FAIL"}
    assert list(failed) == [rule], findings
    assert failed[rule].startswith(message.format(url=url)), failed[rule]
    assert code == 1


def test_a_provider_that_is_down_fails_the_answer_rule_and_skips_the_rest() -> None:
    with serve(always("503 Service Unavailable")) as url:
        code, findings = provider_check(url, "ORDER_LIST")
    found = verdicts(findings)
    assert found["answer"] == "FAIL"
    assert findings[0]["detail"] == (
        f"batch 1: provider {url} answered HTTP 503 (transient: retried by the service)"
    )
    for key in ("fields", "cells", "limits", "cursor", "end", "snapshot-token"):
        assert found[key] == "SKIP", key
    assert code == 1


@pytest.mark.parametrize("answer", ["401 Unauthorized", "404 Not Found"])
def test_refusals_prove_nothing_when_the_well_formed_request_is_refused_too(answer: str) -> None:
    """A wrong --token, or a URL that is not a Provider, refuses everything: the probes
    that want a refusal are skipped, not passed, and no probe request is sent."""
    requests: list[str] = []

    def refusing(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        requests.append(environ["PATH_INFO"])
        start_response(answer, [("Content-Type", "application/json")])
        return [b'{"code": "401", "message": "no", "data": null}']

    with serve(refusing) as url:
        code, findings = provider_check(url, "ORDER_LIST")
    found = verdicts(findings)
    assert found["answer"] == "FAIL"
    for key in ("service-token", "tenant-fields", "error-answers", "tampered-snapshot"):
        assert found[key] == "SKIP", (key, findings)
    assert "PASS" not in found.values()
    assert len(requests) == 1  # the first batch only
    assert code == 1


def test_a_wrong_export_type_is_the_providers_404(tmp_path: Path) -> None:
    with example_provider_process(TOKEN, tmp_path / "provider.log") as url:
        code, findings = provider_check(url, "CUSTOMER_LIST")
    assert findings[0] == {
        "rule": "answer",
        "verdict": "FAIL",
        "detail": f"batch 1: provider {url} answered HTTP 404: code 404: no route "
        "/internal/exports/v1/CUSTOMER_LIST/batches (permanent by the service)",
    }
    assert code == 1


def test_the_probe_sends_the_wrong_token_alone() -> None:
    """The request of the service-token probe carries one token header, the wrong one."""
    seen: list[list[str]] = []
    module = example()

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        seen.append([environ.get("HTTP_X_INTERNAL_SERVICE_TOKEN", "")])
        result: list[bytes] = module.app(environ, start_response)
        return result

    with serve(app) as url:
        code, findings = provider_check(url, "ORDER_LIST")
    assert verdicts(findings)["service-token"] == "PASS", findings
    # wsgiref joins repeated headers with a comma; one value means one header.
    assert [WRONG_SERVICE_TOKEN] in seen
    assert all("," not in values[0] for values in seen)


def test_a_probe_rewrites_the_built_request_and_keeps_the_rest() -> None:
    """What a probe sends is the request the client built (URL, headers, timeouts, limit)
    with its body rewritten and, for the service-token probe, the token swapped."""
    spec = FetchSpec(
        service="http://p",
        url="http://p/internal/exports/v1/ORDER_LIST/batches",
        body=b'{"tenantId":"7","appCode":"PLATFORM","limit":100}',
        headers=(
            ("X-Internal-Service-Token", TOKEN),
            ("Content-Type", "application/json"),
            ("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        ),
        connect_timeout=3.0,
        read_timeout=15.0,
        request_timeout=60.0,
        max_response_bytes=4 * 1024 * 1024,
    )
    (without,) = [p for p in PROBES if p.what == "a request without tenantId"]
    changed = tampered(spec, without)
    assert json.loads(changed.body) == {"appCode": "PLATFORM", "limit": 100}
    assert changed.with_body(spec.body) == spec  # nothing else changed
    (wrong,) = [p for p in PROBES if p.wrong_token]
    changed = tampered(spec, wrong)
    assert json.loads(changed.body) == json.loads(spec.body)
    tokens = [v for k, v in changed.headers if k.lower() == "x-internal-service-token"]
    assert tokens == [WRONG_SERVICE_TOKEN]
    assert [h for h in changed.headers if h[0] != "X-Internal-Service-Token"] == list(
        spec.headers[1:]
    )
    assert (changed.url, changed.request_timeout) == (spec.url, spec.request_timeout)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--type", "order list"], "is not an export type"),
        (["--type", "T", "--parameters", "[1]"], "must be a JSON object"),
        (["--type", "T", "--batch-size", "10"], "10 is not in the range 50<=x<=1000"),
        (["--type", "T", "--url", "not a url"], "is not an http:// or https:// base URL"),
        (["--type", "T", "--url", "ftp://x/"], "is not an http:// or https:// base URL"),
        (["--type", "T", "--url", "http://"], "is not an http:// or https:// base URL"),
    ],
)
def test_bad_options_are_one_line_errors(args: list[str], message: str) -> None:
    url = "http://127.0.0.1:9"
    if "--url" in args:  # the URL argument itself under test
        at = args.index("--url")
        url, args = args[at + 1], args[:at] + args[at + 2 :]
    result = CliRunner().invoke(main, ["provider-check", url, "--token", TOKEN, *args])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output
