"""The ordered schema steps: each brings a database from ``version - 1`` to ``version``.

Adding a step: append a ``Step`` with the next version to ``STEPS`` and make the same
change in both schema files (``db/schema``); ``tests/db/test_schema_migration.py`` checks
that a fresh install and the road of steps end at the same columns and indexes.
"""

from __future__ import annotations

from db.migration_ops import AddColumn, Backfill, CreateIndex, CreateTable, DropIndex, Step

#: The schema of before the download-center tables, as deployed without a version table.
BASELINE_VERSION = 1

STEPS: tuple[Step, ...] = (
    Step(
        2,
        "download-center tables: file_export_task_event and its indexes, the list and"
        " retention indexes",
        (
            CreateTable(
                "file_export_task_event",
                sqlite="""CREATE TABLE IF NOT EXISTS file_export_task_event (
  id INTEGER NOT NULL PRIMARY KEY,
  task_id INTEGER NOT NULL,
  kind TEXT NOT NULL,
  detail_json TEXT NOT NULL,
  created_at INTEGER NOT NULL
)""",
                mysql="""CREATE TABLE IF NOT EXISTS file_export_task_event (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT COMMENT 'commit order within a task',
  task_id BIGINT UNSIGNED NOT NULL,
  kind VARCHAR(32) NOT NULL COMMENT 'actors/core/events.py TaskEventKind',
  detail_json TEXT NOT NULL COMMENT 'the fields of the kind',
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (id)
) ENGINE=InnoDB COMMENT='append-only history of each task, written with its transitions'""",
            ),
            CreateIndex(
                "file_export_task_event", "idx_file_export_task_event_task", "(task_id, id)"
            ),
            CreateIndex(
                "file_export_task_event", "idx_file_export_task_event_age", "(created_at, id)"
            ),
            CreateIndex("file_export_task", "idx_file_export_expiry", "(status, expires_at, id)"),
            CreateIndex(
                "file_export_task",
                "idx_file_export_requester_status",
                "(tenant_id, app_code, requested_by, status, id)",
            ),
            CreateIndex("file_export_task", "idx_file_export_scope", "(tenant_id, app_code, id)"),
            CreateIndex(
                "file_export_task",
                "idx_file_export_scope_status",
                "(tenant_id, app_code, status, id)",
            ),
            CreateIndex(
                "file_export_outbox", "idx_file_export_outbox_sent", "(status, sent_at, id)"
            ),
            # replaced by idx_file_export_requester_status
            DropIndex("file_export_task", "idx_file_export_requester_active"),
        ),
    ),
    Step(
        3,
        "file_export_task.trace_id and warnings_json columns",
        (
            AddColumn(
                "file_export_task",
                "trace_id",
                sqlite="TEXT NULL",
                mysql="VARCHAR(32) NULL"
                " COMMENT 'W3C trace id (32 lowercase hex), created at the API'",
            ),
            AddColumn(
                "file_export_task",
                "warnings_json",
                sqlite="TEXT NULL",
                mysql="TEXT NULL"
                " COMMENT 'JSON list of the data warnings of the last successful run'",
            ),
        ),
    ),
    Step(
        4,
        "list indexes ordered by requested_at: the list's requested-at range and order",
        (
            CreateIndex(
                "file_export_task",
                "idx_file_export_requester_time",
                "(tenant_id, app_code, requested_by, requested_at, id)",
            ),
            CreateIndex(
                "file_export_task",
                "idx_file_export_requester_status_time",
                "(tenant_id, app_code, requested_by, status, requested_at, id)",
            ),
            CreateIndex(
                "file_export_task",
                "idx_file_export_scope_time",
                "(tenant_id, app_code, requested_at, id)",
            ),
            CreateIndex(
                "file_export_task",
                "idx_file_export_scope_status_time",
                "(tenant_id, app_code, status, requested_at, id)",
            ),
            # replaced by the four above (the list orders by requested_at, then id)
            DropIndex("file_export_task", "idx_file_export_requester"),
            DropIndex("file_export_task", "idx_file_export_requester_status"),
            DropIndex("file_export_task", "idx_file_export_scope"),
            DropIndex("file_export_task", "idx_file_export_scope_status"),
        ),
    ),
    Step(
        5,
        "file_export_task.handback_count and file_export_outbox.due_at columns",
        (
            AddColumn(
                "file_export_task",
                "handback_count",
                sqlite="INTEGER NOT NULL DEFAULT 0",
                mysql="INT NOT NULL DEFAULT 0 COMMENT 'hand-backs in a row since an attempt"
                " last ended otherwise (actors/core/handback.py)'",
            ),
            AddColumn(
                "file_export_outbox",
                "due_at",
                sqlite="INTEGER NULL",
                mysql="DATETIME(3) NULL COMMENT 'first due since written or re-queued; send"
                " back-off never moves it (NULL: written by a release before it)'",
            ),
            # The unsent rows only (status-led index; SENT rows are history and are never
            # counted). A row never tried is due from next_retry_at; a row tried at least
            # once was due at its first claim, which its back-off has overwritten: the
            # earlier of its last attempt (updated_at) and next_retry_at is the best
            # bound left. It is never earlier than the truth: the age it gives may read
            # short, never long (no false alarm after a migrate).
            Backfill(
                "file_export_outbox",
                """UPDATE file_export_outbox
   SET due_at = CASE WHEN attempt_count = 0 OR next_retry_at <= updated_at
                     THEN next_retry_at ELSE updated_at END,
       updated_at = updated_at
 WHERE status IN ('PENDING', 'CLAIMED') AND due_at IS NULL""",
            ),
        ),
    ),
    Step(
        6,
        "file_export_task change-time index, for the progress feed",
        (
            # The progress feed (web/progress_feed.py) reads what changed since its last
            # read: one range of this index per interval, whatever the number of streams.
            CreateIndex("file_export_task", "idx_file_export_updated", "(updated_at, id)"),
        ),
    ),
    Step(
        7,
        "file_export_task.failure_code and requester_name columns",
        (
            # Tasks that failed before it keep NULL: what people read of them falls back
            # to the generic "the export failed" with the message (actors/core/messages.py).
            AddColumn(
                "file_export_task",
                "failure_code",
                sqlite="TEXT NULL",
                mysql="VARCHAR(32) NULL COMMENT 'stable code of failure_message"
                " (actors/core/messages.py)'",
            ),
            AddColumn(
                "file_export_task",
                "requester_name",
                sqlite="TEXT NULL",
                mysql="VARCHAR(64) NULL COMMENT 'what people call the requester: the"
                " token name claim at create'",
            ),
        ),
    ),
    Step(
        8,
        "file_export_outbox.seen_at and resent_at columns: only a lost command is re-sent",
        (
            # Rows written before it keep NULL in both: unseen and never re-sent, so the
            # reconciler sends each of them again once at most, if no slot sees it first.
            AddColumn(
                "file_export_outbox",
                "seen_at",
                sqlite="INTEGER NULL",
                mysql="DATETIME(3) NULL COMMENT 'first ack of a delivery without a claim: the"
                " command is not lost, its task waits for a slot; never re-sent"
                " (actors/core/dispatch.py)'",
            ),
            AddColumn(
                "file_export_outbox",
                "resent_at",
                sqlite="INTEGER NULL",
                mysql="DATETIME(3) NULL COMMENT 'when the reconciler sent it again, unseen"
                " (case B): a command is sent again once (actors/core/dispatch.py)'",
            ),
        ),
    ),
)

#: The version this code reads and writes.
LATEST_VERSION = STEPS[-1].version
