# ruff: noqa: E501  (frozen DDL, kept exactly as it was deployed)
"""The schema of before the download-center tables (schema version 1), as deployed by the
releases that had no schema version table: the DDL of db/schema/*.sql at the time, frozen
here so that tests can build such a database and migrate it (tests/db/test_schema_migration.py).
"""

SQLITE_V1 = """
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
  updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS uk_file_export_task_no ON file_export_task (task_no);
CREATE INDEX IF NOT EXISTS idx_file_export_dispatch ON file_export_task (status, next_retry_at, id);
CREATE INDEX IF NOT EXISTS idx_file_export_lease ON file_export_task (status, lease_until);
CREATE INDEX IF NOT EXISTS idx_file_export_requester
  ON file_export_task (tenant_id, app_code, requested_by, id);
CREATE INDEX IF NOT EXISTS idx_file_export_type_status ON file_export_task (export_type, status);
CREATE INDEX IF NOT EXISTS idx_file_export_requester_active
  ON file_export_task (tenant_id, app_code, requested_by, status, export_type);

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
  updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS uk_file_export_outbox_event ON file_export_outbox (event_id);
CREATE UNIQUE INDEX IF NOT EXISTS uk_file_export_outbox_task_version
  ON file_export_outbox (task_id, dispatch_version);
CREATE INDEX IF NOT EXISTS idx_file_export_outbox_publish
  ON file_export_outbox (status, next_retry_at, id);
CREATE INDEX IF NOT EXISTS idx_file_export_outbox_task
  ON file_export_outbox (task_id, dispatch_version, status, sent_at);

CREATE TABLE IF NOT EXISTS file_export_task_guard (
  guard_key TEXT NOT NULL PRIMARY KEY,
  updated_at INTEGER NOT NULL
);
INSERT OR IGNORE INTO file_export_task_guard (guard_key, updated_at) VALUES ('GLOBAL_CREATE', 0);
"""

MYSQL_V1 = """
CREATE TABLE IF NOT EXISTS file_export_task (
  id BIGINT UNSIGNED NOT NULL COMMENT 'task id (snowflake)',
  task_no VARCHAR(64) NOT NULL COMMENT 'human-facing task number',
  export_type VARCHAR(64) NOT NULL,
  task_name VARCHAR(128) NOT NULL,
  format VARCHAR(16) NOT NULL DEFAULT 'XLSX',
  status VARCHAR(24) NOT NULL DEFAULT 'PENDING' COMMENT 'PENDING/RUNNING/SUCCEEDED/FAILED/EXPIRED',
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
  PRIMARY KEY (id),
  UNIQUE KEY uk_file_export_task_no (task_no),
  KEY idx_file_export_dispatch (status, next_retry_at, id),
  KEY idx_file_export_lease (status, lease_until),
  KEY idx_file_export_requester (tenant_id, app_code, requested_by, id),
  KEY idx_file_export_type_status (export_type, status),
  KEY idx_file_export_requester_active (tenant_id, app_code, requested_by, status, export_type)
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
  PRIMARY KEY (id),
  UNIQUE KEY uk_file_export_outbox_event (event_id),
  UNIQUE KEY uk_file_export_outbox_task_version (task_id, dispatch_version),
  KEY idx_file_export_outbox_publish (status, next_retry_at, id),
  KEY idx_file_export_outbox_task (task_id, dispatch_version, status, sent_at)
) ENGINE=InnoDB COMMENT='transactional outbox of export commands (§7.2)';

CREATE TABLE IF NOT EXISTS file_export_task_guard (
  guard_key VARCHAR(32) NOT NULL,
  updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (guard_key)
) ENGINE=InnoDB COMMENT='single-row lock serialising task creation (§7.2)';

INSERT INTO file_export_task_guard (guard_key)
SELECT 'GLOBAL_CREATE' FROM DUAL
 WHERE NOT EXISTS (SELECT 1 FROM file_export_task_guard WHERE guard_key = 'GLOBAL_CREATE');
"""
