"""The task history (actors/core/events.py) and the task lists it backs."""

from __future__ import annotations

from dataclasses import dataclass

from db.transitions.columns import (
    NEWEST_FIRST,
    OF_REQUESTER,
    OF_SCOPE,
    SELECT_TASKS,
    TASK_COLUMNS,
    TASKS_BY_INDEX,
)

# The progress stream (web/progress.py), one poll: the caller's live tasks and its newest
# ones. The live ones are one equality range of idx_file_export_requester_status_time (or
# _scope_status_time for DOWNLOAD_ALL) per live status, unsorted (the stream orders them):
# with "status IN (...)" MariaDB preferred the requester's whole history filtered by status.
# The newest walk idx_file_export_requester_time (or _scope_time) from its end, in the list's
# order, and stop at the LIMIT (the index is named, as for the list: db/dialect.py).
_NEWEST = NEWEST_FIRST + " LIMIT :limit"


def _live(of: str) -> str:
    return (
        f"{SELECT_TASKS}{of} AND status = 'PENDING'"
        f" UNION ALL {SELECT_TASKS}{of} AND status = 'RUNNING'"
        " LIMIT :limit"
    )


@dataclass(frozen=True)
class HistoryStatements:
    """The task history (actors/core/events.py) and the task lists it backs."""

    # Appended in the transaction of the transition it records.
    INSERT_TASK_EVENT: str = """
INSERT INTO file_export_task_event (task_id, kind, detail_json, created_at)
VALUES (:task_id, :kind, :detail_json, {now})
"""

    # idx_file_export_task_event_task: one task's events are one index range, in id order.
    # The newest events (a long history keeps its latest entries; the caller reverses them).
    LIST_TASK_EVENTS: str = """
SELECT id, task_id, kind, detail_json, created_at FROM file_export_task_event
 WHERE task_id = :task_id ORDER BY id DESC LIMIT :limit
"""

    LIVE_TASKS_OF_REQUESTER: str = _live(OF_REQUESTER)

    LIVE_TASKS_OF_SCOPE: str = _live(OF_SCOPE)

    NEWEST_TASKS_OF_REQUESTER: str = (
        f"SELECT {TASK_COLUMNS} FROM {TASKS_BY_INDEX % 'idx_file_export_requester_time'}"
        f"{OF_REQUESTER}{_NEWEST}"
    )

    NEWEST_TASKS_OF_SCOPE: str = (
        f"SELECT {TASK_COLUMNS} FROM {TASKS_BY_INDEX % 'idx_file_export_scope_time'}"
        f"{OF_SCOPE}{_NEWEST}"
    )

    # The progress feed (web/progress_feed.py), one read per interval for every stream of
    # the instance: the tasks changed at or after a time, in (updated_at, id) order from
    # a key after the last row read, one range of idx_file_export_updated. The time is
    # the database's ({now} on every write), so instances' clocks do not matter.
    TASKS_CHANGED_SINCE: str = (
        f"SELECT {TASK_COLUMNS} FROM {TASKS_BY_INDEX % 'idx_file_export_updated'}"
        "(updated_at > :since OR (updated_at = :since AND id > :after_id))"
        " ORDER BY updated_at, id LIMIT :limit"
    )

    # idx_file_export_task_event_age: the range of events older than the retention.
    # Chunked like the SENT outbox pruning: the chunk-th candidate in (created_at, id) order
    # bounds the delete, so one pass never deletes months of history in one statement.
    SELECT_EVENT_PRUNE_BOUND: str = """
SELECT created_at, id FROM file_export_task_event
 WHERE created_at <= {now-:retention_seconds}
 ORDER BY created_at, id LIMIT 1 OFFSET :offset
"""

    PRUNE_TASK_EVENTS: str = """
DELETE FROM file_export_task_event
 WHERE created_at <= {now-:retention_seconds}
   AND created_at <= :max_created_at AND (created_at < :max_created_at OR id <= :max_id)
"""

    PRUNE_ALL_TASK_EVENTS: str = """
DELETE FROM file_export_task_event WHERE created_at <= {now-:retention_seconds}
"""
