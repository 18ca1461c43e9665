"""Reading the plan of a store statement on SQLite and MariaDB: which index reads the task,
outbox and event tables (or a scan), MariaDB's estimate of the rows, and the temporary
sorts. ``tests/db/test_query_plans.py`` holds every statement's plan to what it may do.

A plan is read with ``EXPLAIN QUERY PLAN`` (SQLite) or ``EXPLAIN`` (MariaDB) of the
statement rendered for the database, with a plausible value for each of its parameters
(:func:`params_for`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from db.database import Database
from tests.history import FIRST_ID, FIRST_USER

#: The tables a plan is read for, by their names and aliases in the statements.
TABLES = {
    "file_export_task": "task",
    "t": "task",
    "file_export_outbox": "outbox",
    "o": "outbox",
    "file_export_task_event": "event",
}
#: The index of a read through the primary key.
PRIMARY = "PRIMARY"

_PARAM = re.compile(r"(?<![:\w]):(\w+)")
_AT = datetime(2027, 1, 15, 8, 0, tzinfo=UTC)


def params_for(template: str, db: Database) -> dict[str, Any]:
    """Plausible values for every parameter of ``template``."""
    values: dict[str, Any] = {
        "id": FIRST_ID + 5,
        "task_id": FIRST_ID + 5,
        "max_id": FIRST_ID + 5,
        "tenant_id": 0,
        "all_users": 0,
        "app_code": "PLATFORM",
        "requested_by": FIRST_USER + 5,
        "export_type": "CUSTOMER_LIST",
        "parameters_hash": "hash",
        "window_seconds": 60,
        "limit": 20,
        "offset": 0,
        "status": "SUCCEEDED",
        "status_0": "RUNNING",
        "status_1": "FAILED",
        "status_2": "PENDING",
        "window": 20,
        "requested_from": db.dialect.from_datetime(_AT.replace(year=2026)),
        "requested_to": db.dialect.from_datetime(_AT),
        "owner": "owner-a",
        "lease_seconds": 10,
        "max_duration_seconds": 60,
        "dispatch_version": 1,
        "grace_seconds": 60,
        "stale_seconds": 120,
        "retention_seconds": 7 * 86400,
        "backoff_seconds": 60,
        "max_sent_at": db.dialect.from_datetime(_AT),
        "max_created_at": db.dialect.from_datetime(_AT),
        "since": db.dialect.from_datetime(_AT),
        "after_id": 0,
        "next_retry_at": db.dialect.from_datetime(_AT),
        "event_id": "e-1",
        "topic": "t",
        "tag": "CUSTOMER_LIST",
        "message_key": "1",
        "payload_json": "{}",
        "task_no": "EXP1",
        "task_name": "n",
        "format": "XLSX",
        "parameters_json": "{}",
        "max_attempts": 3,
        "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
        "failure_message": "m",
        "failure_code": "export-failed",
        "requester_name": "Li Lei",
        "last_error": "m",
        "object_key": "exports/1/1/f.xlsx",
        "file_name": "f.xlsx",
        "content_type": "x",
        "size_bytes": 1,
        "processed_rows": 1,
        "total_rows": 1,
        "kind": "claimed",
        "detail_json": "{}",
        "warnings_json": "[]",
    }
    names = set(_PARAM.findall(template))
    missing = names - values.keys()
    assert not missing, f"give tests/db/query_plans.py params_for a value for {sorted(missing)}"
    return {name: values[name] for name in names}


@dataclass(frozen=True)
class Access:
    """One read of the task or outbox table in a plan."""

    table: str
    index: str | None  # None: a scan of the table or of a whole index
    rows: int | None  # MariaDB's estimate; None on SQLite
    walk: bool = False  # MariaDB type "index": the whole index in its order, up to LIMIT


_SQLITE_ACCESS = re.compile(
    r"^(SCAN|SEARCH) (\w+)(?: AS \w+)?"
    r"(?: USING (?:(?:AUTOMATIC )?(?:COVERING )?INDEX (\w+)|INTEGER PRIMARY KEY|PRIMARY KEY))?"
)


def sqlite_plan(rows: list[dict[str, Any]]) -> tuple[list[Access], list[str]]:
    """The task/outbox accesses of a SQLite plan, and its temporary sorts."""
    accesses, sorts = [], []
    for row in rows:
        detail = str(row["detail"])
        if detail.startswith("USE TEMP B-TREE"):
            sorts.append(detail)
            continue
        m = _SQLITE_ACCESS.match(detail)
        if m is None or m.group(2) not in TABLES:
            continue
        if "AUTOMATIC" in detail or m.group(1) == "SCAN":
            accesses.append(Access(TABLES[m.group(2)], None, None))
        else:
            accesses.append(Access(TABLES[m.group(2)], m.group(3) or PRIMARY, None))
    return accesses, sorts


def mariadb_plan(rows: list[dict[str, Any]]) -> tuple[list[Access], list[str]]:
    """The task/outbox accesses of a MariaDB plan, and its temporary sorts."""
    accesses, sorts = [], []
    for row in rows:
        extra = str(row.get("Extra") or "")
        sorts += [s for s in ("Using filesort", "Using temporary") if s in extra]
        if row.get("table") not in TABLES or row.get("select_type") == "INSERT":
            continue
        full = row["type"] == "ALL" or not row.get("key")
        # "5 (0%)" for a LIMIT-cut range (the share is of the estimate)
        rows_estimate = int(str(row["rows"]).split()[0]) if row.get("rows") is not None else None
        accesses.append(
            Access(
                TABLES[row["table"]],
                None if full else row["key"],
                rows_estimate,
                walk=row["type"] == "index",
            )
        )
    return accesses, sorts


async def explain(db: Database, template: str) -> tuple[list[Access], list[str]]:
    """The plan of a statement template, rendered for ``db``."""
    sql = db.dialect.render(template)
    params = params_for(template, db)
    async with db.transaction() as tx:
        if db.dialect.is_sqlite:
            return sqlite_plan(await tx.fetchall("EXPLAIN QUERY PLAN " + sql, params))
        return mariadb_plan(await tx.fetchall("EXPLAIN " + sql, params))
