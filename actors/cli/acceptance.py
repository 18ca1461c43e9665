"""``export-center accept``: check a deployed service from the outside, as a user would.

It creates a real export over the API, follows it to a final status with a progress bar,
downloads the file, checks that it is a ZIP (the signature ``PK\\x03\\x04``) and reads the
XLSX back with python-calamine: the data rows must be the rows the task reports, and each
column must hold one kind of value (numbers, text, booleans, dates or date-times; empty
cells aside), which is what the service's typed writer produces. One verdict line ends
it; the exit status is 0 only when every export passed.

``--create-only`` creates the export and prints its id; ``--task-ids``
checks earlier ids instead of creating, so a fault drill can create exports, cause the
outage, and check the same exports after it (``docs/operations.md``, "Operator's
commands").

Only HTTP is used: the command needs the service's address and a user's token, nothing of
its configuration.
"""

from __future__ import annotations

import json
import time
from typing import Any

import click
import httpx

from actors.cli.acceptance_checks import (
    API,
    FINAL,
    ZIP_SIGNATURE,
    AcceptanceError,
    Checked,
    cell_kind,
    check_export,
    column_kinds,
    create_export,
    read_back,
    wait_final,
)

__all__ = [
    "API",
    "FINAL",
    "ZIP_SIGNATURE",
    "AcceptanceError",
    "Checked",
    "accept",
    "cell_kind",
    "check_export",
    "column_kinds",
    "create_export",
    "read_back",
    "wait_final",
]


def _verdict(checked: list[Checked], failed: list[str], total: int, seconds: float) -> str:
    passed = len(checked)
    if failed:
        return f"accept: FAIL {passed}/{total} exports passed; " + "; ".join(failed)
    detail = "; ".join(
        f"task {c.task_id}: {c.rows} rows, {len(c.kinds)} columns ({', '.join(c.kinds)}), "
        f"{c.size} bytes"
        for c in checked
    )
    return (
        f"accept: PASS {passed}/{total} exports succeeded and read back in {seconds:.1f} s; "
        + detail
    )


def _parse_parameters(text: str) -> dict[str, Any]:
    try:
        params = json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--parameters") from None
    if not isinstance(params, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--parameters")
    return params


def _accept_load(
    base_url: str,
    token: str,
    export_type: str,
    all_params: list[dict[str, Any]],
    exports: int,
    baseline_seconds: float,
    probe_rate: float,
    allowance: float,
    timeout: float,
    metrics_url: str | None,
    metrics_token: str | None,
) -> None:
    """``accept --load`` (:mod:`actors.cli.load_acceptance`): print its verdict, exit."""
    import trio

    from actors.cli.load_acceptance import LoadRun, run_load

    if len(all_params) not in (1, exports):
        raise click.UsageError(f"give --parameters once, or once per export ({exports})")
    run = LoadRun(
        base_url=base_url,
        token=token,
        export_type=export_type,
        parameters=all_params * exports if len(all_params) == 1 else all_params,
        exports=exports,
        baseline_seconds=baseline_seconds,
        probe_rate=probe_rate,
        allowance=allowance,
        timeout=timeout,
        metrics_url=metrics_url,
        metrics_token=metrics_token,
    )
    try:
        passed, line = trio.run(run_load, run)
    except (AcceptanceError, httpx.HTTPError) as exc:
        click.echo(f"accept --load: FAIL {exc}")
        raise SystemExit(1) from None
    click.echo(line)
    raise SystemExit(0 if passed else 1)


def _split_ids(values: tuple[str, ...]) -> list[str]:
    ids = [v for value in values for v in value.replace(",", " ").split()]
    for v in ids:
        if not (v.isascii() and v.isdigit()):
            raise click.BadParameter(f"{v!r} is not a task id", param_hint="TASK_IDS")
    return ids


@click.command()
@click.option("--base-url", required=True, help="the service's address, e.g. https://host")
@click.option(
    "--token",
    envvar="EXPORT_CENTER_TOKEN",
    required=True,
    help="a user's JWT (or EXPORT_CENTER_TOKEN, which keeps it out of the process list)",
)
@click.option("--export-type", default="CUSTOMER_LIST", show_default=True)
@click.option(
    "--parameters",
    "parameter_texts",
    multiple=True,
    help="the export's parameters as a JSON object (default {}); with --load, once per "
    "export if they differ (the service answers an identical create within a minute "
    "with the task it already has)",
)
@click.option("--create-only", is_flag=True, help="create the exports, print their ids, stop")
@click.option(
    "--task-ids",
    "verify_ids",
    is_flag=True,
    help="check the TASK_IDS given after the options (earlier --create-only output)",
)
@click.option(
    "--timeout",
    default=600.0,
    show_default=True,
    type=click.FloatRange(min=1),
    help="seconds to wait for each export to finish",
)
@click.option(
    "--load",
    is_flag=True,
    help="the production load acceptance: --exports exports at once while the API's p95 "
    "is measured against an idle baseline (docs/capacity.md)",
)
@click.option("--exports", default=4, show_default=True, type=click.IntRange(1, 64))
@click.option(
    "--baseline-seconds",
    default=20.0,
    show_default=True,
    type=click.FloatRange(min=1),
    help="--load: seconds of idle API probes before the exports",
)
@click.option(
    "--probe-rate",
    default=10.0,
    show_default=True,
    type=click.FloatRange(min=1, max=200),
    help="--load: API probes per second (the neighbours' task list)",
)
@click.option(
    "--allowance",
    default=0.20,
    show_default=True,
    type=click.FloatRange(min=0),
    help="--load: how much the API's p95 may grow under load (0.20: +20 %)",
)
@click.option(
    "--metrics-url",
    default=None,
    help="--load: the instance whose /metrics gives CPU, memory and Provider latency "
    "(default --base-url)",
)
@click.option(
    "--metrics-token",
    envvar="EXPORT_CENTER_METRICS_TOKEN",
    default=None,
    help="--load: FILE_EXPORT_METRICS_TOKEN of that instance, if set",
)
@click.argument("task_ids", nargs=-1)
def accept(
    base_url: str,
    token: str,
    export_type: str,
    parameter_texts: tuple[str, ...],
    create_only: bool,
    verify_ids: bool,
    timeout: float,
    load: bool,
    exports: int,
    baseline_seconds: float,
    probe_rate: float,
    allowance: float,
    metrics_url: str | None,
    metrics_token: str | None,
    task_ids: tuple[str, ...],
) -> None:
    """Acceptance check of a deployed service: create an export (or check earlier ones
    with --task-ids ID...), wait for it, download it, read the XLSX back, print one
    verdict line. With --load, the production load acceptance instead. Exit status 0
    only when every export passed."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    if task_ids and not verify_ids:
        raise click.UsageError("task ids are given after --task-ids")
    if verify_ids and (create_only or not task_ids):
        raise click.UsageError("--task-ids needs ids, and does not go with --create-only")
    all_params = [_parse_parameters(text) for text in parameter_texts or ("{}",)]
    if load:
        if create_only or verify_ids:
            raise click.UsageError("--load does not go with --create-only or --task-ids")
        _accept_load(
            base_url, token, export_type, all_params, exports, baseline_seconds, probe_rate,
            allowance, timeout, metrics_url, metrics_token,
        )  # fmt: skip
        return
    if len(all_params) > 1:
        raise click.UsageError("--parameters is given once, except with --load")
    params = all_params[0]

    started = time.monotonic()
    console = Console(stderr=True)
    checked: list[Checked] = []
    failed: list[str] = []
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30) as client:
        try:
            ids = (
                _split_ids(task_ids) if verify_ids else [create_export(client, export_type, params)]
            )
        except (AcceptanceError, httpx.HTTPError) as exc:
            click.echo(f"accept: FAIL cannot create an export: {exc}")
            raise SystemExit(1) from None
        if create_only:
            for tid in ids:
                click.echo(tid)
            return
        progress = Progress(
            TextColumn("task {task.fields[task_id]} {task.fields[status]}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        )
        with progress:
            for tid in ids:
                try:
                    checked.append(check_export(client, tid, timeout, progress))
                except (AcceptanceError, httpx.HTTPError) as exc:
                    failed.append(str(exc) or type(exc).__name__)
    click.echo(_verdict(checked, failed, len(ids), time.monotonic() - started))
    raise SystemExit(1 if failed else 0)
