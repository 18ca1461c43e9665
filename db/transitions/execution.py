"""A consumer's claim, lease, progress and settlement of a run (§8.2 – §8.4)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExecutionStatements:
    """A consumer's claim, lease, progress and settlement of a run (§8.2 – §8.4)."""

    CLAIM_TASK: str = """
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
       failure_message = NULL, failure_code = NULL,
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
    CLOSE_UNSENT_OUTBOX_OF_CLAIM: str = """
UPDATE file_export_outbox
   SET status = 'SENT', sent_at = {now},
       last_error = 'not sent: the task was claimed from the database first',
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE task_id = :task_id AND dispatch_version = :dispatch_version AND status = 'PENDING'
"""

    # A slot acked a delivery of this version without claiming its task, which waits for a
    # slot (actors.core.dispatch.marks_command_seen): the command is not lost, and the
    # reconciler never sends it again (§8.5-1). The first sighting is kept; the row of any
    # status, since whether it is re-sent is the reconciler's question, asked of the task's
    # current version only. uk_file_export_outbox_task_version.
    MARK_COMMAND_SEEN: str = """
UPDATE file_export_outbox
   SET seen_at = {now}, updated_at = {now}
 WHERE task_id = :task_id AND dispatch_version = :dispatch_version AND seen_at IS NULL
"""

    # Fair share (actors.core.fairness): what one instance's slots hold, and what waits.
    # RUNNING rows are few (at most the slots of all instances): the status prefix of
    # idx_file_export_lease finds them. The caller counts them by requester: a GROUP BY would
    # tempt SQLite to walk all of idx_file_export_requester_status for its order instead.
    # The due list walks idx_file_export_dispatch.
    SELECT_RUNNING_REQUESTERS_OF_OWNER: str = """
SELECT tenant_id, app_code, requested_by FROM file_export_task
 WHERE status = 'RUNNING' AND lease_owner = :owner
"""

    SELECT_DUE_PENDING_TASKS: str = """
SELECT id, dispatch_version, tenant_id, app_code, requested_by, next_retry_at
  FROM file_export_task
 WHERE status = 'PENDING' AND next_retry_at <= {now}
 ORDER BY next_retry_at, id LIMIT :limit
"""

    RENEW_LEASE: str = """
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
    RECORD_OBJECT_KEY: str = """
UPDATE file_export_task
   SET object_key = :object_key, updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
"""

    # Progress is for display; the lease is for correctness: separate writes (§8.3).
    REPORT_PROGRESS: str = """
UPDATE file_export_task
   SET processed_rows = :processed_rows, total_rows = :total_rows, updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
"""

    COMPLETE_TASK: str = """
UPDATE file_export_task
   SET status = 'SUCCEEDED', file_name = :file_name, object_key = :object_key,
       content_type = :content_type, size_bytes = :size_bytes,
       total_rows = :total_rows, processed_rows = :processed_rows,
       completed_at = {now},
       expires_at = {now+:retention_seconds},
       lease_owner = NULL, lease_until = NULL, failure_message = NULL, failure_code = NULL,
       warnings_json = :warnings_json, handback_count = 0, updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
   AND execution_deadline_at > {now}
"""

    FAIL_TASK: str = """
UPDATE file_export_task
   SET status = 'FAILED', failure_message = :failure_message, failure_code = :failure_code,
       completed_at = {now}, object_key = NULL, lease_owner = NULL, lease_until = NULL,
       handback_count = 0, updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
"""

    # §9.2 step 3: new version, backoff by DB time, progress reset, failure_message kept.
    SCHEDULE_RETRY: str = """
UPDATE file_export_task
   SET status = 'PENDING', dispatch_version = dispatch_version + 1,
       next_retry_at = {now+:backoff_seconds},
       failure_message = :failure_message, failure_code = :failure_code, handback_count = 0,
       processed_rows = 0, total_rows = NULL, object_key = NULL,
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
"""
