"""One SQL text per transition, written once for every dialect (see ``db.dialect``).

Every time decision reads the DB clock through ``{now}`` (§8.6, docs/design-rules.md §8.6).
Every executor write is fenced by id + dispatch_version + lease_owner + status RUNNING
(docs/design-rules.md §8.4). Each UPDATE also sets ``updated_at`` because SQLite has no
``ON UPDATE`` clause.

Names follow the transition they perform; the seed section that defines it is given.

Every statement reads through an index whose leading columns match its equality filter
and whose next columns match its range and its ORDER BY, so its cost follows the rows it
returns (or the live PENDING/RUNNING rows it looks at), never the finished history.
Filters are written so that both planners can use them: no OR across columns, no function
on an indexed column, one statement per combination of optional filters. The comment
above each statement names its index (see ``db/schema``); ``tests/db/test_query_plans.py``
checks the plan of every statement on SQLite and MariaDB.

``Statements`` (at the end) names every statement once more as a typed field; the store
renders ``TEMPLATES`` once for its dialect and reads each text by its name.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass
from typing import TYPE_CHECKING

from actors.core.limits import LIST_TOTAL_CAP

if TYPE_CHECKING:
    from db.dialect import Dialect

TASK_COLUMNS = (
    "id, task_no, export_type, task_name, format, status, parameters_json, tenant_id, "
    "app_code, requested_by, dispatch_version, attempt_count, max_attempts, next_retry_at, "
    "lease_owner, lease_until, last_heartbeat_at, execution_deadline_at, processed_rows, "
    "total_rows, file_name, object_key, content_type, size_bytes, failure_message, "
    "requested_at, started_at, completed_at, expires_at, updated_at, trace_id, warnings_json, "
    "handback_count"
)
OUTBOX_COLUMNS = (
    "id, event_id, task_id, dispatch_version, topic, tag, message_key, payload_json, status, "
    "attempt_count, next_retry_at, lease_owner, lease_until, sent_at, last_error, created_at, "
    "updated_at, due_at"
)

DB_NOW = "SELECT {now} AS db_now"

# --- create (§7.2, §14) -------------------------------------------------------------------

LOCK_CREATE_GUARD = (
    "SELECT guard_key FROM file_export_task_guard WHERE guard_key = 'GLOBAL_CREATE' {for_update}"
)

# idx_file_export_requester_status_time: the requester's PENDING and RUNNING rows (a
# handful, bounded by the per-user limit); the hash and time are filters. No ORDER BY: the
# caller takes the newest, because an ORDER BY would tempt a planner to walk the
# requester's whole history backwards on idx_file_export_requester_time when there is no
# duplicate. The index is named: with it MariaDB otherwise may intersect the requester's
# history with the status-led lease index.
FIND_DUPLICATE_ACTIVE = f"""
SELECT {TASK_COLUMNS} FROM file_export_task {{index:idx_file_export_requester_status_time}}
 WHERE tenant_id = :tenant_id AND app_code = :app_code AND requested_by = :requested_by
   AND export_type = :export_type AND parameters_hash = :parameters_hash
   AND status IN ('PENDING', 'RUNNING')
   AND requested_at >= {{now-:window_seconds}}
"""

# The three counts admission needs (actors.core.admission), read under the guard lock.
# by_user and by_user_in_type use idx_file_export_requester_status_time, by_type
# idx_file_export_type_status: each is an index range over active rows only.
COUNT_ACTIVE_FOR_ADMISSION = """
SELECT
  (SELECT COUNT(*) FROM file_export_task
    WHERE tenant_id = :tenant_id AND app_code = :app_code AND requested_by = :requested_by
      AND status IN ('PENDING', 'RUNNING')) AS by_user,
  (SELECT COUNT(*) FROM file_export_task
    WHERE export_type = :export_type AND status IN ('PENDING', 'RUNNING')) AS by_type,
  (SELECT COUNT(*) FROM file_export_task
    WHERE tenant_id = :tenant_id AND app_code = :app_code AND requested_by = :requested_by
      AND status IN ('PENDING', 'RUNNING') AND export_type = :export_type) AS by_user_in_type
"""

INSERT_TASK = """
INSERT INTO file_export_task
  (id, task_no, export_type, task_name, format, status, parameters_json, parameters_hash,
   tenant_id, app_code, requested_by, dispatch_version, attempt_count, max_attempts,
   next_retry_at, processed_rows, requested_at, created_at, updated_at, trace_id)
VALUES
  (:id, :task_no, :export_type, :task_name, :format, 'PENDING', :parameters_json,
   :parameters_hash, :tenant_id, :app_code, :requested_by, 1, 0, :max_attempts,
   {now}, 0, {now}, {now}, {now}, :trace_id)
"""

# The outbox row's next_retry_at is passed in when it must equal the task's (§9.2 step 4);
# ``{now}`` otherwise. due_at is the row's first due time, the same value: send back-off
# moves next_retry_at, never due_at (the backlog gauge ages a row from it, SAMPLE_OUTBOX).
INSERT_OUTBOX_NOW = """
INSERT INTO file_export_outbox
  (id, event_id, task_id, dispatch_version, topic, tag, message_key, payload_json, status,
   attempt_count, next_retry_at, created_at, updated_at, due_at)
VALUES
  (:id, :event_id, :task_id, :dispatch_version, :topic, :tag, :message_key, :payload_json,
   'PENDING', 0, {now}, {now}, {now}, {now})
"""

INSERT_OUTBOX_AT = """
INSERT INTO file_export_outbox
  (id, event_id, task_id, dispatch_version, topic, tag, message_key, payload_json, status,
   attempt_count, next_retry_at, created_at, updated_at, due_at)
VALUES
  (:id, :event_id, :task_id, :dispatch_version, :topic, :tag, :message_key, :payload_json,
   'PENDING', 0, :next_retry_at, {now}, {now}, :next_retry_at)
"""

# --- reads ------------------------------------------------------------------------------

GET_TASK = f"SELECT {TASK_COLUMNS}, {{now}} AS db_now FROM file_export_task WHERE id = :id"

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
_OF_REQUESTER = "tenant_id = :tenant_id AND app_code = :app_code AND requested_by = :requested_by"
_OF_SCOPE = "tenant_id = :tenant_id AND app_code = :app_code"
_NEWEST_FIRST = " ORDER BY requested_at DESC, id DESC"
_PAGE = _NEWEST_FIRST + " LIMIT :limit OFFSET :offset"
_TASKS = "file_export_task {index:%s} WHERE "
_LIST = f"SELECT {TASK_COLUMNS} FROM file_export_task WHERE "
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
    where = _OF_REQUESTER if shape.of_requester else _OF_SCOPE
    if shape.export_type:
        where += " AND export_type = :export_type"
    if shape.requested_from:
        where += " AND requested_at >= :requested_from"
    if shape.requested_to:
        where += " AND requested_at < :requested_to"
    scope = "requester" if shape.of_requester else "scope"
    index = f"idx_file_export_{scope}_{'status_' if shape.statuses else ''}time"
    tasks = _TASKS % index
    if shape.statuses <= 1:
        if shape.statuses:
            where += " AND status = :status"
        return (
            f"SELECT {TASK_COLUMNS} FROM {tasks}{where}{_PAGE}",
            f"SELECT COUNT(*) AS n FROM (SELECT 1 FROM {tasks}{where}{_NEWEST_FIRST}{_CAP})"
            " AS capped",
        )
    names = [f":status_{i}" for i in range(shape.statuses)]
    branches = " UNION ALL ".join(
        f"SELECT {TASK_COLUMNS} FROM (SELECT {TASK_COLUMNS} FROM {tasks}{where}"
        f" AND status = {name}{_NEWEST_FIRST} LIMIT :window) AS s{i}"
        for i, name in enumerate(names)
    )
    counts = " + ".join(
        f"(SELECT COUNT(*) FROM (SELECT 1 FROM {tasks}{where}"
        f" AND status = {name}{_NEWEST_FIRST}{_CAP}) AS c{i})"
        for i, name in enumerate(names)
    )
    return branches + _PAGE, f"SELECT {counts} AS n"


GET_OUTBOX = f"SELECT {OUTBOX_COLUMNS} FROM file_export_outbox WHERE id = :id"

# Did an outbox row this caller drew an event id for get written? Transitions that insert
# one re-read it after a lost COMMIT (the event id is unique and drawn before the first
# attempt, so finding it proves the earlier attempt landed).
GET_OUTBOX_BY_EVENT = f"SELECT {OUTBOX_COLUMNS} FROM file_export_outbox WHERE event_id = :event_id"

# uk_file_export_outbox_task_version; versions are written in order, so this is also
# the order the rows were written in.
LIST_OUTBOX_FOR_TASK = (
    f"SELECT {OUTBOX_COLUMNS} FROM file_export_outbox WHERE task_id = :task_id"
    " ORDER BY dispatch_version"
)

# --- publisher (§7.4) -------------------------------------------------------------------

# idx_file_export_outbox_publish.
SELECT_DUE_OUTBOX = """
SELECT id FROM file_export_outbox
 WHERE status = 'PENDING' AND next_retry_at <= {now}
 ORDER BY next_retry_at, id LIMIT :limit
"""

CLAIM_OUTBOX = """
UPDATE file_export_outbox
   SET status = 'CLAIMED', lease_owner = :owner,
       lease_until = {now+:lease_seconds},
       attempt_count = attempt_count + 1, updated_at = {now}
 WHERE id = :id AND status = 'PENDING' AND next_retry_at <= {now}
"""

MARK_OUTBOX_SENT = """
UPDATE file_export_outbox
   SET status = 'SENT', sent_at = {now}, lease_owner = NULL, lease_until = NULL,
       updated_at = {now}
 WHERE id = :id AND status = 'CLAIMED' AND lease_owner = :owner
"""

MARK_OUTBOX_SEND_FAILED = """
UPDATE file_export_outbox
   SET status = 'PENDING', next_retry_at = {now+:backoff_seconds}, last_error = :last_error,
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id AND status = 'CLAIMED' AND lease_owner = :owner
"""

# --- consumer (§8.2 – §8.4) -------------------------------------------------------------

CLAIM_TASK = """
UPDATE file_export_task
   SET status = 'RUNNING',
       attempt_count = attempt_count + 1,
       started_at = {now},
       lease_owner = :owner,
       lease_until = {now+:lease_seconds},
       last_heartbeat_at = {now},
       execution_deadline_at = {now+:max_duration_seconds},
       processed_rows = 0,
       total_rows = NULL,
       failure_message = NULL,
       updated_at = {now}
 WHERE id = :id
   AND dispatch_version = :dispatch_version
   AND status = 'PENDING'
   AND next_retry_at <= {now}
"""

# The claimed version's command if it is not sent yet (uk_file_export_outbox_task_version):
# a slot claimed the task from the database before the publisher sent it (the bus is down,
# or slower than the claim round). Closed as sent-with-a-note, in the claim's transaction,
# so no command is sent for a task that already runs or has finished; one being sent right
# now (CLAIMED) arrives at a RUNNING or finished task and is acked as a no-claim.
CLOSE_UNSENT_OUTBOX_OF_CLAIM = """
UPDATE file_export_outbox
   SET status = 'SENT', sent_at = {now},
       last_error = 'not sent: the task was claimed from the database first',
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE task_id = :task_id AND dispatch_version = :dispatch_version AND status = 'PENDING'
"""

# Fair share (actors.core.fairness): what one instance's slots hold, and what waits.
# RUNNING rows are few (at most the slots of all instances): the status prefix of
# idx_file_export_lease finds them. The caller counts them by requester: a GROUP BY would
# tempt SQLite to walk all of idx_file_export_requester_status for its order instead.
# The due list walks idx_file_export_dispatch.
SELECT_RUNNING_REQUESTERS_OF_OWNER = """
SELECT tenant_id, app_code, requested_by FROM file_export_task
 WHERE status = 'RUNNING' AND lease_owner = :owner
"""

SELECT_DUE_PENDING_TASKS = """
SELECT id, dispatch_version, tenant_id, app_code, requested_by, next_retry_at
  FROM file_export_task
 WHERE status = 'PENDING' AND next_retry_at <= {now}
 ORDER BY next_retry_at, id LIMIT :limit
"""

RENEW_LEASE = """
UPDATE file_export_task
   SET lease_until = {now+:lease_seconds},
       last_heartbeat_at = {now},
       updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
   AND execution_deadline_at > {now}
"""

# The file this attempt writes, recorded before the first byte so every failure path —
# including lease recovery after a crash (§8.5-2 selects object_key) — can delete it (§9.5).
RECORD_OBJECT_KEY = """
UPDATE file_export_task
   SET object_key = :object_key, updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
"""

# Progress is for display; the lease is for correctness: separate writes (§8.3).
REPORT_PROGRESS = """
UPDATE file_export_task
   SET processed_rows = :processed_rows, total_rows = :total_rows, updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
"""

COMPLETE_TASK = """
UPDATE file_export_task
   SET status = 'SUCCEEDED', file_name = :file_name, object_key = :object_key,
       content_type = :content_type, size_bytes = :size_bytes,
       total_rows = :total_rows, processed_rows = :processed_rows,
       completed_at = {now},
       expires_at = {now+:retention_seconds},
       lease_owner = NULL, lease_until = NULL, failure_message = NULL,
       warnings_json = :warnings_json, handback_count = 0, updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
   AND execution_deadline_at > {now}
"""

FAIL_TASK = """
UPDATE file_export_task
   SET status = 'FAILED', failure_message = :failure_message, completed_at = {now},
       object_key = NULL, lease_owner = NULL, lease_until = NULL, handback_count = 0,
       updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
"""

# §9.2 step 3: new version, backoff by DB time, progress reset, failure_message kept.
SCHEDULE_RETRY = """
UPDATE file_export_task
   SET status = 'PENDING', dispatch_version = dispatch_version + 1,
       next_retry_at = {now+:backoff_seconds},
       failure_message = :failure_message, handback_count = 0,
       processed_rows = 0, total_rows = NULL, object_key = NULL,
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
"""

# --- manual retry (§9.3): a FAILED or CANCELLED task ----------------------------------

MANUAL_RETRY = """
UPDATE file_export_task
   SET status = 'PENDING', dispatch_version = dispatch_version + 1,
       next_retry_at = {now}, failure_message = NULL, attempt_count = 0, handback_count = 0,
       processed_rows = 0, total_rows = NULL, started_at = NULL, completed_at = NULL,
       object_key = NULL, file_name = NULL, size_bytes = NULL, content_type = NULL,
       lease_owner = NULL, lease_until = NULL, execution_deadline_at = NULL,
       updated_at = {now}
 WHERE id = :id AND status IN ('FAILED', 'CANCELLED') AND dispatch_version = :dispatch_version
"""

# --- cancel (actors/core/cancel.py) ----------------------------------------------------

# PENDING or RUNNING -> CANCELLED, whatever the version: the user cancels the task, not one
# attempt. The lease columns are cleared, so every fenced write of a running attempt
# (status = 'RUNNING') matches 0 rows from now on; object_key stays, so a manual retry
# deletes a file the attempt could not delete itself.
CANCEL_TASK = """
UPDATE file_export_task
   SET status = 'CANCELLED', failure_message = :failure_message, completed_at = {now},
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id AND status IN ('PENDING', 'RUNNING')
"""

# The cancelled task's unsent commands (uk_file_export_outbox_task_version): closed as
# sent-with-a-note, so the publisher never sends them and pruning removes them like any
# sent row. A command already sent or being sent arrives at a CANCELLED task: the claim's
# "terminal" no-claim branch acks it.
CLOSE_UNSENT_OUTBOX_OF_TASK = """
UPDATE file_export_outbox
   SET status = 'SENT', sent_at = {now}, last_error = 'not sent: the task was cancelled',
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE task_id = :task_id AND status = 'PENDING'
"""

# --- task history (actors/core/events.py) ---------------------------------------------

# Appended in the transaction of the transition it records.
INSERT_TASK_EVENT = """
INSERT INTO file_export_task_event (task_id, kind, detail_json, created_at)
VALUES (:task_id, :kind, :detail_json, {now})
"""

# idx_file_export_task_event_task: one task's events are one index range, in id order.
# The newest events (a long history keeps its latest entries; the caller reverses them).
LIST_TASK_EVENTS = """
SELECT id, task_id, kind, detail_json, created_at FROM file_export_task_event
 WHERE task_id = :task_id ORDER BY id DESC LIMIT :limit
"""

# The progress stream (web/progress.py), one poll: the caller's live tasks and its newest
# ones. The live ones are one equality range of idx_file_export_requester_status_time (or
# _scope_status_time for DOWNLOAD_ALL) per live status, unsorted (the stream orders them):
# with "status IN (...)" MariaDB preferred the requester's whole history filtered by status.
# The newest walk idx_file_export_requester_time (or _scope_time) from its end, in the list's
# order, and stop at the LIMIT (the index is named, as for the list: db/dialect.py).
_NEWEST = _NEWEST_FIRST + " LIMIT :limit"


def _live(of: str) -> str:
    return (
        f"{_LIST}{of} AND status = 'PENDING' UNION ALL {_LIST}{of} AND status = 'RUNNING'"
        " LIMIT :limit"
    )


LIVE_TASKS_OF_REQUESTER = _live(_OF_REQUESTER)
LIVE_TASKS_OF_SCOPE = _live(_OF_SCOPE)
NEWEST_TASKS_OF_REQUESTER = (
    f"SELECT {TASK_COLUMNS} FROM {_TASKS % 'idx_file_export_requester_time'}"
    f"{_OF_REQUESTER}{_NEWEST}"
)
NEWEST_TASKS_OF_SCOPE = (
    f"SELECT {TASK_COLUMNS} FROM {_TASKS % 'idx_file_export_scope_time'}{_OF_SCOPE}{_NEWEST}"
)

# idx_file_export_task_event_age: the range of events older than the retention.
# Chunked like the SENT outbox pruning: the chunk-th candidate in (created_at, id) order
# bounds the delete, so one pass never deletes months of history in one statement.
SELECT_EVENT_PRUNE_BOUND = """
SELECT created_at, id FROM file_export_task_event
 WHERE created_at <= {now-:retention_seconds}
 ORDER BY created_at, id LIMIT 1 OFFSET :offset
"""
PRUNE_TASK_EVENTS = """
DELETE FROM file_export_task_event
 WHERE created_at <= {now-:retention_seconds}
   AND created_at <= :max_created_at AND (created_at < :max_created_at OR id <= :max_id)
"""
PRUNE_ALL_TASK_EVENTS = """
DELETE FROM file_export_task_event WHERE created_at <= {now-:retention_seconds}
"""

# --- reconciler (§8.5, §15) -------------------------------------------------------------

# (1) case A: the current version has no outbox row at all -> insert one, same version.
# NOT EXISTS has no status filter on purpose: a QUARANTINED row blocks it too (§9.4).
SELECT_TASKS_WITHOUT_OUTBOX = """
SELECT t.id, t.export_type, t.dispatch_version, t.trace_id FROM file_export_task t
 WHERE t.status = 'PENDING'
   AND t.next_retry_at <= {now-:grace_seconds}
   AND NOT EXISTS (SELECT 1 FROM file_export_outbox o
                    WHERE o.task_id = t.id AND o.dispatch_version = t.dispatch_version)
 ORDER BY t.next_retry_at, t.id LIMIT :limit
"""

# (1) case B: SENT long ago while the task is still PENDING at that version -> the same
# row back to PENDING (same version; status 'SENT' excludes QUARANTINED rows).
# The select starts from the due PENDING tasks (idx_file_export_dispatch, in its order) and
# looks up each one's outbox row of its version (idx_file_export_outbox_task): SENT rows
# are nearly all history, PENDING tasks are the live queue. CROSS JOIN keeps the task
# table outer in SQLite (MySQL reads it as a plain JOIN and finds the same order).
SELECT_STALE_SENT_OUTBOX = """
SELECT o.id FROM file_export_task t
 CROSS JOIN file_export_outbox o ON o.task_id = t.id AND o.dispatch_version = t.dispatch_version
 WHERE t.status = 'PENDING'
   AND t.next_retry_at <= {now-:grace_seconds}
   AND o.status = 'SENT'
   AND o.sent_at <= {now-:stale_seconds}
 ORDER BY t.next_retry_at, t.id LIMIT :limit
"""
# Re-checks the whole condition for one row (primary keys); MySQL cannot subquery the
# updated table, so the correlation names the table itself. The row was sent: unsent
# again, it is due again from now (due_at), not from when it was first written.
REDISPATCH_STALE_SENT = """
UPDATE file_export_outbox
   SET status = 'PENDING', next_retry_at = {now}, due_at = {now},
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id
   AND status = 'SENT'
   AND sent_at <= {now-:stale_seconds}
   AND EXISTS (SELECT 1 FROM file_export_task t
                WHERE t.id = file_export_outbox.task_id
                  AND t.dispatch_version = file_export_outbox.dispatch_version
                  AND t.status = 'PENDING'
                  AND t.next_retry_at <= {now-:grace_seconds})
"""

# (2) expired RUNNING leases: idx_file_export_lease (id follows lease_until in it).
SELECT_EXPIRED_LEASES = f"""
SELECT {TASK_COLUMNS} FROM file_export_task
 WHERE status = 'RUNNING' AND lease_until <= {{now}}
 ORDER BY lease_until, id LIMIT :limit
"""

# At start-up: RUNNING leases not yet expired, to find a dead predecessor's
# (actors.core.lease.is_predecessor_lease). idx_file_export_lease.
SELECT_LIVE_LEASES = f"""
SELECT {TASK_COLUMNS} FROM file_export_task
 WHERE status = 'RUNNING' AND lease_until > {{now}}
 ORDER BY lease_until, id LIMIT :limit
"""

# A dead predecessor's lease ends now, fenced by version and owner; lease recovery (above)
# then takes the task as for any expired lease.
EXPIRE_LEASE = """
UPDATE file_export_task
   SET lease_until = {now}, updated_at = {now}
 WHERE id = :id AND dispatch_version = :dispatch_version AND status = 'RUNNING'
   AND lease_owner = :owner
"""

RECOVER_LEASE_RETRY = """
UPDATE file_export_task
   SET status = 'PENDING', dispatch_version = dispatch_version + 1, next_retry_at = {now},
       failure_message = :failure_message, processed_rows = 0, total_rows = NULL,
       object_key = NULL, lease_owner = NULL, lease_until = NULL, handback_count = 0,
       updated_at = {now}
 WHERE id = :id AND dispatch_version = :dispatch_version AND status = 'RUNNING'
   AND lease_until <= {now}
"""

RECOVER_LEASE_FAIL = """
UPDATE file_export_task
   SET status = 'FAILED', failure_message = :failure_message, completed_at = {now},
       object_key = NULL, lease_owner = NULL, lease_until = NULL, handback_count = 0,
       updated_at = {now}
 WHERE id = :id AND dispatch_version = :dispatch_version AND status = 'RUNNING'
   AND lease_until <= {now}
"""

# (3) CLAIMED outbox rows whose publisher lease expired: back to PENDING, same version.
# idx_file_export_outbox_publish: the CLAIMED rows are the few in flight. due_at stays:
# the row was never sent, so it has been due since it first became due.
RELEASE_EXPIRED_OUTBOX_CLAIMS = """
UPDATE file_export_outbox
   SET status = 'PENDING', next_retry_at = {now}, lease_owner = NULL, lease_until = NULL,
       updated_at = {now}
 WHERE status = 'CLAIMED' AND lease_until <= {now}
"""

# (4) retention (§15): delete the file first, mark EXPIRED only after.
# idx_file_export_expiry: only the files already due are read, oldest first.
SELECT_EXPIRED_FILES = """
SELECT id, object_key FROM file_export_task
 WHERE status = 'SUCCEEDED' AND expires_at <= {now}
 ORDER BY expires_at, id LIMIT :limit
"""

MARK_EXPIRED = """
UPDATE file_export_task SET status = 'EXPIRED', updated_at = {now}
 WHERE id = :id AND status = 'SUCCEEDED' AND expires_at <= {now}
"""

GET_TASK_FILE_STATE = "SELECT status, object_key FROM file_export_task WHERE id = :id"

# SENT rows older than the retention, at most 5000 per statement (§15), oldest first on
# idx_file_export_outbox_sent. The select finds the 5000th candidate; the delete takes
# the index range up to it, (sent_at, id) <= (bound), written without row values so that
# both planners see the range on sent_at. One statement text serves both dialects.
SELECT_PRUNE_BOUND = """
SELECT sent_at, id FROM file_export_outbox
 WHERE status = 'SENT' AND sent_at <= {now-:retention_seconds}
 ORDER BY sent_at, id LIMIT 1 OFFSET :offset
"""
PRUNE_SENT_OUTBOX = """
DELETE FROM file_export_outbox
 WHERE status = 'SENT' AND sent_at <= {now-:retention_seconds}
   AND sent_at <= :max_sent_at AND (sent_at < :max_sent_at OR id <= :max_id)
"""
PRUNE_ALL_SENT_OUTBOX = """
DELETE FROM file_export_outbox
 WHERE status = 'SENT' AND sent_at <= {now-:retention_seconds}
"""

# Gauges: idx_file_export_dispatch (its first due entry) and an outbox index led by status
# (the unsent rows only; {live:} keeps SQLite off a scan after ANALYZE). The backlog is the
# unsent rows that have BECOME DUE, aged from their first due time (due_at), which send
# back-off never moves: a row whose sends keep failing (an unreachable broker) ages on
# through its back-off, so the gauge sees an outage. The command of a task waiting out a
# 15-minute retry is written with due_at = the retry time: it is not due yet, is not
# counted, and no "outbox backlog" alert fires during a normal retry wait. A row written
# by a release without due_at (NULL) is aged as before, from next_retry_at. The highest
# attempt count covers every unsent row.
SAMPLE_QUEUE = """
SELECT MIN(next_retry_at) AS oldest FROM file_export_task
 WHERE status = 'PENDING' AND next_retry_at <= {now}
"""
SAMPLE_OUTBOX = """
SELECT COUNT(CASE WHEN COALESCE(due_at, next_retry_at) <= {now} THEN 1 END) AS pending,
       MIN(CASE WHEN COALESCE(due_at, next_retry_at) <= {now}
                THEN COALESCE(due_at, next_retry_at) END) AS oldest,
       MAX(attempt_count) AS max_attempt
  FROM file_export_outbox WHERE {live:status IN ('PENDING', 'CLAIMED')}
"""

# --- DLQ quarantine (§9.4.2): both in one transaction, one row each --------------------

QUARANTINE_OUTBOX = """
UPDATE file_export_outbox
   SET status = 'QUARANTINED', last_error = :last_error, updated_at = {now}
 WHERE event_id = :event_id AND task_id = :task_id AND dispatch_version = :dispatch_version
   AND status IN ('SENT', 'PENDING', 'CLAIMED')
"""

FAIL_QUARANTINED_TASK = """
UPDATE file_export_task
   SET status = 'FAILED', failure_message = :failure_message, completed_at = {now},
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id AND dispatch_version = :dispatch_version AND status = 'PENDING'
"""

# --- start-up and shutdown of an embedded instance ---------------------------------------

# The in-process bus starts empty: commands it held when the process stopped are gone.
# Send them again at once (same rows, same version) instead of after sentStaleSeconds.
# Found from the PENDING tasks (idx_file_export_dispatch, then idx_file_export_outbox_task),
# not from the SENT rows, which are nearly all history (CROSS JOIN: see above); each row
# is reset by id with the condition checked again.
SELECT_SENT_OF_PENDING_TASKS = """
SELECT o.id FROM file_export_task t
 CROSS JOIN file_export_outbox o ON o.task_id = t.id AND o.dispatch_version = t.dispatch_version
 WHERE t.status = 'PENDING' AND o.status = 'SENT'
"""
REQUEUE_SENT = """
UPDATE file_export_outbox
   SET status = 'PENDING', next_retry_at = {now}, due_at = {now},
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id
   AND status = 'SENT'
   AND EXISTS (SELECT 1 FROM file_export_task t
                WHERE t.id = file_export_outbox.task_id
                  AND t.dispatch_version = file_export_outbox.dispatch_version
                  AND t.status = 'PENDING')
"""

# Hand-backs (actors/core/handback.py): a run ended by a shutdown, a database fault or a
# watchdog outage hands its task back at once, at a new version (the old attempt's writes
# stay fenced out), and adds one to the hand-backs in a row. Up to
# FILE_EXPORT_MAX_HANDBACKS in a row the attempt is not counted, since nothing failed
# (RELEASE_LEASE); past it the attempt counts (HAND_BACK_COUNTED), and the last one ends
# the task (HAND_BACK_FAIL), each with a failure_message saying why. Every other way an
# attempt ends (COMPLETE_TASK, FAIL_TASK, SCHEDULE_RETRY, RECOVER_LEASE_*) and a manual
# retry set handback_count back to 0.
RELEASE_LEASE = """
UPDATE file_export_task
   SET status = 'PENDING', dispatch_version = dispatch_version + 1,
       attempt_count = attempt_count - 1, handback_count = handback_count + 1,
       next_retry_at = {now},
       processed_rows = 0, total_rows = NULL, object_key = NULL,
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
"""
HAND_BACK_COUNTED = """
UPDATE file_export_task
   SET status = 'PENDING', dispatch_version = dispatch_version + 1,
       handback_count = handback_count + 1, next_retry_at = {now},
       failure_message = :failure_message,
       processed_rows = 0, total_rows = NULL, object_key = NULL,
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
"""
HAND_BACK_FAIL = """
UPDATE file_export_task
   SET status = 'FAILED', failure_message = :failure_message, completed_at = {now},
       handback_count = handback_count + 1,
       object_key = NULL, lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
"""


# --- every statement by name ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Statements:
    """Every statement above by its name, one field each, so a type checker sees each
    name a store uses: ``TEMPLATES`` holds the templates, ``render`` the same texts for
    one dialect (the store renders them once, when it is built)."""

    DB_NOW: str
    LOCK_CREATE_GUARD: str
    FIND_DUPLICATE_ACTIVE: str
    COUNT_ACTIVE_FOR_ADMISSION: str
    INSERT_TASK: str
    INSERT_OUTBOX_NOW: str
    INSERT_OUTBOX_AT: str
    GET_TASK: str
    GET_OUTBOX: str
    GET_OUTBOX_BY_EVENT: str
    LIST_OUTBOX_FOR_TASK: str
    SELECT_DUE_OUTBOX: str
    CLAIM_OUTBOX: str
    MARK_OUTBOX_SENT: str
    MARK_OUTBOX_SEND_FAILED: str
    CLAIM_TASK: str
    SELECT_RUNNING_REQUESTERS_OF_OWNER: str
    SELECT_DUE_PENDING_TASKS: str
    RENEW_LEASE: str
    RECORD_OBJECT_KEY: str
    REPORT_PROGRESS: str
    COMPLETE_TASK: str
    FAIL_TASK: str
    SCHEDULE_RETRY: str
    MANUAL_RETRY: str
    CANCEL_TASK: str
    CLOSE_UNSENT_OUTBOX_OF_TASK: str
    CLOSE_UNSENT_OUTBOX_OF_CLAIM: str
    INSERT_TASK_EVENT: str
    LIST_TASK_EVENTS: str
    LIVE_TASKS_OF_REQUESTER: str
    LIVE_TASKS_OF_SCOPE: str
    NEWEST_TASKS_OF_REQUESTER: str
    NEWEST_TASKS_OF_SCOPE: str
    SELECT_EVENT_PRUNE_BOUND: str
    PRUNE_TASK_EVENTS: str
    PRUNE_ALL_TASK_EVENTS: str
    SELECT_TASKS_WITHOUT_OUTBOX: str
    SELECT_STALE_SENT_OUTBOX: str
    REDISPATCH_STALE_SENT: str
    SELECT_EXPIRED_LEASES: str
    SELECT_LIVE_LEASES: str
    EXPIRE_LEASE: str
    RECOVER_LEASE_RETRY: str
    RECOVER_LEASE_FAIL: str
    RELEASE_EXPIRED_OUTBOX_CLAIMS: str
    SELECT_EXPIRED_FILES: str
    MARK_EXPIRED: str
    GET_TASK_FILE_STATE: str
    SELECT_PRUNE_BOUND: str
    PRUNE_SENT_OUTBOX: str
    PRUNE_ALL_SENT_OUTBOX: str
    SAMPLE_QUEUE: str
    SAMPLE_OUTBOX: str
    QUARANTINE_OUTBOX: str
    FAIL_QUARANTINED_TASK: str
    SELECT_SENT_OF_PENDING_TASKS: str
    REQUEUE_SENT: str
    RELEASE_LEASE: str
    HAND_BACK_COUNTED: str
    HAND_BACK_FAIL: str

    def render(self, dialect: Dialect) -> Statements:
        """These texts rendered for ``dialect`` (``db.dialect``: ``{now}``, ``:name`` …)."""
        return Statements(*(dialect.render(text) for text in astuple(self)))


TEMPLATES = Statements(
    DB_NOW=DB_NOW,
    LOCK_CREATE_GUARD=LOCK_CREATE_GUARD,
    FIND_DUPLICATE_ACTIVE=FIND_DUPLICATE_ACTIVE,
    COUNT_ACTIVE_FOR_ADMISSION=COUNT_ACTIVE_FOR_ADMISSION,
    INSERT_TASK=INSERT_TASK,
    INSERT_OUTBOX_NOW=INSERT_OUTBOX_NOW,
    INSERT_OUTBOX_AT=INSERT_OUTBOX_AT,
    GET_TASK=GET_TASK,
    GET_OUTBOX=GET_OUTBOX,
    GET_OUTBOX_BY_EVENT=GET_OUTBOX_BY_EVENT,
    LIST_OUTBOX_FOR_TASK=LIST_OUTBOX_FOR_TASK,
    SELECT_DUE_OUTBOX=SELECT_DUE_OUTBOX,
    CLAIM_OUTBOX=CLAIM_OUTBOX,
    MARK_OUTBOX_SENT=MARK_OUTBOX_SENT,
    MARK_OUTBOX_SEND_FAILED=MARK_OUTBOX_SEND_FAILED,
    CLAIM_TASK=CLAIM_TASK,
    SELECT_RUNNING_REQUESTERS_OF_OWNER=SELECT_RUNNING_REQUESTERS_OF_OWNER,
    SELECT_DUE_PENDING_TASKS=SELECT_DUE_PENDING_TASKS,
    RENEW_LEASE=RENEW_LEASE,
    RECORD_OBJECT_KEY=RECORD_OBJECT_KEY,
    REPORT_PROGRESS=REPORT_PROGRESS,
    COMPLETE_TASK=COMPLETE_TASK,
    FAIL_TASK=FAIL_TASK,
    SCHEDULE_RETRY=SCHEDULE_RETRY,
    MANUAL_RETRY=MANUAL_RETRY,
    CANCEL_TASK=CANCEL_TASK,
    CLOSE_UNSENT_OUTBOX_OF_TASK=CLOSE_UNSENT_OUTBOX_OF_TASK,
    CLOSE_UNSENT_OUTBOX_OF_CLAIM=CLOSE_UNSENT_OUTBOX_OF_CLAIM,
    INSERT_TASK_EVENT=INSERT_TASK_EVENT,
    LIST_TASK_EVENTS=LIST_TASK_EVENTS,
    LIVE_TASKS_OF_REQUESTER=LIVE_TASKS_OF_REQUESTER,
    LIVE_TASKS_OF_SCOPE=LIVE_TASKS_OF_SCOPE,
    NEWEST_TASKS_OF_REQUESTER=NEWEST_TASKS_OF_REQUESTER,
    NEWEST_TASKS_OF_SCOPE=NEWEST_TASKS_OF_SCOPE,
    SELECT_EVENT_PRUNE_BOUND=SELECT_EVENT_PRUNE_BOUND,
    PRUNE_TASK_EVENTS=PRUNE_TASK_EVENTS,
    PRUNE_ALL_TASK_EVENTS=PRUNE_ALL_TASK_EVENTS,
    SELECT_TASKS_WITHOUT_OUTBOX=SELECT_TASKS_WITHOUT_OUTBOX,
    SELECT_STALE_SENT_OUTBOX=SELECT_STALE_SENT_OUTBOX,
    REDISPATCH_STALE_SENT=REDISPATCH_STALE_SENT,
    SELECT_EXPIRED_LEASES=SELECT_EXPIRED_LEASES,
    SELECT_LIVE_LEASES=SELECT_LIVE_LEASES,
    EXPIRE_LEASE=EXPIRE_LEASE,
    RECOVER_LEASE_RETRY=RECOVER_LEASE_RETRY,
    RECOVER_LEASE_FAIL=RECOVER_LEASE_FAIL,
    RELEASE_EXPIRED_OUTBOX_CLAIMS=RELEASE_EXPIRED_OUTBOX_CLAIMS,
    SELECT_EXPIRED_FILES=SELECT_EXPIRED_FILES,
    MARK_EXPIRED=MARK_EXPIRED,
    GET_TASK_FILE_STATE=GET_TASK_FILE_STATE,
    SELECT_PRUNE_BOUND=SELECT_PRUNE_BOUND,
    PRUNE_SENT_OUTBOX=PRUNE_SENT_OUTBOX,
    PRUNE_ALL_SENT_OUTBOX=PRUNE_ALL_SENT_OUTBOX,
    SAMPLE_QUEUE=SAMPLE_QUEUE,
    SAMPLE_OUTBOX=SAMPLE_OUTBOX,
    QUARANTINE_OUTBOX=QUARANTINE_OUTBOX,
    FAIL_QUARANTINED_TASK=FAIL_QUARANTINED_TASK,
    SELECT_SENT_OF_PENDING_TASKS=SELECT_SENT_OF_PENDING_TASKS,
    REQUEUE_SENT=REQUEUE_SENT,
    RELEASE_LEASE=RELEASE_LEASE,
    HAND_BACK_COUNTED=HAND_BACK_COUNTED,
    HAND_BACK_FAIL=HAND_BACK_FAIL,
)
