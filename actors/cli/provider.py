"""``export-center provider-check URL --type T``: call a Provider the way the service does
and report, rule by rule, whether it keeps the contract of docs/provider-guide.md.

The requests are built by the service's own code
(:class:`actors.pipeline.provider.check_client.ProviderCheckClient`, which shares the export
client's request building: the same headers, timeouts, 4 MB streaming limit, status
mapping and decoder) and its one HTTP client, the urllib3 code
an export worker sends its batches with (:mod:`actors.pipeline.provider.http`, here from a
thread), and every outcome is judged by :class:`actors.core.provider.check.ProviderCheck`,
which applies the service's own checks. The requests a Provider must refuse
(:data:`actors.core.provider.rules.PROBES`) are the well-formed request the client built,
changed just before it is sent (:func:`tampered`), so even they take the service's code
path.

What it sends: one export run from the first batch until ``hasMore`` is false or ``--rows``
rows are read, the first batch of a second run (schemaHash stability), then one request
per probe. A check of the demo Provider reads its 1,000 default rows in 10 requests.
"""

from __future__ import annotations

import json
import re
import sys
import urllib.parse
from collections.abc import Callable
from functools import partial
from typing import Any

import click
import trio

from actors.core.batch import ProviderBatch
from actors.core.definitions import ExportDefinition
from actors.core.errors import ExportError, ProviderContractError
from actors.core.principal import AppCode
from actors.core.provider.check import ProviderCheck
from actors.core.provider.contract import MAX_COLUMNS, SERVICE_TOKEN_HEADER, batches_path
from actors.core.provider.request import MAX_ID, BatchRequest
from actors.core.provider.rules import (
    PROBES,
    WRONG_SERVICE_TOKEN,
    Finding,
    Probe,
    Stage,
    Verdict,
    is_refusal,
    passed,
)
from actors.core.registry import BATCH_SIZE_RANGE, MAX_ROWS_RANGE
from actors.core.text import quote_outside
from actors.pipeline.provider.check_client import ProviderCheckClient
from actors.pipeline.provider.decode import parse_batch_response
from actors.pipeline.provider.fetch import FetchSpec

#: The task id the requests carry (a Provider only logs it).
CHECK_TASK_ID = 1
#: Decoded with no row bound: the ``limits`` rule holds each batch to ``--batch-size``
#: itself, so a long batch is reported as a limit, not as a malformed answer.
_UNBOUNDED_ROWS = sys.maxsize
#: An export type as the registry spells it (actors/core/registry.py).
_EXPORT_TYPE = re.compile(r"[A-Z0-9_]+")


class _Decoder:
    """The service's decoder (:func:`parse_batch_response`), noting the :class:`Stage`
    a request reached: set to ``HTTP`` before each request, ``CONTENT`` once a body
    arrived, ``REFUSED`` when that body is an envelope with an error code."""

    def __init__(self) -> None:
        self.stage = Stage.HTTP

    def __call__(self, raw: bytes, *, service: str, limit: int, max_columns: int) -> ProviderBatch:
        self.stage = Stage.CONTENT
        try:
            return parse_batch_response(
                raw, service=service, limit=_UNBOUNDED_ROWS, max_columns=max_columns
            )
        except ProviderContractError:
            try:
                if is_refusal(json.loads(raw)):
                    self.stage = Stage.REFUSED
            except (ValueError, RecursionError):
                pass  # not JSON: a malformed answer, CONTENT
            raise


def tampered(spec: FetchSpec, probe: Probe) -> FetchSpec:
    """The request ``spec`` as ``probe`` sends it: its body rewritten by ``probe.tamper``
    from the well-formed one, and :data:`WRONG_SERVICE_TOKEN` in place of the service
    token when the probe asks for it. URL, other headers, timeouts and limits are kept.

    Args:
        spec: the well-formed request, as :meth:`ProviderCheckClient.fetch_spec` built it.
        probe: the request the Provider must refuse.

    Returns:
        The request to send.
    """
    changed = spec.with_body(probe.tamper(json.loads(spec.body)))
    if probe.wrong_token:
        changed = changed.with_header(SERVICE_TOKEN_HEADER, WRONG_SERVICE_TOKEN)
    return changed


async def check_provider(
    url: str,
    definition: ExportDefinition,
    *,
    token: str,
    tenant_id: int,
    app_code: str,
    requested_by: int,
    parameters: dict[str, Any],
    read_rows: int,
    progress: Callable[[str], None] = lambda what: None,
) -> ProviderCheck:
    """Make every request of the check and judge them.

    Args:
        url: the Provider's base URL (``definition.provider_path`` is appended).
        definition: the registry entry the check assumes (``batch_size`` is the ``limit``
            sent, ``max_rows`` the bound of the ``limits`` rule).
        token: the ``X-Internal-Service-Token`` the Provider expects.
        tenant_id, app_code, requested_by: the tenant fields of every request.
        parameters: the business parameters of every request.
        read_rows: stop the run after the batch that reaches this many rows.
        progress: told what each request is before it is sent (for a progress line).

    Returns:
        The judged check; read :meth:`ProviderCheck.findings`.
    """
    check = ProviderCheck(
        definition.export_type,
        max_rows=definition.max_rows,
        batch_size=definition.batch_size,
        read_rows=read_rows,
    )

    def request(cursor: str | None, snapshot_token: str | None) -> BatchRequest:
        return BatchRequest(
            task_id=CHECK_TASK_ID,
            tenant_id=tenant_id,
            app_code=app_code,
            requested_by=requested_by,
            dispatch_version=1,
            parameters=parameters,
            cursor=cursor,
            snapshot_token=snapshot_token,
            limit=definition.batch_size,
        )

    # The URL is the service's name too: messages say "provider <url> answered …".
    client = ProviderCheckClient({url: url}, token, max_columns=MAX_COLUMNS)

    async def fetch(
        body: BatchRequest, probe: Probe | None = None
    ) -> tuple[ProviderBatch | ExportError, Stage]:
        decoder = _Decoder()
        try:
            batch = await client.fetch_batch(
                definition,
                body,
                decode=decoder,
                tamper=None if probe is None else partial(tampered, probe=probe),
            )
        except ExportError as exc:
            return exc, decoder.stage
        return batch, decoder.stage

    try:
        cursor: str | None = None
        while True:
            progress(f"batch {check.batches + 1}")
            outcome, stage = await fetch(request(cursor, check.next_token))
            if isinstance(outcome, ExportError):
                check.failed(outcome, stage)
                break
            if not check.accept(outcome):
                break
            cursor = outcome.next_cursor
        first = check.first
        if first is not None:
            progress("a second run's first request")
            check.rerun((await fetch(request(None, None)))[0])
        for probe in PROBES:
            if first is None:
                # The well-formed request got no batch: a refusal of a broken one would
                # prove nothing (a 401 for a wrong --token, a URL that is not a Provider).
                check.cannot_probe(probe, "the well-formed request was not answered with a batch")
                continue
            progress(probe.what)
            if probe.later_batch:
                if first is None or first.snapshot_token is None or first.next_cursor is None:
                    check.cannot_probe(
                        probe, "the first batch has no snapshotToken and nextCursor to send"
                    )
                    continue
                body = request(first.next_cursor, first.snapshot_token)
            else:
                body = request(None, None)
            outcome, stage = await fetch(body, probe)
            check.probed(probe, outcome, stage)
    finally:
        await client.aclose()
    return check


def _print_report(
    url: str, export_type: str, check: ProviderCheck, findings: tuple[Finding, ...]
) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    colours = {Verdict.PASS: "green", Verdict.FAIL: "bold red", Verdict.SKIP: "yellow"}
    table = Table(
        title=f"provider-check {export_type} at {url}: {check.batches} batches, "
        f"{check.rows} rows read",
        show_lines=True,
    )
    table.add_column("rule", no_wrap=True)
    table.add_column("result", no_wrap=True)
    table.add_column("what it checks / what was found")
    for finding in findings:
        table.add_row(
            finding.rule.key,
            Text(finding.verdict.value, style=colours[finding.verdict]),
            Text.assemble((finding.rule.title, "dim"), "\n", finding.detail),
        )
    console = Console()
    console.print(table)
    failed = sum(f.verdict is Verdict.FAIL for f in findings)
    skipped = sum(f.verdict is Verdict.SKIP for f in findings)
    console.print(
        f"{len(findings) - failed - skipped} passed, {failed} failed, {skipped} skipped "
        "(docs/provider-guide.md explains each rule)"
    )


def _parameters(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--parameters") from None
    if not isinstance(value, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--parameters")
    return value


@click.command("provider-check")
@click.argument("url")
@click.option("--type", "export_type", required=True, help="the export type, e.g. ORDER_LIST")
@click.option(
    "--token",
    envvar="INTERNAL_SERVICE_TOKEN",
    show_envvar=True,
    required=True,
    help="the X-Internal-Service-Token the Provider expects",
)
@click.option("--tenant", "tenant_id", default=0, show_default=True, type=click.IntRange(0, MAX_ID))
@click.option(
    "--app",
    "app_code",
    default="PLATFORM",
    show_default=True,
    type=click.Choice([a.value for a in AppCode]),
)
@click.option(
    "--user",
    "requested_by",
    default=1,
    show_default=True,
    type=click.IntRange(0, MAX_ID),
    help="requestedBy",
)
@click.option(
    "--rows",
    "read_rows",
    default=5000,
    show_default=True,
    type=click.IntRange(min=1),
    help="read at most this many rows of the export (the check stops after the batch that "
    "reaches it)",
)
@click.option(
    "--batch-size",
    default=100,
    show_default=True,
    type=click.IntRange(*BATCH_SIZE_RANGE),
    help="the limit sent, as the registry's batch-size",
)
@click.option(
    "--max-rows",
    default=200_000,
    show_default=True,
    type=click.IntRange(*MAX_ROWS_RANGE),
    help="the registry's max-rows the limits are checked against",
)
@click.option(
    "--parameters", default="{}", show_default=True, help="the business parameters, a JSON object"
)
@click.option(
    "--json", "as_json", is_flag=True, help="print the findings as JSON instead of a table"
)
def provider_check(
    url: str,
    export_type: str,
    token: str,
    tenant_id: int,
    app_code: str,
    requested_by: int,
    read_rows: int,
    batch_size: int,
    max_rows: int,
    parameters: str,
    as_json: bool,
) -> None:
    """Check that the Provider at URL (its base URL) keeps the contract of
    docs/provider-guide.md, calling it the way the service does, before its export type
    is registered. Prints PASS, FAIL or SKIP per rule; exits 1 when a rule failed."""
    if not token:
        raise click.BadParameter("must not be empty", param_hint="--token")
    target = urllib.parse.urlsplit(url)
    if target.scheme not in ("http", "https") or not target.hostname:
        raise click.BadParameter(
            f"{quote_outside(url)} is not an http:// or https:// base URL", param_hint="URL"
        )
    if not _EXPORT_TYPE.fullmatch(export_type):
        raise click.BadParameter(
            f"{export_type!r} is not an export type (A-Z, 0-9 and _)", param_hint="--type"
        )
    business = _parameters(parameters)
    definition = ExportDefinition(
        export_type=export_type,
        provider_service=url,
        provider_path=batches_path(export_type),
        required_permission="provider:check:run",
        app_scope=AppCode(app_code),
        max_rows=max_rows,
        batch_size=batch_size,
    )
    check = trio.run(
        lambda: check_provider(
            url,
            definition,
            token=token,
            tenant_id=tenant_id,
            app_code=app_code,
            requested_by=requested_by,
            parameters=business,
            read_rows=read_rows,
            progress=lambda what: click.echo(f"provider-check: {what} …", err=True),
        )
    )
    findings = check.findings()
    if as_json:
        click.echo(
            json.dumps(
                [
                    {"rule": f.rule.key, "verdict": f.verdict.value, "detail": f.detail}
                    for f in findings
                ],
                ensure_ascii=False,
                indent=2,
            )
        )
    else:
        _print_report(url, export_type, check, findings)
    sys.exit(0 if passed(findings) else 1)
