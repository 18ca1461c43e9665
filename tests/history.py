"""A finished history of export tasks, bulk-loaded fast (tests and benchmarks).

What a service in steady state holds: finished tasks (60 % SUCCEEDED with files still
kept, 30 % EXPIRED, 10 % FAILED) requested over the 6 days before ``now_ms`` by 1,000
users (``HISTORY_USERS`` from user id 1000 up) of tenant 0, app ``PLATFORM``, each with the
SENT outbox row of its command (the reconciler prunes SENT rows after 7 days). One
``INSERT … SELECT`` per table and 100,000 rows, numbered by cross-joined digits, so no
recursion limit of either database matters; ids start at ``FIRST_ID``.
"""

from __future__ import annotations

from db.database import Database

TOPIC = "history-file-export-command-v1"
HISTORY_USERS = 1000
FIRST_USER = 1000
FIRST_ID = 10**15
HISTORY_SPAN_MS = 6 * 86400 * 1000
CHUNK = 100_000
DAY_MS = 86400 * 1000

# One row per history task: i runs over 0..n-1 (digits cross-joined, so no recursion
# limit matters); its time is spread evenly over the last 6 days.
_DIGITS = "SELECT 0 AS d UNION ALL " + " UNION ALL ".join(f"SELECT {k}" for k in range(1, 10))
_NUMBERS = (
    "WITH d AS (" + _DIGITS + "),"
    " n AS (SELECT a.d + 10*b.d + 100*c.d + 1000*e.d + 10000*f.d AS i"
    " FROM d a, d b, d c, d e, d f)"
)


def _time(dialect: str, expr: str) -> str:
    """A time value from epoch milliseconds: INTEGER in SQLite, DATETIME(3) in MySQL."""
    if dialect == "sqlite":
        return f"({expr})"
    return f"FROM_UNIXTIME(({expr}) / 1000)"


def _cat(dialect: str, *parts: str) -> str:
    """String concatenation (SQLite 3.40 has no CONCAT())."""
    return "(" + " || ".join(parts) + ")" if dialect == "sqlite" else f"CONCAT({', '.join(parts)})"


def _history_sql(dialect: str, table: str) -> str:
    """INSERT … SELECT of one chunk of 100,000 history rows starting at :base."""
    at = "(:now - :span + ((n.i + :base) * :span) / :total)"
    status = (
        "CASE (n.i + :base) % 10 WHEN 0 THEN 'FAILED' WHEN 1 THEN 'EXPIRED'"
        " WHEN 2 THEN 'EXPIRED' WHEN 3 THEN 'EXPIRED' ELSE 'SUCCEEDED' END"
    )
    tid = "(:id0 + n.i + :base)"
    expires = f"CASE WHEN {status} = 'EXPIRED' THEN {at} + 1000 ELSE {at} + 7 * {DAY_MS} END"
    if table == "task":
        return f"""
INSERT INTO file_export_task
  (id, task_no, export_type, task_name, format, status, parameters_json, parameters_hash,
   tenant_id, app_code, processed_rows, total_rows, file_name, object_key, content_type,
   size_bytes, failure_message, dispatch_version, attempt_count, max_attempts,
   next_retry_at, requested_by, requested_at, started_at, completed_at, expires_at,
   created_at, updated_at)
{_NUMBERS}
SELECT {tid}, {_cat(dialect, "'H'", tid)}, 'CUSTOMER_LIST', 'history', 'XLSX', {status}, '{{}}',
       'hash', 0, 'PLATFORM', 1000, 1000, 'customers.xlsx',
       {_cat(dialect, "'exports/'", tid, "'/1/customers.xlsx'")}, 'application/xlsx', 62000, NULL,
       1, 1, 3, {_time(dialect, at)}, {FIRST_USER} + (n.i + :base) % {HISTORY_USERS},
       {_time(dialect, at)}, {_time(dialect, at + " + 20")},
       {_time(dialect, at + " + 2000")},
       {_time(dialect, expires)},
       {_time(dialect, at)}, {_time(dialect, at + " + 2000")}
  FROM n WHERE n.i + :base < :total AND n.i < {CHUNK}
"""
    return f"""
INSERT INTO file_export_outbox
  (id, event_id, task_id, dispatch_version, topic, tag, message_key, payload_json, status,
   attempt_count, next_retry_at, sent_at, created_at, updated_at)
{_NUMBERS}
SELECT {tid}, {_cat(dialect, "'e'", tid)}, {tid}, 1, '{TOPIC}', 'CUSTOMER_LIST',
       {_cat(dialect, "''", tid)}, '{{}}', 'SENT', 1, {_time(dialect, at)},
       {_time(dialect, at + " + 5")}, {_time(dialect, at)}, {_time(dialect, at + " + 5")}
  FROM n WHERE n.i + :base < :total AND n.i < {CHUNK}
"""


async def load_history(db: Database, total: int, *, now_ms: int) -> None:
    """Bulk-load ``total`` finished tasks and their SENT outbox rows (see module), in
    transactions of 100,000 rows.

    Args:
        total: finished tasks to add.
        now_ms: DB time of the load, epoch milliseconds: the history ends there.
    """
    dialect = db.dialect.name
    if dialect == "sqlite":
        # A bigger page cache for the load only (the stock 2 MB makes a million rows take
        # minutes); the connection gets its own size back before anything is measured.
        async with db.transaction() as tx:
            row = await tx.fetchone("PRAGMA cache_size")
            assert row is not None
            cache_size = int(row["cache_size"])
            await tx.execute("PRAGMA cache_size = -262144")
    for table in ("task", "outbox"):
        rendered = db.dialect.render(_history_sql(dialect, table))
        for base in range(0, total, CHUNK):
            params = {
                "now": now_ms,
                "span": HISTORY_SPAN_MS,
                "total": total,
                "base": base,
                "id0": FIRST_ID,
            }
            async with db.transaction() as tx:
                await tx.execute(rendered, params)
    if dialect == "sqlite":
        async with db.transaction() as tx:
            await tx.execute(f"PRAGMA cache_size = {cache_size}")
