"""The reconciler's scans and repairs (§8.5, §15)."""

from __future__ import annotations

from dataclasses import dataclass

from db.transitions.columns import TASK_COLUMNS


@dataclass(frozen=True)
class ReconcilerStatements:
    """The reconciler's scans and repairs (§8.5, §15)."""

    # (1) case A: the current version has no outbox row at all -> insert one, same version.
    # NOT EXISTS has no status filter on purpose: a QUARANTINED row blocks it too (§9.4).
    SELECT_TASKS_WITHOUT_OUTBOX: str = """
SELECT t.id, t.export_type, t.dispatch_version, t.trace_id FROM file_export_task t
 WHERE t.status = 'PENDING'
   AND t.next_retry_at <= {now-:grace_seconds}
   AND NOT EXISTS (SELECT 1 FROM file_export_outbox o
                    WHERE o.task_id = t.id AND o.dispatch_version = t.dispatch_version)
 ORDER BY t.next_retry_at, t.id LIMIT :limit
"""

    # (1) case B: SENT long ago while the task is still PENDING at that version, no slot saw
    # it (seen_at: a slot acked a delivery without a claim, so the task only waits for a
    # slot) and it was not sent again yet (resent_at: once is enough; a third copy would
    # meet the same busy slots) -> the same row back to PENDING (same version; status 'SENT'
    # excludes QUARANTINED rows). The table: actors.core.dispatch.command_state.
    # The select starts from the due PENDING tasks (idx_file_export_dispatch, in its order) and
    # looks up each one's outbox row of its version (idx_file_export_outbox_task): SENT rows
    # are nearly all history, PENDING tasks are the live queue. CROSS JOIN keeps the task
    # table outer in SQLite (MySQL reads it as a plain JOIN and finds the same order).
    SELECT_STALE_SENT_OUTBOX: str = """
SELECT o.id FROM file_export_task t
 CROSS JOIN file_export_outbox o ON o.task_id = t.id AND o.dispatch_version = t.dispatch_version
 WHERE t.status = 'PENDING'
   AND t.next_retry_at <= {now-:grace_seconds}
   AND o.status = 'SENT'
   AND o.sent_at <= {now-:stale_seconds}
   AND o.seen_at IS NULL
   AND o.resent_at IS NULL
 ORDER BY t.next_retry_at, t.id LIMIT :limit
"""

    # Re-checks the whole condition for one row (primary keys); MySQL cannot subquery the
    # updated table, so the correlation names the table itself. The row was sent: unsent
    # again, it is due again from now (due_at), not from when it was first written.
    REDISPATCH_STALE_SENT: str = """
UPDATE file_export_outbox
   SET status = 'PENDING', next_retry_at = {now}, due_at = {now}, resent_at = {now},
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id
   AND status = 'SENT'
   AND sent_at <= {now-:stale_seconds}
   AND seen_at IS NULL
   AND resent_at IS NULL
   AND EXISTS (SELECT 1 FROM file_export_task t
                WHERE t.id = file_export_outbox.task_id
                  AND t.dispatch_version = file_export_outbox.dispatch_version
                  AND t.status = 'PENDING'
                  AND t.next_retry_at <= {now-:grace_seconds})
"""

    # (2) expired RUNNING leases: idx_file_export_lease (id follows lease_until in it).
    SELECT_EXPIRED_LEASES: str = f"""
SELECT {TASK_COLUMNS} FROM file_export_task
 WHERE status = 'RUNNING' AND lease_until <= {{now}}
 ORDER BY lease_until, id LIMIT :limit
"""

    # At start-up: RUNNING leases not yet expired, to find a dead predecessor's
    # (actors.core.lease.is_predecessor_lease). idx_file_export_lease.
    SELECT_LIVE_LEASES: str = f"""
SELECT {TASK_COLUMNS} FROM file_export_task
 WHERE status = 'RUNNING' AND lease_until > {{now}}
 ORDER BY lease_until, id LIMIT :limit
"""

    # A dead predecessor's lease ends now, fenced by version and owner; lease recovery (above)
    # then takes the task as for any expired lease.
    EXPIRE_LEASE: str = """
UPDATE file_export_task
   SET lease_until = {now}, updated_at = {now}
 WHERE id = :id AND dispatch_version = :dispatch_version AND status = 'RUNNING'
   AND lease_owner = :owner
"""

    RECOVER_LEASE_RETRY: str = """
UPDATE file_export_task
   SET status = 'PENDING', dispatch_version = dispatch_version + 1, next_retry_at = {now},
       failure_message = :failure_message, failure_code = 'worker-lost',
       processed_rows = 0, total_rows = NULL,
       object_key = NULL, lease_owner = NULL, lease_until = NULL, handback_count = 0,
       updated_at = {now}
 WHERE id = :id AND dispatch_version = :dispatch_version AND status = 'RUNNING'
   AND lease_until <= {now}
"""

    RECOVER_LEASE_FAIL: str = """
UPDATE file_export_task
   SET status = 'FAILED', failure_message = :failure_message, failure_code = 'worker-lost',
       completed_at = {now},
       object_key = NULL, lease_owner = NULL, lease_until = NULL, handback_count = 0,
       updated_at = {now}
 WHERE id = :id AND dispatch_version = :dispatch_version AND status = 'RUNNING'
   AND lease_until <= {now}
"""

    # (3) CLAIMED outbox rows whose publisher lease expired: back to PENDING, same version.
    # idx_file_export_outbox_publish: the CLAIMED rows are the few in flight. due_at stays:
    # the row was never sent, so it has been due since it first became due.
    RELEASE_EXPIRED_OUTBOX_CLAIMS: str = """
UPDATE file_export_outbox
   SET status = 'PENDING', next_retry_at = {now}, lease_owner = NULL, lease_until = NULL,
       updated_at = {now}
 WHERE status = 'CLAIMED' AND lease_until <= {now}
"""

    # (4) retention (§15): delete the file first, mark EXPIRED only after.
    # idx_file_export_expiry: only the files already due are read, oldest first.
    SELECT_EXPIRED_FILES: str = """
SELECT id, object_key FROM file_export_task
 WHERE status = 'SUCCEEDED' AND expires_at <= {now}
 ORDER BY expires_at, id LIMIT :limit
"""

    MARK_EXPIRED: str = """
UPDATE file_export_task SET status = 'EXPIRED', updated_at = {now}
 WHERE id = :id AND status = 'SUCCEEDED' AND expires_at <= {now}
"""

    # What a task holds of its files, for the orphan scan (actors/core/orphans.py): a lease
    # is alive while RUNNING and not past lease_until on the database clock.
    GET_TASK_FILE_HOLD: str = """
SELECT status, object_key,
       CASE WHEN status = 'RUNNING' AND lease_until > {now} THEN 1 ELSE 0 END AS lease_alive
  FROM file_export_task WHERE id = :id
"""

    # SENT rows older than the retention, at most 5000 per statement (§15), oldest first on
    # idx_file_export_outbox_sent. The select finds the 5000th candidate; the delete takes
    # the index range up to it, (sent_at, id) <= (bound), written without row values so that
    # both planners see the range on sent_at. One statement text serves both dialects.
    SELECT_PRUNE_BOUND: str = """
SELECT sent_at, id FROM file_export_outbox
 WHERE status = 'SENT' AND sent_at <= {now-:retention_seconds}
 ORDER BY sent_at, id LIMIT 1 OFFSET :offset
"""

    PRUNE_SENT_OUTBOX: str = """
DELETE FROM file_export_outbox
 WHERE status = 'SENT' AND sent_at <= {now-:retention_seconds}
   AND sent_at <= :max_sent_at AND (sent_at < :max_sent_at OR id <= :max_id)
"""

    PRUNE_ALL_SENT_OUTBOX: str = """
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
    SAMPLE_QUEUE: str = """
SELECT MIN(next_retry_at) AS oldest FROM file_export_task
 WHERE status = 'PENDING' AND next_retry_at <= {now}
"""

    SAMPLE_OUTBOX: str = """
SELECT COUNT(CASE WHEN COALESCE(due_at, next_retry_at) <= {now} THEN 1 END) AS pending,
       MIN(CASE WHEN COALESCE(due_at, next_retry_at) <= {now}
                THEN COALESCE(due_at, next_retry_at) END) AS oldest,
       MAX(attempt_count) AS max_attempt
  FROM file_export_outbox WHERE {live:status IN ('PENDING', 'CLAIMED')}
"""
