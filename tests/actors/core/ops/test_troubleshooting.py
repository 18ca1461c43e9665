"""Which troubleshooting row applies to a task (``actors/core/ops/troubleshooting.py``), by
table: one case per row of ``docs/operations.md``'s table, the cases next to each row
that must not match it, and the relative times ``inspect`` prints."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from actors.core.events import TaskEvent, TaskEventKind, TaskInspection
from actors.core.models import OutboxRow, OutboxStatus, TaskStatus
from actors.core.ops.troubleshooting import (
    Symptom,
    Thresholds,
    diagnose,
    relative_time,
)
from tests.helpers import DB_EPOCH_MS, outbox_row_value, task_value

NOW = datetime.fromtimestamp(DB_EPOCH_MS / 1000, tz=UTC)


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


#: The SENT command of task 1's version (the shared factory, by its short name here).
command = outbox_row_value


def facts(
    outbox: tuple[OutboxRow, ...] = (),
    events: tuple[TaskEventKind, ...] = (),
    **task: Any,
) -> TaskInspection:
    return TaskInspection(
        task=task_value(**task),
        outbox=outbox,
        events=tuple(
            TaskEvent(i, 1, kind, ago(100 - i), {}) for i, kind in enumerate(events, start=1)
        ),
        db_now=NOW,
    )


RUNNING = dict(
    status=TaskStatus.RUNNING,
    attempt_count=1,
    lease_owner="host-a:1",
    lease_until=NOW + timedelta(seconds=12.3),
    execution_deadline_at=NOW + timedelta(minutes=25),
)


@pytest.mark.parametrize(
    ("case", "inspection", "expected"),
    [
        # healthy or finished normally: no row
        ("new, just queued", facts((command(status=OutboxStatus.PENDING, sent_at=None),)), ()),
        ("queued 9 minutes", facts((command(sent_at=ago(540)),), next_retry_at=ago(540)), ()),
        ("running, lease fresh", facts((command(),), **RUNNING), ()),
        ("succeeded, file kept", facts(status=TaskStatus.SUCCEEDED, expires_at=NOW), ()),
        ("cancelled", facts(status=TaskStatus.CANCELLED), ()),
        ("running 60 s, no row yet", facts((command(),), **{**RUNNING, "started_at": ago(60)}), ()),
        (
            "running 10 min, rows written",
            facts(
                (command(),),
                **{
                    **RUNNING,
                    "started_at": ago(600),
                    "last_heartbeat_at": ago(5),
                    "processed_rows": 5000,
                },
            ),
            (),
        ),
        # a permanent failure: FAILED at the first attempt, not quarantined
        (
            "failed at once (permanent)",
            facts(status=TaskStatus.FAILED, attempt_count=1, failure_message="max-rows"),
            (Symptom.PERMANENT_FAILURE,),
        ),
        # waiting on the Provider: alive, no row written, past a minute
        (
            "running 61 s, no row yet",
            facts((command(),), **{**RUNNING, "started_at": ago(61), "last_heartbeat_at": ago(5)}),
            (Symptom.WAITING_ON_PROVIDER,),
        ),
        (
            "no row, heartbeat overdue: the lease row, not this one",
            facts(
                (command(),),
                **{**RUNNING, "started_at": ago(600), "last_heartbeat_at": ago(200)},
            ),
            (Symptom.LEASE_RECOVERY,),
        ),
        # stuck PENDING: due past the queue-age alert, command sent or missing
        (
            "stuck, command sent",
            facts((command(sent_at=ago(700)),), next_retry_at=ago(700)),
            (Symptom.STUCK_PENDING,),
        ),
        ("stuck, no command", facts(next_retry_at=ago(601)), (Symptom.STUCK_PENDING,)),
        # outbox backlog: the command due and unsent past 120 s, or failing to send
        (
            "command unsent 121 s",
            facts(
                (command(status=OutboxStatus.PENDING, sent_at=None, next_retry_at=ago(121)),),
                next_retry_at=ago(121),
            ),
            (Symptom.OUTBOX_BACKLOG,),
        ),
        (
            "command unsent 119 s",
            facts(
                (command(status=OutboxStatus.PENDING, sent_at=None, next_retry_at=ago(119)),),
                next_retry_at=ago(119),
            ),
            (),
        ),
        (
            "send failed 11 times, in back-off",
            facts(
                (
                    command(
                        status=OutboxStatus.PENDING,
                        sent_at=None,
                        attempt_count=11,
                        next_retry_at=NOW + timedelta(minutes=10),
                        last_error="no route to broker",
                    ),
                ),
                next_retry_at=ago(3000),
            ),
            (Symptom.OUTBOX_BACKLOG,),
        ),
        (
            # issue 22: sends fail and back off; first due 5 min ago, next try in 1 min
            "send failed 3 times, in back-off, first due 300 s ago",
            facts(
                (
                    command(
                        status=OutboxStatus.PENDING,
                        sent_at=None,
                        attempt_count=3,
                        next_retry_at=NOW + timedelta(minutes=1),
                        due_at=ago(300),
                    ),
                ),
                next_retry_at=ago(300),
            ),
            (Symptom.OUTBOX_BACKLOG,),
        ),
        (
            "backlog of a stuck task is the backlog only",
            facts(
                (command(status=OutboxStatus.CLAIMED, sent_at=None, next_retry_at=ago(900)),),
                next_retry_at=ago(900),
            ),
            (Symptom.OUTBOX_BACKLOG,),
        ),
        # lease recovery: RUNNING with its lease ended, or recovered before
        (
            "lease ended",
            facts((command(),), **{**RUNNING, "lease_until": ago(4)}),
            (Symptom.LEASE_RECOVERY,),
        ),
        # the instance stopped (kill -9): no heartbeat for longer than 2.5 periods, while
        # its lease still runs — the table's lease row, before the lease ends
        (
            "heartbeat 151 s ago, lease still on",
            facts((command(),), **{**RUNNING, "last_heartbeat_at": ago(151)}),
            (Symptom.LEASE_RECOVERY,),
        ),
        (
            "never beat, started 151 s ago",
            facts((command(),), **{**RUNNING, "started_at": ago(151)}),
            (Symptom.LEASE_RECOVERY,),
        ),
        (
            "heartbeat 149 s ago",
            facts(
                (command(),),
                **{
                    **RUNNING,
                    "last_heartbeat_at": ago(149),
                    "started_at": ago(900),
                    "processed_rows": 100,
                },
            ),
            (),
        ),
        (
            "recovered earlier, now queued",
            facts(
                (command(), command(2, status=OutboxStatus.PENDING, sent_at=None)),
                (TaskEventKind.CREATED, TaskEventKind.CLAIMED, TaskEventKind.LEASE_RECOVERED),
                dispatch_version=2,
                attempt_count=1,
            ),
            (Symptom.LEASE_RECOVERY,),
        ),
        # quarantined
        (
            "quarantined",
            facts(
                (command(status=OutboxStatus.QUARANTINED, last_error="undecodable body"),),
                (TaskEventKind.CREATED, TaskEventKind.QUARANTINED),
                status=TaskStatus.FAILED,
            ),
            (Symptom.QUARANTINED,),
        ),
        # retries: waiting for the next attempt, or spent
        (
            "waiting out a retry back-off",
            facts(
                (command(), command(2, status=OutboxStatus.PENDING, sent_at=None)),
                dispatch_version=2,
                attempt_count=1,
                failure_message="Provider unavailable",
                next_retry_at=NOW + timedelta(seconds=840),
            ),
            (Symptom.RETRIES,),
        ),
        (
            "attempts spent",
            facts(
                status=TaskStatus.FAILED,
                attempt_count=3,
                max_attempts=3,
                failure_message="Provider unavailable",
            ),
            (Symptom.RETRIES,),
        ),
        # expired file not cleaned
        (
            "expired 301 s ago",
            facts(status=TaskStatus.SUCCEEDED, expires_at=ago(301)),
            (Symptom.EXPIRED_NOT_CLEANED,),
        ),
        ("expired 299 s ago", facts(status=TaskStatus.SUCCEEDED, expires_at=ago(299)), ()),
        # RUNNING past its deadline: the lease still renewing
        (
            "past deadline, lease fresh",
            facts((command(),), **{**RUNNING, "execution_deadline_at": ago(4)}),
            (Symptom.PAST_DEADLINE,),
        ),
        (
            "past deadline, lease ended",
            facts(
                (command(),), **{**RUNNING, "execution_deadline_at": ago(40), "lease_until": ago(1)}
            ),
            (Symptom.LEASE_RECOVERY, Symptom.PAST_DEADLINE),
        ),
    ],
)
def test_diagnose_matches_the_troubleshooting_row(
    case: str, inspection: TaskInspection, expected: tuple[Symptom, ...]
) -> None:
    assert tuple(f.symptom for f in diagnose(inspection)) == expected, case


def test_the_new_rows_say_what_to_do() -> None:
    (permanent,) = diagnose(
        facts(status=TaskStatus.FAILED, attempt_count=1, failure_message="column 'x' undeclared")
    )
    assert permanent.reason.startswith("FAILED on attempt 1 of 3 without a retry")
    assert permanent.reason.endswith("until that changes: column 'x' undeclared")
    (waiting,) = diagnose(
        facts((command(),), **{**RUNNING, "started_at": ago(125), "last_heartbeat_at": ago(5)})
    )
    assert waiting.reason.startswith("RUNNING on host-a:1 since 2 min 5 s ago with no row")
    assert "FILE_EXPORT_PROVIDER_REQUEST_TIMEOUT_SECONDS" in waiting.reason
    assert waiting.reason.endswith("its deadline is in 25 min 0 s")


def test_thresholds_are_the_callers() -> None:
    """A shorter queue-age threshold makes a 9-minute wait a stuck task."""
    waiting = facts((command(sent_at=ago(540)),), next_retry_at=ago(540))
    assert diagnose(waiting, Thresholds(queue_age_seconds=300))[0].symptom == Symptom.STUCK_PENDING


def test_reasons_name_the_facts() -> None:
    """The reason line carries what the operator acts on: owner, times, last error."""
    (lease,) = diagnose(facts((command(),), **{**RUNNING, "lease_until": ago(4)}))
    assert (
        lease.reason
        == "RUNNING on host-a:1 whose lease ended 4.0 s ago: waiting for the reconciler"
    )
    (silent,) = diagnose(facts((command(),), **{**RUNNING, "last_heartbeat_at": ago(115 + 60)}))
    assert silent.reason == (
        "RUNNING on host-a:1 whose last heartbeat was 2 min 55 s ago: that instance has "
        "likely stopped; the reconciler recovers it when its lease ends in 12.3 s"
    )
    (backlog,) = diagnose(
        facts(
            (
                command(
                    status=OutboxStatus.PENDING,
                    sent_at=None,
                    next_retry_at=ago(200),
                    last_error="topic not exist",
                ),
            ),
            next_retry_at=ago(200),
        )
    )
    assert "3 min 20 s ago" in backlog.reason and "topic not exist" in backlog.reason
    (stuck,) = diagnose(facts(next_retry_at=ago(601)))
    assert stuck.reason == "due since 10 min 1 s ago; no outbox row for version 1"
    (lost,) = diagnose(facts((command(sent_at=ago(700)),), next_retry_at=ago(700)))
    assert lost.reason == (
        "due since 11 min 40 s ago; its command was sent 11 min 40 s ago, not claimed"
    )


def test_a_stuck_task_says_whether_its_command_is_sent_again() -> None:
    """A stuck task whose command a slot saw (``seen_at``) waits for a free slot; one the
    reconciler sent again already (``resent_at``) is not sent a third time; neither is
    lost for good, a free slot claims the task (docs/design-rules.md §8.5-1)."""
    seen = command(sent_at=ago(700), seen_at=ago(650))
    (stuck,) = diagnose(facts((seen,), next_retry_at=ago(700)))
    assert stuck.symptom == Symptom.STUCK_PENDING
    assert stuck.reason == (
        "due since 11 min 40 s ago; its command was sent 11 min 40 s ago and a slot acked it "
        "10 min 50 s ago without claiming it (fair share, storage unavailable, back-off): it "
        "waits for a free slot and is not sent again"
    )
    again = command(sent_at=ago(700), resent_at=ago(700))
    (behind,) = diagnose(facts((again,), next_retry_at=ago(1300)))
    assert behind.reason == (
        "due since 21 min 40 s ago; its command was sent 11 min 40 s ago, a second time since "
        "no slot took the first, not claimed: every slot is busy or no consumer runs; a free "
        "slot claims it from the database, and it is not sent a third time"
    )


@pytest.mark.parametrize(
    ("offset", "text"),
    [
        (12.34, "in 12.3 s"),
        (-4, "4.0 s ago"),
        (0, "0.0 s ago"),
        (125, "in 2 min 5 s"),
        (-3 * 3600 - 120, "3 h 2 min ago"),
        (2 * 86400 + 4 * 3600 + 5, "in 2 d 4 h"),
    ],
)
def test_relative_time(offset: float, text: str) -> None:
    assert relative_time(NOW + timedelta(seconds=offset), NOW) == text


def test_an_expired_file_still_kept_points_to_the_delete_failure_signal() -> None:
    """issue 22 item 5: the row names the counter and the alert that say why a file stays."""
    [finding] = diagnose(facts(status=TaskStatus.SUCCEEDED, expires_at=ago(301)))

    assert finding.symptom == Symptom.EXPIRED_NOT_CLEANED
    assert 'export_file_delete_failures_total{duty="expire"}' in finding.reason
    assert "ExportFileDeleteFailing" in finding.reason
