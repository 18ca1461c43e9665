"""Reads of one task or outbox row, and of the API's task list."""

from __future__ import annotations

from dataclasses import dataclass

from actors.core.limits import LIST_TOTAL_CAP
from db.transitions.columns import (
    NEWEST_FIRST,
    OF_REQUESTER,
    OF_SCOPE,
    OUTBOX_COLUMNS,
    TASK_COLUMNS,
    TASKS_BY_INDEX,
)

# A list page, newest first by (requested_at, id), and its total (the list API). The filters
# combine freely, so the text is put together from fixed fragments by list_tasks_templates
# (only bound parameters vary, never values). Each page reads through an index whose
# equality prefix is the scope (and status) and whose next columns are requested_at, id:
# the requestedFrom/requestedTo range and the order both come from the index, and a page
# stops at its last row.
# idx_file_export_requester_time: one requester's tasks.
# idx_file_export_requester_status_time: one requester's tasks in one status.
# idx_file_export_scope_time: every task of the tenant and app (DOWNLOAD_ALL permission).
# idx_file_export_scope_status_time: those in one status.
# Several statuses: one branch per status, each an index range in order cut at the page's
# end (:window = offset + limit), merged and cut again, so the sort holds at most
# statuses x window rows whatever the history. The totals count index entries of the
# filter, at most LIST_TOTAL_CAP + 1 of them; several statuses are counted one by one and
# added (exact while no status reaches the cap, over the cap, so reported as capped, when
# one does). Every statement names its index ({index:...}, db/dialect.py): MariaDB would
# otherwise read a finished status's whole history through another status-led index and
# sort it, and SQLite after ANALYZE scan a table whose statistics say every row matches.
# exportType is checked on the rows the index gives (one export type per tenant and app is
# the common case).
_PAGE = NEWEST_FIRST + " LIMIT :limit OFFSET :offset"

_CAP = f" LIMIT {LIST_TOTAL_CAP + 1}"


@dataclass(frozen=True, slots=True)
class ListShape:
    """Which filters a list statement has (their values are bound parameters).

    Attributes:
        of_requester: one requester's tasks (``:requested_by``), else the whole tenant
            and app.
        statuses: how many statuses the page is limited to (``:status`` for one,
            ``:status_0`` … for several); 0 for all.
        export_type: ``:export_type``.
        requested_from: ``requested_at >= :requested_from``.
        requested_to: ``requested_at < :requested_to``.
    """

    of_requester: bool
    statuses: int = 0
    export_type: bool = False
    requested_from: bool = False
    requested_to: bool = False


def list_tasks_templates(shape: ListShape) -> tuple[str, str]:
    """The list page and its capped total for ``shape``, as templates (render them with
    the dialect).

    Args:
        shape: the filters present.

    Returns:
        ``(page, count)``. Parameters: ``tenant_id``, ``app_code``, those of ``shape``,
        and for the page ``limit`` and ``offset`` (and ``window`` = offset + limit when
        ``shape.statuses > 1``).
    """
    where = OF_REQUESTER if shape.of_requester else OF_SCOPE
    if shape.export_type:
        where += " AND export_type = :export_type"
    if shape.requested_from:
        where += " AND requested_at >= :requested_from"
    if shape.requested_to:
        where += " AND requested_at < :requested_to"
    scope = "requester" if shape.of_requester else "scope"
    index = f"idx_file_export_{scope}_{'status_' if shape.statuses else ''}time"
    tasks = TASKS_BY_INDEX % index
    if shape.statuses <= 1:
        if shape.statuses:
            where += " AND status = :status"
        return (
            f"SELECT {TASK_COLUMNS} FROM {tasks}{where}{_PAGE}",
            f"SELECT COUNT(*) AS n FROM (SELECT 1 FROM {tasks}{where}{NEWEST_FIRST}{_CAP})"
            " AS capped",
        )
    names = [f":status_{i}" for i in range(shape.statuses)]
    branches = " UNION ALL ".join(
        f"SELECT {TASK_COLUMNS} FROM (SELECT {TASK_COLUMNS} FROM {tasks}{where}"
        f" AND status = {name}{NEWEST_FIRST} LIMIT :window) AS s{i}"
        for i, name in enumerate(names)
    )
    counts = " + ".join(
        f"(SELECT COUNT(*) FROM (SELECT 1 FROM {tasks}{where}"
        f" AND status = {name}{NEWEST_FIRST}{_CAP}) AS c{i})"
        for i, name in enumerate(names)
    )
    return branches + _PAGE, f"SELECT {counts} AS n"


@dataclass(frozen=True)
class ReadStatements:
    """Reads of one task or outbox row, and of the API's task list."""

    DB_NOW: str = "SELECT {now} AS db_now"

    GET_TASK: str = f"SELECT {TASK_COLUMNS}, {{now}} AS db_now FROM file_export_task WHERE id = :id"

    GET_OUTBOX: str = f"SELECT {OUTBOX_COLUMNS} FROM file_export_outbox WHERE id = :id"

    # Did an outbox row this caller drew an event id for get written? Transitions that insert
    # one re-read it after a lost COMMIT (the event id is unique and drawn before the first
    # attempt, so finding it proves the earlier attempt landed).
    GET_OUTBOX_BY_EVENT: str = (
        f"SELECT {OUTBOX_COLUMNS} FROM file_export_outbox WHERE event_id = :event_id"
    )

    # uk_file_export_outbox_task_version; versions are written in order, so this is also
    # the order the rows were written in.
    LIST_OUTBOX_FOR_TASK: str = (
        f"SELECT {OUTBOX_COLUMNS} FROM file_export_outbox WHERE task_id = :task_id"
        " ORDER BY dispatch_version"
    )
