"""The publisher's outbox transitions (§7.4) and the DLQ quarantine (§9.4.2)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OutboxStatements:
    """The publisher's outbox transitions (§7.4) and the DLQ quarantine (§9.4.2)."""

    # idx_file_export_outbox_publish.
    SELECT_DUE_OUTBOX: str = """
SELECT id FROM file_export_outbox
 WHERE status = 'PENDING' AND next_retry_at <= {now}
 ORDER BY next_retry_at, id LIMIT :limit
"""

    CLAIM_OUTBOX: str = """
UPDATE file_export_outbox
   SET status = 'CLAIMED', lease_owner = :owner,
       lease_until = {now+:lease_seconds},
       attempt_count = attempt_count + 1, updated_at = {now}
 WHERE id = :id AND status = 'PENDING' AND next_retry_at <= {now}
"""

    MARK_OUTBOX_SENT: str = """
UPDATE file_export_outbox
   SET status = 'SENT', sent_at = {now}, lease_owner = NULL, lease_until = NULL,
       updated_at = {now}
 WHERE id = :id AND status = 'CLAIMED' AND lease_owner = :owner
"""

    MARK_OUTBOX_SEND_FAILED: str = """
UPDATE file_export_outbox
   SET status = 'PENDING', next_retry_at = {now+:backoff_seconds}, last_error = :last_error,
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id AND status = 'CLAIMED' AND lease_owner = :owner
"""

    QUARANTINE_OUTBOX: str = """
UPDATE file_export_outbox
   SET status = 'QUARANTINED', last_error = :last_error, updated_at = {now}
 WHERE event_id = :event_id AND task_id = :task_id AND dispatch_version = :dispatch_version
   AND status IN ('SENT', 'PENDING', 'CLAIMED')
"""

    FAIL_QUARANTINED_TASK: str = """
UPDATE file_export_task
   SET status = 'FAILED', failure_message = :failure_message,
       failure_code = 'command-corrupted', completed_at = {now},
       lease_owner = NULL, lease_until = NULL, updated_at = {now}
 WHERE id = :id AND dispatch_version = :dispatch_version AND status = 'PENDING'
"""
