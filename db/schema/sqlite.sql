-- Export Center schema, SQLite dialect (embedded mode).
-- Mirrors db/schema/mysql.sql (the seed's DDL, §7.2, §7.3, §8.3.1) column for column.
-- Timestamps are INTEGER epoch milliseconds (UTC): SQLite has no DATETIME(3), and integer
-- arithmetic keeps every lease/backoff comparison exact to the millisecond.
-- The whole schema of a fresh database at the latest schema version, installed into an
-- empty database at start; an existing one is brought here by the ordered upgrade steps of
-- db/migrations.py instead (which also creates file_export_schema_version). A change here
-- needs its step there.

CREATE TABLE IF NOT EXISTS file_export_task (
  id INTEGER NOT NULL PRIMARY KEY,
  task_no TEXT NOT NULL,
  export_type TEXT NOT NULL,
  task_name TEXT NOT NULL,
  format TEXT NOT NULL DEFAULT 'XLSX',
  status TEXT NOT NULL DEFAULT 'PENDING',
  parameters_json TEXT NOT NULL,
  parameters_hash TEXT NOT NULL,
  tenant_id INTEGER NOT NULL,
  app_code TEXT NOT NULL,
  processed_rows INTEGER NOT NULL DEFAULT 0,
  total_rows INTEGER NULL,
  file_name TEXT NULL,
  object_key TEXT NULL,
  content_type TEXT NULL,
  size_bytes INTEGER NULL,
  failure_message TEXT NULL,
  dispatch_version INTEGER NOT NULL DEFAULT 1,
  attempt_count INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL DEFAULT 3,
  next_retry_at INTEGER NOT NULL,
  lease_owner TEXT NULL,
  lease_until INTEGER NULL,
  last_heartbeat_at INTEGER NULL,
  execution_deadline_at INTEGER NULL,
  requested_by INTEGER NOT NULL,
  requested_at INTEGER NOT NULL,
  started_at INTEGER NULL,
  completed_at INTEGER NULL,
  expires_at INTEGER NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  trace_id TEXT NULL,
  warnings_json TEXT NULL,
  handback_count INTEGER NOT NULL DEFAULT 0,
  failure_code TEXT NULL,
  requester_name TEXT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS uk_file_export_task_no ON file_export_task (task_no);
CREATE TABLE IF NOT EXISTS file_export_outbox (
  id INTEGER NOT NULL PRIMARY KEY,
  event_id TEXT NOT NULL,
  task_id INTEGER NOT NULL,
  dispatch_version INTEGER NOT NULL,
  topic TEXT NOT NULL,
  tag TEXT NOT NULL,
  message_key TEXT NOT NULL,
  payload_json TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'PENDING',
  attempt_count INTEGER NOT NULL DEFAULT 0,
  next_retry_at INTEGER NOT NULL,
  lease_owner TEXT NULL,
  lease_until INTEGER NULL,
  sent_at INTEGER NULL,
  last_error TEXT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  due_at INTEGER NULL,
  seen_at INTEGER NULL,
  resent_at INTEGER NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS uk_file_export_outbox_event ON file_export_outbox (event_id);
CREATE UNIQUE INDEX IF NOT EXISTS uk_file_export_outbox_task_version
  ON file_export_outbox (task_id, dispatch_version);

CREATE TABLE IF NOT EXISTS file_export_task_event (
  id INTEGER NOT NULL PRIMARY KEY,
  task_id INTEGER NOT NULL,
  kind TEXT NOT NULL,
  detail_json TEXT NOT NULL,
  created_at INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS file_export_task_guard (
  guard_key TEXT NOT NULL PRIMARY KEY,
  updated_at INTEGER NOT NULL
);
-- The single guard row the create transaction locks (§7.2). Start-up fails without it.
INSERT OR IGNORE INTO file_export_task_guard (guard_key, updated_at) VALUES ('GLOBAL_CREATE', 0);

-- Secondary indexes. Every statement of db/transitions.py reads through one whose leading
-- columns match its filter and whose next ones match its order, so no query grows with the
-- finished history (tests/db/test_query_plans.py checks each plan). Kept in step with
-- db/schema/mysql.sql.

-- Due PENDING tasks by next_retry_at: claims, fair share, reconciler, queue gauge.
CREATE INDEX IF NOT EXISTS idx_file_export_dispatch ON file_export_task (status, next_retry_at, id);
-- RUNNING tasks by lease_until: lease recovery, fair share's per-owner counts.
CREATE INDEX IF NOT EXISTS idx_file_export_lease ON file_export_task (status, lease_until);
-- SUCCEEDED tasks by expires_at: file retention.
CREATE INDEX IF NOT EXISTS idx_file_export_expiry ON file_export_task (status, expires_at, id);
-- Active tasks of one export type: admission.
CREATE INDEX IF NOT EXISTS idx_file_export_type_status ON file_export_task (export_type, status);
-- List pages, newest first by (requested_at, id), with their requested-at range: one
-- requester; one requester in one status (also admission and the duplicate check); the
-- whole tenant and app; the tenant and app in one status.
CREATE INDEX IF NOT EXISTS idx_file_export_requester_time
  ON file_export_task (tenant_id, app_code, requested_by, requested_at, id);
CREATE INDEX IF NOT EXISTS idx_file_export_requester_status_time
  ON file_export_task (tenant_id, app_code, requested_by, status, requested_at, id);
CREATE INDEX IF NOT EXISTS idx_file_export_scope_time
  ON file_export_task (tenant_id, app_code, requested_at, id);
CREATE INDEX IF NOT EXISTS idx_file_export_scope_status_time
  ON file_export_task (tenant_id, app_code, status, requested_at, id);
-- What changed since a time: the progress feed's one read per interval.
CREATE INDEX IF NOT EXISTS idx_file_export_updated ON file_export_task (updated_at, id);

-- Due PENDING rows by next_retry_at (publisher), CLAIMED rows (release), unsent gauge.
CREATE INDEX IF NOT EXISTS idx_file_export_outbox_publish
  ON file_export_outbox (status, next_retry_at, id);
-- The row of a task's version, with the columns redispatch checks.
CREATE INDEX IF NOT EXISTS idx_file_export_outbox_task
  ON file_export_outbox (task_id, dispatch_version, status, sent_at);
-- SENT rows by sent_at: pruning, oldest first.
CREATE INDEX IF NOT EXISTS idx_file_export_outbox_sent ON file_export_outbox (status, sent_at, id);

-- A task's history: one index range per task, in commit order.
CREATE INDEX IF NOT EXISTS idx_file_export_task_event_task
  ON file_export_task_event (task_id, id);
-- Events by age: retention pruning, oldest first.
CREATE INDEX IF NOT EXISTS idx_file_export_task_event_age
  ON file_export_task_event (created_at, id);
