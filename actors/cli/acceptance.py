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
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

import click
import httpx

API = "/api/platform/v1/files/export-tasks"
#: Statuses a task does not leave by itself.
FINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED", "EXPIRED"})
ZIP_SIGNATURE = b"PK\x03\x04"
POLL_SECONDS = 0.5


class AcceptanceError(Exception):
    """A check failed; the message is the verdict's reason."""


@dataclass(frozen=True, slots=True)
class Checked:
    """One export that passed: its id, the rows read back, the column kinds, bytes."""

    task_id: str
    rows: int
    kinds: tuple[str, ...]
    size: int


def cell_kind(value: Any) -> str | None:
    """The kind of one cell as python-calamine reads it; ``None`` for an empty cell.

    Args:
        value: a cell value (``float``/``int``, ``bool``, ``date``, ``datetime``, ``str``).

    Returns:
        ``"number"``, ``"boolean"``, ``"date"``, ``"datetime"``, ``"text"`` or ``None``.
    """
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, datetime):  # before date: a datetime is a date too
        return "datetime"
    if isinstance(value, date):
        return "date"
    return "text"


def column_kinds(header: list[Any], rows: list[list[Any]]) -> tuple[str, ...]:
    """The one kind each column holds.

    Args:
        header: the first row (column titles).
        rows: the data rows.

    Returns:
        One kind per column (``"empty"`` for a column with no value); dates among
        date-times make a ``"datetime"`` column.

    Raises:
        AcceptanceError: a column holds values of two kinds (a value lost its type).
    """
    kinds = []
    for i, title in enumerate(header):
        seen = Counter(k for r in rows if (k := cell_kind(r[i] if i < len(r) else None)))
        if seen.keys() == {"date", "datetime"}:
            # A date-time at midnight reads back as a date (calamine drops a zero time).
            seen = Counter(datetime=seen.total())
        if len(seen) > 1:
            mix = ", ".join(f"{n} {k}" for k, n in seen.most_common())
            raise AcceptanceError(f"column {i + 1} ({title}) mixes kinds: {mix}")
        kinds.append(next(iter(seen), "empty"))
    return tuple(kinds)


def read_back(path: Path) -> tuple[int, tuple[str, ...]]:
    """Read the downloaded file as an XLSX: its data rows and column kinds.

    Raises:
        AcceptanceError: not a ZIP, not a readable workbook, no header, or mixed kinds.
    """
    with open(path, "rb") as f:
        if f.read(4) != ZIP_SIGNATURE:
            raise AcceptanceError("the download is not a ZIP file (no PK signature)")
    from python_calamine import CalamineError, CalamineWorkbook

    try:
        sheet = CalamineWorkbook.from_path(str(path)).get_sheet_by_index(0)
        rows = [list(r) for r in sheet.iter_rows()]
    except (CalamineError, ValueError, OSError) as exc:
        raise AcceptanceError(f"the download is not a readable XLSX: {exc}") from None
    if not rows:
        raise AcceptanceError("the workbook's first sheet is empty (no header row)")
    return len(rows) - 1, column_kinds(rows[0], rows[1:])


def _answer(resp: httpx.Response) -> Any:
    """The ``data`` of a successful envelope."""
    try:
        body = resp.json()
    except ValueError:
        raise AcceptanceError(f"HTTP {resp.status_code}: not a JSON answer") from None
    if body.get("code") != "200":
        raise AcceptanceError(f"HTTP {resp.status_code}: {body.get('code')} {body.get('message')}")
    return body["data"]


def create_export(client: httpx.Client, export_type: str, parameters: dict[str, Any]) -> str:
    """Create one export; its task id."""
    data = _answer(
        client.post(
            API,
            json={
                "exportType": export_type,
                "format": "XLSX",
                "taskName": f"acceptance {time.strftime('%Y-%m-%d %H:%M:%S')}",
                "parameters": parameters,
            },
        )
    )
    return str(data["id"])


def wait_final(client: httpx.Client, task_id: str, timeout: float, progress: Any) -> dict[str, Any]:
    """Poll the task until it reaches a final status, moving the progress bar."""
    bar = progress.add_task(task_id, total=None, status="?", task_id=task_id)
    deadline = time.monotonic() + timeout
    while True:
        task = _answer(client.get(f"{API}/{task_id}"))
        total = int(task["totalRows"]) if task.get("totalRows") else None
        progress.update(
            bar, completed=int(task["processedRows"]), total=total, status=task["status"]
        )
        if task["status"] in FINAL:
            return dict(task)
        if time.monotonic() > deadline:
            raise AcceptanceError(f"task {task_id} still {task['status']} after {timeout:.0f} s")
        time.sleep(POLL_SECONDS)


def check_export(client: httpx.Client, task_id: str, timeout: float, progress: Any) -> Checked:
    """Follow one export to its end, download it and read it back.

    Raises:
        AcceptanceError: the task did not succeed, the download or the file is wrong.
    """
    task = wait_final(client, task_id, timeout, progress)
    if task["status"] != "SUCCEEDED":
        raise AcceptanceError(
            f"task {task_id} {task['status']}: {task.get('failureMessage') or 'no message'}"
        )
    with tempfile.TemporaryDirectory(prefix="export-center-accept-") as tmp:
        path = Path(tmp) / "export.xlsx"
        with client.stream("GET", f"{API}/{task_id}/download") as resp:
            if resp.status_code != 200:
                resp.read()
                raise AcceptanceError(f"task {task_id}: download answered HTTP {resp.status_code}")
            with open(path, "wb") as f:
                for chunk in resp.iter_bytes():
                    f.write(chunk)
        size = path.stat().st_size
        if task.get("sizeBytes") not in (None, "", size, str(size)):
            raise AcceptanceError(
                f"task {task_id}: downloaded {size} bytes, the task says {task['sizeBytes']}"
            )
        rows, kinds = read_back(path)
    expected = int(task["processedRows"])
    if rows != expected:
        raise AcceptanceError(
            f"task {task_id}: {rows} data rows read back, the task says {expected}"
        )
    return Checked(task_id, rows, kinds, size)


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
