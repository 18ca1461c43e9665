"""What the operator's commands print with ``--json`` (``actors/core/ops/operator_json.py``),
by table: every store outcome named, what ``inspect`` adds to the task by DB time, and
when each part is ``null``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from actors.core.errors import Refusal
from actors.core.events import TaskEvent, TaskEventKind, TaskInspection
from actors.core.models import OutboxStatus, TaskStatus
from actors.core.ops.operator_json import (
    OperatorOutcome,
    cancel_outcome,
    inspection_json,
    outcome_json,
    retry_outcome,
    seconds_from,
)
from actors.core.ops.troubleshooting import Finding, Symptom
from actors.core.outcomes import CancelOutcome
from actors.core.task_json import task_json
from tests.helpers import DB_EPOCH_MS, outbox_row_value, task_value

NOW = datetime.fromtimestamp(DB_EPOCH_MS / 1000, tz=UTC)
NOW_ISO = NOW.isoformat(timespec="milliseconds")


def at(seconds: float) -> datetime:
    """``seconds`` from DB now (negative: before)."""
    return NOW + timedelta(seconds=seconds)


def test_every_cancel_and_retry_outcome_has_a_name_and_an_exit() -> None:
    assert [cancel_outcome(o).value for o in CancelOutcome] == [
        "cancelled",
        "already-cancelled",
        "not-cancellable",
    ]
    retry_refusals = [
        Refusal.NOT_RETRYABLE,
        Refusal.CHANGED,
        Refusal.USER_LIMIT,
        Refusal.TYPE_LIMIT,
        Refusal.TYPE_RESERVED,
    ]
    assert {r: retry_outcome(r).value for r in retry_refusals} == {
        Refusal.NOT_RETRYABLE: "not-retryable",
        Refusal.CHANGED: "changed-meanwhile",
        Refusal.USER_LIMIT: "user-limit",
        Refusal.TYPE_LIMIT: "type-limit",
        Refusal.TYPE_RESERVED: "type-reserved",
    }
    exits_0 = {o.value for o in OperatorOutcome if o.succeeded}
    assert exits_0 == {"cancelled", "already-cancelled", "retried"}


def test_outcome_json_carries_the_task_and_the_error_only_when_given() -> None:
    task = task_value(id=42, status=TaskStatus.CANCELLED)
    assert outcome_json(42, OperatorOutcome.CANCELLED, task) == {
        "id": "42",
        "outcome": "cancelled",
        "task": task_json(task),
    }
    assert outcome_json("99999999999999999999", OperatorOutcome.NOT_FOUND, None, "no") == {
        "id": "99999999999999999999",
        "outcome": "not-found",
        "task": None,
        "error": "no",
    }


@pytest.mark.parametrize(
    ("moment", "printed"),
    [
        (None, "None"),
        (at(12.3456), "12.346"),
        (at(-40), "-40.0"),
        (NOW, "0.0"),
        (at(-0.0004), "0.0"),  # rounded to nothing: no "-0.0"
    ],
)
def test_seconds_from_db_now_to_the_millisecond(moment: datetime | None, printed: str) -> None:
    assert str(seconds_from(moment, NOW)) == printed


PENDING: dict[str, Any] = dict(status=TaskStatus.PENDING, next_retry_at=at(30))
RUNNING: dict[str, Any] = dict(
    status=TaskStatus.RUNNING,
    attempt_count=1,
    started_at=at(-100),
    lease_owner="host-a:1",
    lease_until=at(-40),
    last_heartbeat_at=at(-70),
    execution_deadline_at=at(-4),
)
LEASE = {
    "owner": "host-a:1",
    "until": at(-40).isoformat(timespec="milliseconds"),
    "endsInSeconds": -40.0,
    "lastHeartbeatAt": at(-70).isoformat(timespec="milliseconds"),
    "lastHeartbeatInSeconds": -70.0,
}


@pytest.mark.parametrize(
    ("case", "task", "next_retry", "lease", "deadline"),
    [
        ("waiting: its next try, no lease", PENDING, 30.0, None, None),
        (
            "running past its lease and deadline",
            RUNNING,
            None,
            LEASE,
            {"at": at(-4).isoformat(timespec="milliseconds"), "inSeconds": -4.0},
        ),
        (
            "a lease owner without an end (as the text mode shows it)",
            dict(status=TaskStatus.RUNNING, lease_owner="host-b:2"),
            None,
            {
                "owner": "host-b:2",
                "until": None,
                "endsInSeconds": None,
                "lastHeartbeatAt": None,
                "lastHeartbeatInSeconds": None,
            },
            None,
        ),
        (
            "ended: a deadline left on the row is not shown",
            {**RUNNING, "status": TaskStatus.FAILED},
            None,
            LEASE,
            None,
        ),
    ],
)
def test_inspection_json_by_db_time(
    case: str,
    task: dict[str, Any],
    next_retry: float | None,
    lease: dict[str, Any] | None,
    deadline: dict[str, Any] | None,
) -> None:
    seen = TaskInspection(task_value(**task), (), (), NOW)
    doc = inspection_json(seen, ())
    assert doc["task"] == task_json(seen.task), case
    assert doc["dbTime"] == NOW_ISO
    assert doc["nextRetryInSeconds"] == next_retry, case
    assert doc["lease"] == lease, case
    assert doc["deadline"] == deadline, case
    assert (doc["outbox"], doc["events"], doc["troubleshooting"]) == ([], [], [])


def test_inspection_json_lists_outbox_events_and_rows() -> None:
    seen = TaskInspection(
        task_value(object_key="exports/1/f.xlsx"),
        (
            outbox_row_value(
                payload_json='{"traceId": "4bf92f3577b34da6a3ce929d0e0e4736"}', sent_at=at(-4.5)
            ),
            outbox_row_value(
                2,
                status=OutboxStatus.PENDING,
                attempt_count=3,
                next_retry_at=at(15),
                sent_at=None,
                last_error="no route to broker",
            ),
        ),
        (TaskEvent(5, 1, TaskEventKind.CREATED, at(-60), {"by": 7}),),
        NOW,
    )
    findings = (Finding(Symptom.OUTBOX_BACKLOG, "its command failed to send 3 times"),)
    doc = inspection_json(seen, findings)
    assert doc["objectKey"] == "exports/1/f.xlsx"
    assert doc["outbox"] == [
        {
            "dispatchVersion": 1,
            "status": "SENT",
            "attemptCount": 1,
            "eventId": "e1",
            "traceId": "4bf92f3577b34da6a3ce929d0e0e4736",
            "nextRetryAt": at(-5).isoformat(timespec="milliseconds"),
            "nextRetryInSeconds": -5.0,
            "sentAt": at(-4.5).isoformat(timespec="milliseconds"),
            "sentInSeconds": -4.5,
            "lastError": None,
        },
        {
            "dispatchVersion": 2,
            "status": "PENDING",
            "attemptCount": 3,
            "eventId": "e2",
            "traceId": None,
            "nextRetryAt": at(15).isoformat(timespec="milliseconds"),
            "nextRetryInSeconds": 15.0,
            "sentAt": None,
            "sentInSeconds": None,
            "lastError": "no route to broker",
        },
    ]
    # As GET .../events shows them: string ids, the user id in ``by`` too.
    assert doc["events"] == [
        {
            "id": "5",
            "taskId": "1",
            "kind": "created",
            "at": at(-60).isoformat(timespec="milliseconds"),
            "detail": {"by": "7"},
        }
    ]
    assert doc["troubleshooting"] == [
        {
            "id": "outbox-backlog",
            "text": "its command failed to send 3 times",
            "doc": "docs/operations.md#outbox-backlog",
        }
    ]
