"""The column lists and filter fragments the statements of several subjects share."""

from __future__ import annotations

TASK_COLUMNS = (
    "id, task_no, export_type, task_name, format, status, parameters_json, tenant_id, "
    "app_code, requested_by, dispatch_version, attempt_count, max_attempts, next_retry_at, "
    "lease_owner, lease_until, last_heartbeat_at, execution_deadline_at, processed_rows, "
    "total_rows, file_name, object_key, content_type, size_bytes, failure_message, "
    "requested_at, started_at, completed_at, expires_at, updated_at, trace_id, warnings_json, "
    "handback_count, failure_code, requester_name"
)

OUTBOX_COLUMNS = (
    "id, event_id, task_id, dispatch_version, topic, tag, message_key, payload_json, status, "
    "attempt_count, next_retry_at, lease_owner, lease_until, sent_at, last_error, created_at, "
    "updated_at, due_at, seen_at, resent_at"
)

OF_SCOPE = "tenant_id = :tenant_id AND app_code = :app_code"
NEWEST_FIRST = " ORDER BY requested_at DESC, id DESC"
#: One requester's rows, and every row of a tenant and app (filters of the task lists).
OF_REQUESTER = "tenant_id = :tenant_id AND app_code = :app_code AND requested_by = :requested_by"
#: The FROM of a list statement that names its index ({index:...}, db/dialect.py).
TASKS_BY_INDEX = "file_export_task {index:%s} WHERE "
SELECT_TASKS = f"SELECT {TASK_COLUMNS} FROM file_export_task WHERE "
