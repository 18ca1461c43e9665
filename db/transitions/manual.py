"""What a user or an operator asks of a finished or active task: manual retry (§9.3), cancel."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ManualStatements:
    """What a user or an operator asks of a finished or active task: manual retry (§9.3), cancel."""

    MANUAL_RETRY: str = """
UPDATE file_export_task
   SET status = 'PENDING', dispatch_version = dispatch_version + 1,
       next_retry_at = {now}, failure_message = NULL, failure_code = NULL, attempt_count = 0,
       handback_count = 0,
       processed_rows = 0, total_rows = NULL, started_at = NULL, completed_at = NULL,
       object_key = NULL, file_name = NULL, size_bytes = NULL, content_type = NULL,
       lease_owner = NULL, lease_until = NULL, execution_deadline_at = NULL,
       updated_at = {now}
 WHERE id = :id AND status IN ('FAILED', 'CANCELLED') AND dispatch_version = :dispatch_version
"""

    # PENDING or RUNNING -> CANCELLED, whatever the version: the user cancels the task, not one
    # attempt. The lease columns are cleared, so every fenced write of a running attempt
    # (status = 'RUNNING') matches 0 rows from now on; object_key stays, so a manual retry
    # deletes a file the attempt could not delete itself.
    CANCEL_TASK: str = """
UPDATE file_export_task
   SET status = 'CANCELLED', failure_message = :failure_message, failure_code = 'cancelled',
       completed_at = {now},
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id AND status IN ('PENDING', 'RUNNING')
"""

    # The cancelled task's unsent commands (uk_file_export_outbox_task_version): closed as
    # sent-with-a-note, so the publisher never sends them and pruning removes them like any
    # sent row. A command already sent or being sent arrives at a CANCELLED task: the claim's
    # "terminal" no-claim branch acks it.
    CLOSE_UNSENT_OUTBOX_OF_TASK: str = """
UPDATE file_export_outbox
   SET status = 'SENT', sent_at = {now}, last_error = 'not sent: the task was cancelled',
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE task_id = :task_id AND status = 'PENDING'
"""
