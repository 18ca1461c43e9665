"""Create a task with its first outbox row, under the create guard (design-rules §7.2)."""

from __future__ import annotations

from dataclasses import dataclass

from db.transitions.columns import TASK_COLUMNS


@dataclass(frozen=True)
class CreateStatements:
    """Create a task with its first outbox row, under the create guard (design-rules §7.2)."""

    LOCK_CREATE_GUARD: str = (
        "SELECT guard_key FROM file_export_task_guard"
        " WHERE guard_key = 'GLOBAL_CREATE' {for_update}"
    )

    # idx_file_export_requester_status_time: the requester's PENDING and RUNNING rows (a
    # handful, bounded by the per-user limit); the hash and time are filters. No ORDER BY: the
    # caller takes the newest, because an ORDER BY would tempt a planner to walk the
    # requester's whole history backwards on idx_file_export_requester_time when there is no
    # duplicate. The index is named: with it MariaDB otherwise may intersect the requester's
    # history with the status-led lease index.
    FIND_DUPLICATE_ACTIVE: str = f"""
SELECT {TASK_COLUMNS} FROM file_export_task {{index:idx_file_export_requester_status_time}}
 WHERE tenant_id = :tenant_id AND app_code = :app_code AND requested_by = :requested_by
   AND export_type = :export_type AND parameters_hash = :parameters_hash
   AND status IN ('PENDING', 'RUNNING')
   AND requested_at >= {{now-:window_seconds}}
"""

    # The three counts admission needs (actors.core.admission), read under the guard lock.
    # by_user and by_user_in_type use idx_file_export_requester_status_time, by_type
    # idx_file_export_type_status: each is an index range over active rows only.
    COUNT_ACTIVE_FOR_ADMISSION: str = """
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

    INSERT_TASK: str = """
INSERT INTO file_export_task
  (id, task_no, export_type, task_name, format, status, parameters_json, parameters_hash,
   tenant_id, app_code, requested_by, dispatch_version, attempt_count, max_attempts,
   next_retry_at, processed_rows, requested_at, created_at, updated_at, trace_id,
   requester_name)
VALUES
  (:id, :task_no, :export_type, :task_name, :format, 'PENDING', :parameters_json,
   :parameters_hash, :tenant_id, :app_code, :requested_by, 1, 0, :max_attempts,
   {now}, 0, {now}, {now}, {now}, :trace_id, :requester_name)
"""

    # The outbox row's next_retry_at is passed in when it must equal the task's (§9.2 step 4);
    # ``{now}`` otherwise. due_at is the row's first due time, the same value: send back-off
    # moves next_retry_at, never due_at (the backlog gauge ages a row from it, SAMPLE_OUTBOX).
    INSERT_OUTBOX_NOW: str = """
INSERT INTO file_export_outbox
  (id, event_id, task_id, dispatch_version, topic, tag, message_key, payload_json, status,
   attempt_count, next_retry_at, created_at, updated_at, due_at)
VALUES
  (:id, :event_id, :task_id, :dispatch_version, :topic, :tag, :message_key, :payload_json,
   'PENDING', 0, {now}, {now}, {now}, {now})
"""

    INSERT_OUTBOX_AT: str = """
INSERT INTO file_export_outbox
  (id, event_id, task_id, dispatch_version, topic, tag, message_key, payload_json, status,
   attempt_count, next_retry_at, created_at, updated_at, due_at)
VALUES
  (:id, :event_id, :task_id, :dispatch_version, :topic, :tag, :message_key, :payload_json,
   'PENDING', 0, :next_retry_at, {now}, {now}, :next_retry_at)
"""
