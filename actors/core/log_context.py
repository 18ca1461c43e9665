"""The identifiers bound to log lines: their names, and binding them for a block.

One request (``web/access_log.py``) or one run (``actors/supervised/execution.py``) binds its
identifiers once; every log line written meanwhile — by our code or a library — carries
them (``actors/plumbing/logs.py`` merges them in). Values live in :mod:`contextvars`
through structlog's context-local store, so each trio task sees what was bound in the task
that started it and nothing bound by its siblings. Binding is not IO: the core offers it
so that the web side and the actors share one vocabulary.
"""

from __future__ import annotations

import contextlib
from typing import Any

import structlog

#: Where a run's or request's identifiers go on every line, in this order.
CONTEXT_KEYS = (
    "requestId",
    "traceId",
    "taskId",
    "eventId",
    "dispatchVersion",
    "exportType",
    "tenantId",
)


def task_fields(task_id: int, dispatch_version: int | None = None, **more: Any) -> dict[str, Any]:
    """The structured fields of a log line about one task (``extra=task_fields(…)``).

    A line about a task names it by these fields, not in its message, so that the message
    stays one constant event text to search and alert on, and a query on ``taskId``
    finds every line of the task (docs/operations.md, "Logs").

    Args:
        task_id: the task's id (written as a decimal string, as bound by
            :func:`bind_context`).
        dispatch_version: the attempt's version, when the line is about one.
        more: further fields (``attempt``, ``rows``, ``error`` …), camelCase.

    Returns:
        ``{"taskId": "…", "dispatchVersion": …, **more}``.
    """
    fields: dict[str, Any] = {"taskId": str(task_id)}
    if dispatch_version is not None:
        fields["dispatchVersion"] = dispatch_version
    fields.update(more)
    return fields


def bind_context(**values: Any) -> contextlib.AbstractContextManager[None]:
    """Bind identifiers to every log line of the current task (and tasks it starts) for a block.

    ``None`` values are left out (an identifier not known here stays as it was). The
    previous values return when the block ends, so a consumer slot's next run or a
    connection's next request starts clean.

    Args:
        values: context keys (:data:`CONTEXT_KEYS`) and their values. 64-bit ids are
            passed as decimal strings, as on the wire.

    Returns:
        A context manager (``with bind_context(taskId=…, traceId=…): …``).
    """
    return structlog.contextvars.bound_contextvars(
        **{k: v for k, v in values.items() if v is not None}
    )


def bind_for_rest_of_task(**values: Any) -> None:
    """Bind identifiers from here to the end of the current context (a route that learns
    its task id part-way); ``None`` values are left out."""
    structlog.contextvars.bind_contextvars(**{k: v for k, v in values.items() if v is not None})


def bound() -> dict[str, Any]:
    """What is bound now (a copy)."""
    return dict(structlog.contextvars.get_contextvars())


def replace_bound(values: dict[str, Any]) -> None:
    """Make exactly ``values`` the bound identifiers (undoing a route's
    :func:`bind_for_rest_of_task` when its request is over)."""
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(**values)
