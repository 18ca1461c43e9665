"""Every statement of the store reads through an index that matches its filter and its
order, on SQLite and on MariaDB (issue 9 item 4: queries that do not grow with history).

The tables hold a finished history (``tests.history``: 20,000 tasks and their SENT outbox
rows over 1,000 users) and a small live set, so the planners have a reason to care. The
plans are read (``tests/db/query_plans.py``) with ``EXPLAIN QUERY PLAN`` (SQLite, before and
after ``ANALYZE``: a service database never runs one, a copied or maintained one may) and
``EXPLAIN`` (MariaDB, after ``ANALYZE TABLE``, as InnoDB's automatic statistics would). A
statement fails when, on the task or outbox table, it

* scans the table or a whole index (SQLite ``SCAN``, MariaDB type ``ALL``; MariaDB type
  ``index`` only passes as a walk in index order that a LIMIT stops early, by the
  planner's own estimate);
* sorts or groups in a temporary structure (``USE TEMP B-TREE``, ``Using filesort`` /
  ``Using temporary``), unless ``CHECKS`` says why the rows it sorts are few;
* reads through an index ``CHECKS`` does not name for it (a status prefix of an index
  meant for another status reads history, without a scan or a sort to show it);
* on MariaDB, expects to read more than 5 % of the table (the estimate behind the plan),
  unless ``CHECKS`` says why, or the index gives the order and a LIMIT stops the read
  (the estimate of a range ignores the LIMIT).

``READS_HISTORY`` holds statements as they were before this check existed; the SQLite test
makes sure the check catches each of them.

``CHECKS`` must name every statement ``ExportStore`` renders, so a new statement without a
plan check fails ``test_every_statement_has_a_plan_check``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import trio_asyncio

import db.transitions as T
from actors.core.admission import CreateLimits
from db.database import Database
from db.ids import IdGenerator
from db.mysql import MysqlDatabase
from db.sqlite import SqliteDatabase, wall_clock_ms
from db.store import ExportStore
from db.transitions.columns import TASK_COLUMNS
from db.transitions.reads import ListShape, list_tasks_templates
from tests.db.query_plans import PRIMARY, Access, explain
from tests.helpers import MYSQL_TEST_URL, new_task
from tests.history import FIRST_USER, load_history

HISTORY = 20_000
#: On MariaDB, a read expected to touch more than this share of a table reads history.
MAX_ROWS_SHARE = 0.05


@dataclass(frozen=True)
class Expect:
    """What the plan of one statement may do on the task and outbox tables.

    Attributes:
        indexes: the indexes it may read them through (``PRIMARY``: the primary key);
            empty for a statement that reads neither table.
        sorts: why the rows it sorts or groups are few, if it sorts at all.
        reads_all: why it may read more than ``MAX_ROWS_SHARE`` of a table.
    """

    indexes: frozenset[str] = frozenset()
    sorts: str | None = None
    reads_all: str | None = None


def uses(*indexes: str, sorts: str | None = None, reads_all: str | None = None) -> Expect:
    return Expect(frozenset(indexes), sorts, reads_all)


# Any index led by status reads only the rows of a live status (PENDING, RUNNING, CLAIMED)
# and planners pick among them freely.
_TASK_BY_STATUS = ("idx_file_export_dispatch", "idx_file_export_lease", "idx_file_export_expiry")
_OUTBOX_BY_STATUS = ("idx_file_export_outbox_publish", "idx_file_export_outbox_sent")
_OUTBOX_OF_VERSION = ("uk_file_export_outbox_task_version", "idx_file_export_outbox_task")
_REQUESTER_LIST = ("idx_file_export_requester_time", "idx_file_export_requester_status_time")
_SCOPE_LIST = ("idx_file_export_scope_time", "idx_file_export_scope_status_time")
_TENANT_TOTAL = (
    "the total of an administrator's list page counts the tenant and app's tasks up to "
    "LIST_TOTAL_CAP + 1 (a LIMIT in a derived table, which EXPLAIN's row estimate ignores)"
)
_MERGED = (
    "a page of several statuses merges one index range per status, each in order and cut "
    "at offset + limit rows by its LIMIT (which EXPLAIN's estimate of a range ignores): at "
    "most statuses x (offset + limit) rows are read and sorted"
)

CHECKS: dict[str, Expect] = {
    "DB_NOW": uses(),
    "LOCK_CREATE_GUARD": uses(),
    # create
    "FIND_DUPLICATE_ACTIVE": uses("idx_file_export_requester_status_time"),
    "COUNT_ACTIVE_FOR_ADMISSION": uses(
        "idx_file_export_requester_status_time", "idx_file_export_type_status"
    ),
    "INSERT_TASK": uses(),
    "INSERT_OUTBOX_NOW": uses(),
    "INSERT_OUTBOX_AT": uses(),
    # reads
    "GET_TASK": uses(PRIMARY),
    "GET_TASK_FILE_HOLD": uses(PRIMARY),
    "GET_OUTBOX": uses(PRIMARY),
    "GET_OUTBOX_BY_EVENT": uses("uk_file_export_outbox_event"),
    "LIST_OUTBOX_FOR_TASK": uses(*_OUTBOX_OF_VERSION),
    # publisher
    "SELECT_DUE_OUTBOX": uses("idx_file_export_outbox_publish"),
    "CLAIM_OUTBOX": uses(PRIMARY, *_OUTBOX_BY_STATUS),
    "MARK_OUTBOX_SENT": uses(PRIMARY, *_OUTBOX_BY_STATUS),
    "MARK_OUTBOX_SEND_FAILED": uses(PRIMARY, *_OUTBOX_BY_STATUS),
    # consumer and fair share
    "CLAIM_TASK": uses(PRIMARY, *_TASK_BY_STATUS),
    "SELECT_RUNNING_REQUESTERS_OF_OWNER": uses(*_TASK_BY_STATUS),
    "SELECT_DUE_PENDING_TASKS": uses("idx_file_export_dispatch"),
    "RENEW_LEASE": uses(PRIMARY, *_TASK_BY_STATUS),
    "RECORD_OBJECT_KEY": uses(PRIMARY, *_TASK_BY_STATUS),
    "REPORT_PROGRESS": uses(PRIMARY, *_TASK_BY_STATUS),
    "COMPLETE_TASK": uses(PRIMARY, *_TASK_BY_STATUS),
    "FAIL_TASK": uses(PRIMARY, *_TASK_BY_STATUS),
    "SCHEDULE_RETRY": uses(PRIMARY, *_TASK_BY_STATUS),
    "MANUAL_RETRY": uses(PRIMARY),
    "CANCEL_TASK": uses(PRIMARY),
    "CLOSE_UNSENT_OUTBOX_OF_TASK": uses(*_OUTBOX_OF_VERSION),
    "CLOSE_UNSENT_OUTBOX_OF_CLAIM": uses(*_OUTBOX_OF_VERSION),
    "MARK_COMMAND_SEEN": uses(*_OUTBOX_OF_VERSION),
    # task history
    "INSERT_TASK_EVENT": uses(),
    "LIST_TASK_EVENTS": uses("idx_file_export_task_event_task"),
    # progress stream: the live statuses only (an index led by status reads those too;
    # MariaDB picks one when the test's single tenant makes it as selective as the scope)
    "LIVE_TASKS_OF_REQUESTER": uses("idx_file_export_requester_status_time", *_TASK_BY_STATUS),
    "LIVE_TASKS_OF_SCOPE": uses("idx_file_export_scope_status_time", *_TASK_BY_STATUS),
    "NEWEST_TASKS_OF_REQUESTER": uses("idx_file_export_requester_time"),
    "NEWEST_TASKS_OF_SCOPE": uses("idx_file_export_scope_time"),
    "TASKS_CHANGED_SINCE": uses("idx_file_export_updated"),  # the progress feed
    "SELECT_EVENT_PRUNE_BOUND": uses("idx_file_export_task_event_age"),
    "PRUNE_TASK_EVENTS": uses("idx_file_export_task_event_age"),
    "PRUNE_ALL_TASK_EVENTS": uses("idx_file_export_task_event_age"),
    "RELEASE_LEASE": uses(PRIMARY, *_TASK_BY_STATUS),
    "HAND_BACK_COUNTED": uses(PRIMARY, *_TASK_BY_STATUS),
    "HAND_BACK_FAIL": uses(PRIMARY, *_TASK_BY_STATUS),
    # reconciler
    "SELECT_TASKS_WITHOUT_OUTBOX": uses("idx_file_export_dispatch", *_OUTBOX_OF_VERSION),
    "SELECT_STALE_SENT_OUTBOX": uses("idx_file_export_dispatch", *_OUTBOX_OF_VERSION),
    "REDISPATCH_STALE_SENT": uses(PRIMARY, *_TASK_BY_STATUS),
    "SELECT_EXPIRED_LEASES": uses("idx_file_export_lease"),
    "SELECT_LIVE_LEASES": uses("idx_file_export_lease"),
    "EXPIRE_LEASE": uses(PRIMARY, *_TASK_BY_STATUS),
    "RECOVER_LEASE_RETRY": uses(PRIMARY, *_TASK_BY_STATUS),
    "RECOVER_LEASE_FAIL": uses(PRIMARY, *_TASK_BY_STATUS),
    "RELEASE_EXPIRED_OUTBOX_CLAIMS": uses(*_OUTBOX_BY_STATUS),
    "SELECT_EXPIRED_FILES": uses("idx_file_export_expiry"),
    # When not by primary key, the range of files already due: the expire duty keeps it short.
    "MARK_EXPIRED": uses(PRIMARY, "idx_file_export_expiry"),
    "SELECT_PRUNE_BOUND": uses("idx_file_export_outbox_sent"),
    "PRUNE_SENT_OUTBOX": uses("idx_file_export_outbox_sent"),
    "PRUNE_ALL_SENT_OUTBOX": uses("idx_file_export_outbox_sent"),
    "SAMPLE_QUEUE": uses("idx_file_export_dispatch"),
    "SAMPLE_OUTBOX": uses(*_OUTBOX_BY_STATUS),
    # DLQ (either unique key finds the one row), embedded start-up
    "QUARANTINE_OUTBOX": uses("uk_file_export_outbox_event", *_OUTBOX_OF_VERSION),
    "FAIL_QUARANTINED_TASK": uses(PRIMARY, *_TASK_BY_STATUS),
    "SELECT_SENT_OF_PENDING_TASKS": uses(*_TASK_BY_STATUS, *_OUTBOX_OF_VERSION),
    "REQUEUE_SENT": uses(PRIMARY, *_TASK_BY_STATUS),
}

#: Every shape of the list statements (``db.transitions.reads.list_tasks_templates``): both
#: scopes, no, one, two and three statuses, and each combination of the other filters.
LIST_SHAPES = [
    ListShape(of_requester, statuses, export_type, requested_from, requested_to)
    for of_requester in (True, False)
    for statuses in (0, 1, 2, 3)
    for export_type in (False, True)
    for requested_from in (False, True)
    for requested_to in (False, True)
]


def list_statements() -> dict[str, tuple[str, Expect]]:
    """The list page and count of every shape, each with what its plan may do: read
    through the list index of its scope (a count of the tenant and app may also use a
    requester's index, leading with the same columns) and sort only a merge of several
    statuses."""
    found = {}
    for shape in LIST_SHAPES:
        label = ",".join(f"{k}={v}" for k, v in asdict(shape).items() if v)
        page, count = list_tasks_templates(shape)
        own = _REQUESTER_LIST if shape.of_requester else _SCOPE_LIST
        merged = shape.statuses > 1
        found[f"LIST[{label}]"] = (
            page,
            uses(*own, sorts=_MERGED if merged else None, reads_all=_MERGED if merged else None),
        )
        found[f"COUNT[{label}]"] = (
            count,
            uses(*own, *_REQUESTER_LIST, reads_all=_TENANT_TOTAL)
            if not shape.of_requester
            else uses(*own),
        )
    return found


def templates() -> dict[str, str]:
    """The statement templates ``ExportStore`` renders (``db.transitions.TEMPLATES``)."""
    return asdict(T.TEMPLATES)


def problems(
    name: str,
    template: str,
    accesses: list[Access],
    sorts: list[str],
    sizes: dict[str, int],
    expect: Expect | None = None,
) -> list[str]:
    """What is wrong with the plan of statement ``name`` (see module docstring).

    Args:
        template: its text; ``accesses`` and ``sorts``: its plan (``explain``).
        sizes: rows in the task and outbox tables.
        expect: what the plan may do; by default ``CHECKS[name]``.
    """
    expect = expect or CHECKS[name]
    # Reading stops at the page's last row when the order comes from the index; MariaDB's
    # estimate for a range read ignores that.
    stops_at_limit = "LIMIT" in template and not sorts
    found = []
    for a in accesses:
        many = a.rows is not None and a.rows > MAX_ROWS_SHARE * sizes[a.table]
        if a.index is None or (a.walk and (many or not stops_at_limit)):
            found.append(f"{name}: scans {a.table} ({a.index or 'table'})")
        elif a.index not in expect.indexes:
            found.append(f"{name}: reads {a.table} through {a.index}, not {sorted(expect.indexes)}")
        if many and not stops_at_limit and expect.reads_all is None:
            found.append(f"{name}: expects to read {a.rows} of {sizes[a.table]} {a.table} rows")
    if sorts and expect.sorts is None:
        found.append(f"{name}: sorts in a temporary structure ({'; '.join(sorts)})")
    return found


async def load_live_set(store: ExportStore) -> None:
    """A few dozen live tasks: RUNNING, PENDING with a SENT command, PENDING unsent."""
    limits = CreateLimits(max_active_per_user=100, max_active_per_type=1000)
    tasks = []
    for i in range(40):
        result = await store.create_task(new_task(FIRST_USER + i % 7, params={"i": i}), limits)
        assert result.task is not None
        tasks.append(result.task)
    for row in await store.claim_due_outbox("publisher", 10, 30):
        await store.mark_outbox_sent(row.id, "publisher")
    for task in tasks[:10]:
        claimed = await store.claim_task(task.id, 1, "owner-a", 60, 600)
        assert claimed.task is not None


async def check_all(store: ExportStore) -> list[str]:
    sizes = {}
    async with store.db.transaction() as tx:
        for table, short in (
            ("file_export_task", "task"),
            ("file_export_outbox", "outbox"),
            ("file_export_task_event", "event"),
        ):
            row = await tx.fetchone(f"SELECT COUNT(*) AS n FROM {table}")
            assert row is not None
            sizes[short] = int(row["n"])
    found = []
    for name, template in sorted(templates().items()):
        accesses, sorts = await explain(store.db, template)
        found += problems(name, template, accesses, sorts, sizes)
    for name, (template, expect) in list_statements().items():
        accesses, sorts = await explain(store.db, template)
        found += problems(name, template, accesses, sorts, sizes, expect)
    return found


async def fill(db: Database) -> ExportStore:
    store = ExportStore(db, IdGenerator(wall_clock_ms), topic="plans-file-export-command-v1")
    await load_history(db, HISTORY, now_ms=wall_clock_ms())
    await load_live_set(store)
    return store


def test_every_statement_has_a_plan_check() -> None:
    """A statement added to db/transitions/ must get an entry in CHECKS (and a
    statement removed must lose its entry)."""
    names = set(templates())
    assert names - CHECKS.keys() == set(), "statements without a plan check"
    assert CHECKS.keys() - names == set(), "plan checks of statements that are gone"


#: Statements as they were before the history grew, each checked as the statement that
#: replaced it: the check must catch every one of them.
READS_HISTORY = {
    # optional filters OR'ed in one text: no index matches them all
    "LIST[of_requester=True]": f"""
SELECT {TASK_COLUMNS} FROM file_export_task
 WHERE tenant_id = :tenant_id AND app_code = :app_code
   AND (:all_users = 1 OR requested_by = :requested_by)
   AND (:status IS NULL OR status = :status)
 ORDER BY id DESC LIMIT :limit OFFSET :offset""",
    # driven by the SENT rows, that is by the whole history
    "SELECT_STALE_SENT_OUTBOX": """
SELECT o.id FROM file_export_outbox o
 WHERE o.status = 'SENT' AND o.sent_at <= {now-:stale_seconds}
   AND EXISTS (SELECT 1 FROM file_export_task t
                WHERE t.id = o.task_id AND t.dispatch_version = o.dispatch_version
                  AND t.status = 'PENDING' AND t.next_retry_at <= {now-:grace_seconds})
 ORDER BY o.sent_at, o.id LIMIT :limit""",
    # the order by id walks the requester's whole history when nothing matches
    "FIND_DUPLICATE_ACTIVE": T.TEMPLATES.FIND_DUPLICATE_ACTIVE + " ORDER BY id DESC LIMIT 1",
    # pruning in id order: every old SENT row sorted
    "SELECT_PRUNE_BOUND": """
SELECT id FROM file_export_outbox
 WHERE status = 'SENT' AND sent_at <= {now-:retention_seconds}
 ORDER BY id LIMIT 1 OFFSET :offset""",
}


async def test_sqlite_plans_read_through_matching_indexes(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "plans.db")
    db.migrate()
    try:
        store = await fill(db)
        caught = {}
        lists = list_statements()
        for name, template in READS_HISTORY.items():
            expect = lists[name][1] if name in lists else None
            caught[name] = problems(name, template, *await explain(db, template), {}, expect)
        before = await check_all(store)
        async with db.transaction() as tx:
            await tx.execute("ANALYZE")
        after = await check_all(store)
    finally:
        await db.aclose()
    assert [name for name, found in caught.items() if not found] == [], "missed"
    assert before == [], "without statistics:\n" + "\n".join(before)
    assert after == [], "after ANALYZE:\n" + "\n".join(after)


async def test_mariadb_plans_read_through_matching_indexes() -> None:
    async with trio_asyncio.open_loop() as loop:
        db = MysqlDatabase(MYSQL_TEST_URL + "_plans", loop, query_timeout=None)
        try:
            await db.drop_database()
            await db.migrate()
            store = await fill(db)
            async with db.transaction() as tx:
                for table in ("file_export_task", "file_export_outbox", "file_export_task_event"):
                    await tx.fetchall(f"ANALYZE TABLE {table}")
            found = await check_all(store)
        finally:
            await db.drop_database()
            await db.aclose()
    assert found == [], "\n".join(found)
