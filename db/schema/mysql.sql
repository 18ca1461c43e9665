-- Export Center schema, MySQL 8 / MariaDB 10.11 dialect: the seed's DDL (§7.2, §7.3, §8.3.1).
-- The whole schema of a fresh database at the latest schema version: `export-center migrate`
-- installs it into an empty database. An existing database is brought here by the ordered
-- upgrade steps of db/migrations.py instead (which also creates file_export_schema_version);
-- a change here needs its step there. All times are UTC DATETIME(3); the session time zone
-- is pinned to +00:00 by the store. Secondary indexes are separate statements at the end:
-- each runs only when the index is missing (MySQL 8 has no IF NOT EXISTS for them), so an
-- interrupted install can simply be run again.

CREATE TABLE IF NOT EXISTS file_export_task (
  id BIGINT UNSIGNED NOT NULL COMMENT 'task id (snowflake)',
  task_no VARCHAR(64) NOT NULL COMMENT 'human-facing task number',
  export_type VARCHAR(64) NOT NULL,
  task_name VARCHAR(128) NOT NULL,
  format VARCHAR(16) NOT NULL DEFAULT 'XLSX',
  status VARCHAR(24) NOT NULL DEFAULT 'PENDING' COMMENT 'PENDING/RUNNING/SUCCEEDED/FAILED/EXPIRED/CANCELLED',
  parameters_json TEXT NOT NULL COMMENT 'normalised parameter JSON',
  parameters_hash CHAR(64) NOT NULL COMMENT 'sha256 of parameters_json, for the 60 s duplicate check',
  tenant_id BIGINT NOT NULL,
  app_code VARCHAR(32) NOT NULL,
  processed_rows BIGINT NOT NULL DEFAULT 0,
  total_rows BIGINT NULL,
  file_name VARCHAR(255) NULL,
  object_key VARCHAR(255) NULL,
  content_type VARCHAR(128) NULL,
  size_bytes BIGINT NULL,
  failure_message VARCHAR(1000) NULL,
  dispatch_version INT NOT NULL DEFAULT 1 COMMENT 'bumped only for a new execution attempt (§3 principle 5)',
  attempt_count INT NOT NULL DEFAULT 0 COMMENT 'execution attempts',
  max_attempts INT NOT NULL DEFAULT 3 COMMENT 'snapshotted from the registry at create',
  next_retry_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) COMMENT 'earliest execution time; all backoff',
  lease_owner VARCHAR(128) NULL,
  lease_until DATETIME(3) NULL,
  last_heartbeat_at DATETIME(3) NULL,
  execution_deadline_at DATETIME(3) NULL COMMENT 'this run must finish before it (§8.3.1)',
  requested_by BIGINT NOT NULL,
  requested_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  started_at DATETIME(3) NULL,
  completed_at DATETIME(3) NULL,
  expires_at DATETIME(3) NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  trace_id VARCHAR(32) NULL COMMENT 'W3C trace id (32 lowercase hex), created at the API',
  warnings_json TEXT NULL COMMENT 'JSON list of the data warnings of the last successful run',
  handback_count INT NOT NULL DEFAULT 0 COMMENT 'hand-backs in a row since an attempt last ended otherwise (actors/core/handback.py)',
  failure_code VARCHAR(32) NULL COMMENT 'stable code of failure_message (actors/core/messages.py)',
  requester_name VARCHAR(64) NULL COMMENT 'what people call the requester: the token name claim at create',
  PRIMARY KEY (id),
  UNIQUE KEY uk_file_export_task_no (task_no)
) ENGINE=InnoDB COMMENT='export tasks: source of truth for scheduling and the download center';

CREATE TABLE IF NOT EXISTS file_export_outbox (
  id BIGINT UNSIGNED NOT NULL COMMENT 'outbox id (snowflake)',
  event_id VARCHAR(64) NOT NULL COMMENT 'delivery intent id (UUID)',
  task_id BIGINT UNSIGNED NOT NULL,
  dispatch_version INT NOT NULL,
  topic VARCHAR(128) NOT NULL,
  tag VARCHAR(64) NOT NULL,
  message_key VARCHAR(64) NOT NULL,
  payload_json JSON NOT NULL,
  status VARCHAR(24) NOT NULL DEFAULT 'PENDING' COMMENT 'PENDING/CLAIMED/SENT/QUARANTINED',
  attempt_count INT NOT NULL DEFAULT 0 COMMENT 'send attempts of this row',
  next_retry_at DATETIME(3) NOT NULL,
  lease_owner VARCHAR(128) NULL,
  lease_until DATETIME(3) NULL,
  sent_at DATETIME(3) NULL,
  last_error VARCHAR(1000) NULL,
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  due_at DATETIME(3) NULL COMMENT 'first due since written or re-queued; send back-off never moves it (NULL: written by a release before it)',
  seen_at DATETIME(3) NULL COMMENT 'first ack of a delivery without a claim: the command is not lost, its task waits for a slot; never re-sent (actors/core/dispatch.py)',
  resent_at DATETIME(3) NULL COMMENT 'when the reconciler sent it again, unseen (case B): a command is sent again once (actors/core/dispatch.py)',
  PRIMARY KEY (id),
  UNIQUE KEY uk_file_export_outbox_event (event_id),
  UNIQUE KEY uk_file_export_outbox_task_version (task_id, dispatch_version)
) ENGINE=InnoDB COMMENT='transactional outbox of export commands (§7.2)';

CREATE TABLE IF NOT EXISTS file_export_task_event (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT COMMENT 'commit order within a task',
  task_id BIGINT UNSIGNED NOT NULL,
  kind VARCHAR(32) NOT NULL COMMENT 'actors/core/events.py TaskEventKind',
  detail_json TEXT NOT NULL COMMENT 'the fields of the kind',
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (id)
) ENGINE=InnoDB COMMENT='append-only history of each task, written with its transitions';

CREATE TABLE IF NOT EXISTS file_export_task_guard (
  guard_key VARCHAR(32) NOT NULL,
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (guard_key)
) ENGINE=InnoDB COMMENT='single-row lock serialising task creation (§7.2)';

INSERT INTO file_export_task_guard (guard_key)
SELECT 'GLOBAL_CREATE' FROM DUAL
 WHERE NOT EXISTS (SELECT 1 FROM file_export_task_guard WHERE guard_key = 'GLOBAL_CREATE');

-- Secondary indexes. Every statement of db/transitions.py reads through one whose leading
-- columns match its filter and whose next ones match its order, so no query grows with the
-- finished history (tests/db/test_query_plans.py checks each plan). Kept in step with
-- db/schema/sqlite.sql. InnoDB builds an added index online (reads and writes go on).

-- Due PENDING tasks by next_retry_at: claims, fair share, reconciler, queue gauge.
CREATE INDEX idx_file_export_dispatch ON file_export_task (status, next_retry_at, id);
-- RUNNING tasks by lease_until: lease recovery, fair share's per-owner counts.
CREATE INDEX idx_file_export_lease ON file_export_task (status, lease_until);
-- SUCCEEDED tasks by expires_at: file retention.
CREATE INDEX idx_file_export_expiry ON file_export_task (status, expires_at, id);
-- Active tasks of one export type: admission.
CREATE INDEX idx_file_export_type_status ON file_export_task (export_type, status);
-- List pages, newest first by (requested_at, id), with their requested-at range: one
-- requester; one requester in one status (also admission and the duplicate check); the
-- whole tenant and app; the tenant and app in one status.
CREATE INDEX idx_file_export_requester_time
  ON file_export_task (tenant_id, app_code, requested_by, requested_at, id);
CREATE INDEX idx_file_export_requester_status_time
  ON file_export_task (tenant_id, app_code, requested_by, status, requested_at, id);
CREATE INDEX idx_file_export_scope_time ON file_export_task (tenant_id, app_code, requested_at, id);
CREATE INDEX idx_file_export_scope_status_time
  ON file_export_task (tenant_id, app_code, status, requested_at, id);
-- What changed since a time: the progress feed's one read per interval.
CREATE INDEX idx_file_export_updated ON file_export_task (updated_at, id);

-- Due PENDING rows by next_retry_at (publisher), CLAIMED rows (release), unsent gauge.
CREATE INDEX idx_file_export_outbox_publish ON file_export_outbox (status, next_retry_at, id);
-- The row of a task's version, with the columns redispatch checks.
CREATE INDEX idx_file_export_outbox_task
  ON file_export_outbox (task_id, dispatch_version, status, sent_at);
-- SENT rows by sent_at: pruning, oldest first.
CREATE INDEX idx_file_export_outbox_sent ON file_export_outbox (status, sent_at, id);

-- A task's history: one index range per task, in commit order.
CREATE INDEX idx_file_export_task_event_task ON file_export_task_event (task_id, id);
-- Events by age: retention pruning, oldest first.
CREATE INDEX idx_file_export_task_event_age ON file_export_task_event (created_at, id);
