"""Start-up and shutdown of an instance."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class InstanceStatements:
    """Start-up and shutdown of an instance."""

    # The in-process bus starts empty: commands it held when the process stopped are gone.
    # Send them again at once (same rows, same version) instead of after sentStaleSeconds.
    # Not a command a slot saw (seen_at): it was acked, not held, and its task waits for a
    # slot, which pulls it from the database (actors.core.dispatch.command_state).
    # Found from the PENDING tasks (idx_file_export_dispatch, then idx_file_export_outbox_task),
    # not from the SENT rows, which are nearly all history (CROSS JOIN: see above); each row
    # is reset by id with the condition checked again.
    SELECT_SENT_OF_PENDING_TASKS: str = """
SELECT o.id FROM file_export_task t
 CROSS JOIN file_export_outbox o ON o.task_id = t.id AND o.dispatch_version = t.dispatch_version
 WHERE t.status = 'PENDING' AND o.status = 'SENT' AND o.seen_at IS NULL
"""

    REQUEUE_SENT: str = """
UPDATE file_export_outbox
   SET status = 'PENDING', next_retry_at = {now}, due_at = {now},
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id
   AND status = 'SENT'
   AND seen_at IS NULL
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
    RELEASE_LEASE: str = """
UPDATE file_export_task
   SET status = 'PENDING', dispatch_version = dispatch_version + 1,
       attempt_count = attempt_count - 1, handback_count = handback_count + 1,
       next_retry_at = {now},
       processed_rows = 0, total_rows = NULL, object_key = NULL,
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
"""

    HAND_BACK_COUNTED: str = """
UPDATE file_export_task
   SET status = 'PENDING', dispatch_version = dispatch_version + 1,
       handback_count = handback_count + 1, next_retry_at = {now},
       failure_message = :failure_message, failure_code = 'handed-back',
       processed_rows = 0, total_rows = NULL, object_key = NULL,
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
"""

    HAND_BACK_FAIL: str = """
UPDATE file_export_task
   SET status = 'FAILED', failure_message = :failure_message, failure_code = 'handed-back',
       completed_at = {now},
       handback_count = handback_count + 1,
       object_key = NULL, lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id AND status = 'RUNNING'
   AND dispatch_version = :dispatch_version AND lease_owner = :owner
"""
