"""What the export worker's tests share with the Provider connection's: a Provider's
batch answer as raw bytes, and rows to put in it (``test_export_worker.py``,
``tests/actors/pipeline/provider/test_connection.py``)."""

from __future__ import annotations

import json
from typing import Any

COLUMNS = [
    {"key": "id", "title": "ID", "type": "INTEGER"},
    {"key": "name", "title": "Name", "type": "STRING"},
]


def answer(rows: list[dict[str, Any]], *, first: bool = True, literal: str | None = None) -> bytes:
    """A Provider batch answer; ``literal`` replaces the placeholder ``"@@"`` with raw JSON text."""
    data = {
        "schemaVersion": 1,
        "schemaHash": "sha256:test",
        "snapshotToken": "snap",
        "columns": COLUMNS if first else None,
        "rows": rows,
        "nextCursor": "next",
        "hasMore": True,
        "totalRows": len(rows),
    }
    text = json.dumps({"code": "200", "message": "ok", "data": data})
    if literal is not None:
        text = text.replace('"@@"', literal)
    return text.encode()


def rows(start: int, count: int, width: int = 10) -> list[dict[str, Any]]:
    return [{"id": i, "name": f"row {i} " + "x" * width} for i in range(start, start + count)]
