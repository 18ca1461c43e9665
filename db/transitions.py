"""One SQL text per transition, written once for every dialect (see ``db.dialect``).

Every time decision reads the DB clock through ``{now}`` (§8.6, DESIGN invariant 7).
Every executor write is fenced by id + dispatch_version + lease_owner + status RUNNING
(DESIGN invariant 8). Each UPDATE also sets ``updated_at`` because SQLite has no
``ON UPDATE`` clause.

Names follow the transition they perform; the seed section that defines it is given.
"""

from __future__ import annotations

TASK_COLUMNS = (
    "id, task_no, export_type, task_name, format, status, parameters_json, tenant_id, "
    "app_code, requested_by, dispatch_version, attempt_count, max_attempts, next_retry_at, "
    "lease_owner, lease_until, last_heartbeat_at, execution_deadline_at, processed_rows, "
    "total_rows, file_name, object_key, content_type, size_bytes, failure_message, "
    "requested_at, started_at, completed_at, expires_at, updated_at"
)
OUTBOX_COLUMNS = (
    "id, event_id, task_id, dispatch_version, topic, tag, message_key, payload_json, status, "
    "attempt_count, next_retry_at, lease_owner, lease_until, sent_at, last_error, created_at, "
    "updated_at"
)

DB_NOW = "SELECT {now} AS db_now"

# --- create (§7.2, §14) -------------------------------------------------------------------

LOCK_CREATE_GUARD = (
    "SELECT guard_key FROM file_export_task_guard WHERE guard_key = 'GLOBAL_CREATE' {for_update}"
)

FIND_DUPLICATE_ACTIVE = f"""
SELECT {TASK_COLUMNS} FROM file_export_task
 WHERE tenant_id = :tenant_id AND app_code = :app_code AND requested_by = :requested_by
   AND export_type = :export_type AND parameters_hash = :parameters_hash
   AND status IN ('PENDING', 'RUNNING')
   AND requested_at >= {{now-:window_seconds}}
 ORDER BY id DESC LIMIT 1
"""

# The three counts admission needs (actors.core.admission), read under the guard lock.
# by_user and by_user_in_type use idx_file_export_requester_active, by_type
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
   next_retry_at, processed_rows, requested_at, created_at, updated_at)
VALUES
  (:id, :task_no, :export_type, :task_name, :format, 'PENDING', :parameters_json,
   :parameters_hash, :tenant_id, :app_code, :requested_by, 1, 0, :max_attempts,
   {now}, 0, {now}, {now}, {now})
"""

# The outbox row's next_retry_at is passed in when it must equal the task's (§9.2 step 4);
# ``{now}`` otherwise.
INSERT_OUTBOX_NOW = """
INSERT INTO file_export_outbox
  (id, event_id, task_id, dispatch_version, topic, tag, message_key, payload_json, status,
   attempt_count, next_retry_at, created_at, updated_at)
VALUES
  (:id, :event_id, :task_id, :dispatch_version, :topic, :tag, :message_key, :payload_json,
   'PENDING', 0, {now}, {now}, {now})
"""

INSERT_OUTBOX_AT = """
INSERT INTO file_export_outbox
  (id, event_id, task_id, dispatch_version, topic, tag, message_key, payload_json, status,
   attempt_count, next_retry_at, created_at, updated_at)
VALUES
  (:id, :event_id, :task_id, :dispatch_version, :topic, :tag, :message_key, :payload_json,
   'PENDING', 0, :next_retry_at, {now}, {now})
"""

# --- reads ------------------------------------------------------------------------------

GET_TASK = f"SELECT {TASK_COLUMNS}, {{now}} AS db_now FROM file_export_task WHERE id = :id"

LIST_TASKS_SCOPED = f"""
SELECT {TASK_COLUMNS} FROM file_export_task
 WHERE tenant_id = :tenant_id AND app_code = :app_code
   AND (:all_users = 1 OR requested_by = :requested_by)
   AND (:status IS NULL OR status = :status)
 ORDER BY id DESC LIMIT :limit OFFSET :offset
"""

COUNT_TASKS_SCOPED = """
SELECT COUNT(*) AS n FROM file_export_task
 WHERE tenant_id = :tenant_id AND app_code = :app_code
   AND (:all_users = 1 OR requested_by = :requested_by)
   AND (:status IS NULL OR status = :status)
"""

GET_OUTBOX = f"SELECT {OUTBOX_COLUMNS} FROM file_export_outbox WHERE id = :id"

# Did an outbox row this caller drew an event id for get written? Transitions that insert
# one re-read it after a lost COMMIT (the event id is unique and drawn before the first
# attempt, so finding it proves the earlier attempt landed).
GET_OUTBOX_BY_EVENT = f"SELECT {OUTBOX_COLUMNS} FROM file_export_outbox WHERE event_id = :event_id"

LIST_OUTBOX_FOR_TASK = (
    f"SELECT {OUTBOX_COLUMNS} FROM file_export_outbox WHERE task_id = :task_id ORDER BY id"
)

# --- publisher (§7.4) -------------------------------------------------------------------

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

# Fair share (actors.core.fairness): what one instance's slots hold, and what waits.
# RUNNING rows are few (at most the slots of all instances): the status prefix of
# idx_file_export_lease finds them. The due list walks idx_file_export_dispatch.
COUNT_RUNNING_BY_REQUESTER_OF_OWNER = """
SELECT tenant_id, app_code, requested_by, COUNT(*) AS n FROM file_export_task
 WHERE status = 'RUNNING' AND lease_owner = :owner
 GROUP BY tenant_id, app_code, requested_by
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
       lease_owner = NULL, lease_until = NULL, failure_message = NULL, updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
   AND execution_deadline_at > {now}
"""

FAIL_TASK = """
UPDATE file_export_task
   SET status = 'FAILED', failure_message = :failure_message, completed_at = {now},
       object_key = NULL, lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
"""

# §9.2 step 3: new version, backoff by DB time, progress reset, failure_message kept.
SCHEDULE_RETRY = """
UPDATE file_export_task
   SET status = 'PENDING', dispatch_version = dispatch_version + 1,
       next_retry_at = {now+:backoff_seconds},
       failure_message = :failure_message,
       processed_rows = 0, total_rows = NULL, object_key = NULL,
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
"""

# --- manual retry (§9.3) ----------------------------------------------------------------

MANUAL_RETRY = """
UPDATE file_export_task
   SET status = 'PENDING', dispatch_version = dispatch_version + 1,
       next_retry_at = {now}, failure_message = NULL, attempt_count = 0,
       processed_rows = 0, total_rows = NULL, started_at = NULL, completed_at = NULL,
       object_key = NULL, file_name = NULL, size_bytes = NULL, content_type = NULL,
       lease_owner = NULL, lease_until = NULL, execution_deadline_at = NULL,
       updated_at = {now}
 WHERE id = :id AND status = 'FAILED' AND dispatch_version = :dispatch_version
"""

# --- reconciler (§8.5, §15) -------------------------------------------------------------

# (1) case A: the current version has no outbox row at all -> insert one, same version.
# NOT EXISTS has no status filter on purpose: a QUARANTINED row blocks it too (§9.4).
SELECT_TASKS_WITHOUT_OUTBOX = """
SELECT t.id, t.export_type, t.dispatch_version FROM file_export_task t
 WHERE t.status = 'PENDING'
   AND t.next_retry_at <= {now-:grace_seconds}
   AND NOT EXISTS (SELECT 1 FROM file_export_outbox o
                    WHERE o.task_id = t.id AND o.dispatch_version = t.dispatch_version)
 ORDER BY t.next_retry_at, t.id LIMIT :limit
"""

# (1) case B: SENT long ago while the task is still PENDING at that version -> the same
# row back to PENDING (same version; status 'SENT' excludes QUARANTINED rows).
_STALE_SENT_CONDITION = """
       OUTBOX.status = 'SENT'
   AND OUTBOX.sent_at <= {now-:stale_seconds}
   AND EXISTS (SELECT 1 FROM file_export_task t
                WHERE t.id = OUTBOX.task_id AND t.dispatch_version = OUTBOX.dispatch_version
                  AND t.status = 'PENDING'
                  AND t.next_retry_at <= {now-:grace_seconds})
"""
SELECT_STALE_SENT_OUTBOX = (
    "SELECT o.id FROM file_export_outbox o WHERE"
    + _STALE_SENT_CONDITION.replace("OUTBOX.", "o.")
    + " ORDER BY o.sent_at, o.id LIMIT :limit"
)
# Re-checks the whole condition per row; MySQL cannot subquery the updated table, so the
# correlation names the table itself.
REDISPATCH_STALE_SENT = (
    "UPDATE file_export_outbox SET status = 'PENDING', next_retry_at = {now},"
    " lease_owner = NULL, lease_until = NULL, updated_at = {now}"
    " WHERE id = :id AND" + _STALE_SENT_CONDITION.replace("OUTBOX.", "file_export_outbox.")
)

# (2) expired RUNNING leases.
SELECT_EXPIRED_LEASES = f"""
SELECT {TASK_COLUMNS} FROM file_export_task
 WHERE status = 'RUNNING' AND lease_until <= {{now}}
 ORDER BY lease_until, id LIMIT :limit
"""

RECOVER_LEASE_RETRY = """
UPDATE file_export_task
   SET status = 'PENDING', dispatch_version = dispatch_version + 1, next_retry_at = {now},
       failure_message = :failure_message, processed_rows = 0, total_rows = NULL,
       object_key = NULL, lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id AND dispatch_version = :dispatch_version AND status = 'RUNNING'
   AND lease_until <= {now}
"""

RECOVER_LEASE_FAIL = """
UPDATE file_export_task
   SET status = 'FAILED', failure_message = :failure_message, completed_at = {now},
       object_key = NULL, lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id AND dispatch_version = :dispatch_version AND status = 'RUNNING'
   AND lease_until <= {now}
"""

# (3) CLAIMED outbox rows whose publisher lease expired: back to PENDING, same version.
RELEASE_EXPIRED_OUTBOX_CLAIMS = """
UPDATE file_export_outbox
   SET status = 'PENDING', next_retry_at = {now}, lease_owner = NULL, lease_until = NULL,
       updated_at = {now}
 WHERE status = 'CLAIMED' AND lease_until <= {now}
"""

# (4) retention (§15): delete the file first, mark EXPIRED only after.
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

# SENT rows older than the retention, at most 5000 per statement (§15). The bound comes
# from the 5000th candidate id so one statement text serves both dialects.
SELECT_PRUNE_BOUND = """
SELECT id FROM file_export_outbox
 WHERE status = 'SENT' AND sent_at <= {now-:retention_seconds}
 ORDER BY id LIMIT 1 OFFSET :offset
"""
PRUNE_SENT_OUTBOX = """
DELETE FROM file_export_outbox
 WHERE status = 'SENT' AND sent_at <= {now-:retention_seconds} AND id <= :max_id
"""

# Gauges (§13).
SAMPLE_QUEUE = """
SELECT MIN(next_retry_at) AS oldest FROM file_export_task
 WHERE status = 'PENDING' AND next_retry_at <= {now}
"""
SAMPLE_OUTBOX = """
SELECT COUNT(*) AS pending, MIN(created_at) AS oldest, MAX(attempt_count) AS max_attempt
  FROM file_export_outbox WHERE status IN ('PENDING', 'CLAIMED')
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
REQUEUE_SENT_OF_PENDING_TASKS = """
UPDATE file_export_outbox
   SET status = 'PENDING', next_retry_at = {now}, lease_owner = NULL, lease_until = NULL,
       updated_at = {now}
 WHERE status = 'SENT'
   AND EXISTS (SELECT 1 FROM file_export_task t
                WHERE t.id = file_export_outbox.task_id
                  AND t.dispatch_version = file_export_outbox.dispatch_version
                  AND t.status = 'PENDING')
"""

# A run cancelled by a shutdown hands its task back at once: a new version (the old
# attempt's writes stay fenced out), the attempt not counted, since nothing failed.
RELEASE_LEASE = """
UPDATE file_export_task
   SET status = 'PENDING', dispatch_version = dispatch_version + 1,
       attempt_count = attempt_count - 1, next_retry_at = {now},
       processed_rows = 0, total_rows = NULL, object_key = NULL,
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
"""
