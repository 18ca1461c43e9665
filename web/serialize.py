"""The API's response envelope (§5).

The task and event shapes inside it live in the pure core (``actors/core/task_json.py``),
shared with the operator's ``--json`` commands so the two cannot drift.
"""

from __future__ import annotations

from typing import Any


def envelope(data: Any = None, *, code: str = "200", message: str = "success") -> dict[str, Any]:
    """The response envelope ``{"code", "message", "data"}`` (§5)."""
    return {"code": code, "message": message, "data": data}
