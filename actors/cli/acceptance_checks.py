"""The checks ``export-center accept`` makes of one export (``actors/cli/acceptance.py``,
``actors/cli/load_acceptance.py``): create it, follow it to its end, download it and read
the XLSX back (the ZIP signature, the data rows the task reports, one kind of value per
column)."""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

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
