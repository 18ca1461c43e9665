"""Pure schedules and decisions: backoff (§7.4, §9.2), the §8.2 branches, what the
reconciler makes of a waiting task's command (§8.5-1), limits (§12)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from actors.core.backoff import publish_backoff, retry_backoff, should_retry
from actors.core.dispatch import (
    CommandState,
    NoClaim,
    classify_no_claim,
    command_state,
    marks_command_seen,
)
from actors.core.errors import ParameterError
from actors.core.limits import normalise_parameters
from actors.core.models import OutboxStatus, TaskStatus
from tests.helpers import DB_EPOCH_MS, task_value
from web.errors import envelope_code

NOW = datetime.fromtimestamp(DB_EPOCH_MS / 1000, tz=UTC)


@pytest.mark.parametrize(
    ("attempt", "delay"),
    [(1, 5), (2, 15), (3, 60), (4, 300), (5, 900), (6, 900), (30, 900), (10_000, 900)],
)
def test_publish_backoff_table_then_15_minutes_forever(attempt: int, delay: float) -> None:
    assert publish_backoff(attempt) == delay


@pytest.mark.parametrize("rand", [0.0, 0.25, 0.5, 0.999999])
def test_retry_backoff_has_20_percent_jitter(rand: float) -> None:
    first = retry_backoff(1, rand)
    second = retry_backoff(2, rand)
    assert 48 <= first < 72 and 720 <= second < 1080
    assert retry_backoff(3, rand) == second  # past the table: the last step repeats


def test_should_retry_counts_the_failed_attempt() -> None:
    assert should_retry(1, 3) and should_retry(2, 3) and not should_retry(3, 3)


def _task(
    status: TaskStatus, version: int = 1, lease_s: float | None = None, retry_s: float = 0
) -> object:
    return task_value(
        status=status,
        dispatch_version=version,
        lease_until=None if lease_s is None else NOW + timedelta(seconds=lease_s),
        next_retry_at=NOW + timedelta(seconds=retry_s),
    )


@pytest.mark.parametrize(
    ("task_kwargs", "version", "branch"),
    [
        (None, 1, NoClaim.TASK_MISSING),
        ({"status": TaskStatus.PENDING, "version": 3}, 2, NoClaim.STALE_VERSION),
        ({"status": TaskStatus.SUCCEEDED}, 1, NoClaim.TERMINAL),
        ({"status": TaskStatus.FAILED}, 1, NoClaim.TERMINAL),
        ({"status": TaskStatus.EXPIRED}, 1, NoClaim.TERMINAL),
        ({"status": TaskStatus.RUNNING, "lease_s": 10}, 1, NoClaim.RUNNING_ELSEWHERE),
        ({"status": TaskStatus.RUNNING, "lease_s": 0}, 1, NoClaim.RUNNING_LEASE_EXPIRED),
        ({"status": TaskStatus.PENDING, "retry_s": 60}, 1, NoClaim.IN_BACKOFF),
        ({"status": TaskStatus.PENDING}, 1, NoClaim.LOST_RACE),
    ],
)
def test_every_no_claim_branch_of_8_2(
    task_kwargs: dict | None, version: int, branch: NoClaim
) -> None:
    task = None if task_kwargs is None else _task(**task_kwargs)
    assert classify_no_claim(task, version, NOW) == branch  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("reason", "seen"),
    [
        (NoClaim.TASK_MISSING, False),
        (NoClaim.STALE_VERSION, False),
        (NoClaim.TERMINAL, False),
        (NoClaim.RUNNING_ELSEWHERE, False),
        (NoClaim.RUNNING_LEASE_EXPIRED, False),
        (NoClaim.IN_BACKOFF, True),
        (NoClaim.LOST_RACE, True),
        (NoClaim.DEFERRED_FAIR_SHARE, True),
        (NoClaim.STORAGE_UNAVAILABLE, True),
    ],
)
def test_a_no_claim_whose_task_waits_marks_its_command_seen(reason: NoClaim, seen: bool) -> None:
    """docs/design-rules.md §8.5-1: a delivery acked without a claim while its task waits
    PENDING for a slot proves the command was not lost; the others leave nothing that the
    reconciler would re-send."""
    assert marks_command_seen(reason) is seen


def test_the_seen_table_covers_every_no_claim() -> None:
    covered = {
        NoClaim.TASK_MISSING, NoClaim.STALE_VERSION, NoClaim.TERMINAL,
        NoClaim.RUNNING_ELSEWHERE, NoClaim.RUNNING_LEASE_EXPIRED, NoClaim.IN_BACKOFF,
        NoClaim.LOST_RACE, NoClaim.DEFERRED_FAIR_SHARE, NoClaim.STORAGE_UNAVAILABLE,
    }  # fmt: skip
    assert covered == set(NoClaim)


STALE = 600.0


@pytest.mark.parametrize(
    ("status", "seen", "resent", "sent_age", "state"),
    [
        (None, False, False, None, CommandState.MISSING),
        (OutboxStatus.QUARANTINED, False, False, 10_000, CommandState.QUARANTINED),
        (OutboxStatus.QUARANTINED, True, True, 10_000, CommandState.QUARANTINED),
        (OutboxStatus.PENDING, False, False, None, CommandState.UNSENT),
        (OutboxStatus.PENDING, True, True, 10_000, CommandState.UNSENT),
        (OutboxStatus.CLAIMED, False, True, None, CommandState.UNSENT),
        (OutboxStatus.SENT, False, False, 0, CommandState.IN_FLIGHT),
        (OutboxStatus.SENT, False, False, STALE - 0.001, CommandState.IN_FLIGHT),
        (OutboxStatus.SENT, False, False, STALE, CommandState.LOST),
        (OutboxStatus.SENT, False, False, 10 * STALE, CommandState.LOST),
        (OutboxStatus.SENT, False, True, STALE - 0.001, CommandState.IN_FLIGHT),
        (OutboxStatus.SENT, False, True, STALE, CommandState.RESENT),
        (OutboxStatus.SENT, False, True, 100 * STALE, CommandState.RESENT),
        (OutboxStatus.SENT, True, False, 0, CommandState.WAITING),
        (OutboxStatus.SENT, True, False, STALE, CommandState.WAITING),
        (OutboxStatus.SENT, True, False, 100 * STALE, CommandState.WAITING),
        (OutboxStatus.SENT, True, True, 100 * STALE, CommandState.WAITING),
    ],
)
def test_the_reconciler_resends_only_a_lost_command(
    status: OutboxStatus | None,
    seen: bool,
    resent: bool,
    sent_age: float | None,
    state: CommandState,
) -> None:
    """docs/design-rules.md §8.5-1: a missing command is written, and a SENT one that no
    slot saw within sentStaleSeconds is sent again, once; a seen one waits for a slot,
    however long, and is never sent again; unsent and quarantined rows are not the
    reconciler's."""
    got = command_state(
        status, seen=seen, resent=resent, sent_age_seconds=sent_age, stale_seconds=STALE
    )
    assert got == state
    assert got.redispatched is (state in (CommandState.MISSING, CommandState.LOST))


def test_parameters_are_normalised_for_the_duplicate_check() -> None:
    a = normalise_parameters({"b": 1, "a": "x"})
    b = normalise_parameters({"a": "x", "b": 1})
    assert a == b and a.json == '{"a":"x","b":1}'


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({f"k{i}": i for i in range(21)}, "20 keys"),
        ({"k": "x" * 257}, "256"),
        ({"k": {"n": {"deep": 1}}}, "nested"),
        ({f"k{i}": "x" * 250 for i in range(18)}, "4096"),
        ([1, 2], "JSON object"),
    ],
)
def test_parameter_limits(params: object, fragment: str) -> None:
    with pytest.raises(ParameterError) as err:
        normalise_parameters(params)
    assert envelope_code(err.value) == "400" and fragment in err.value.message


def test_parameters_at_the_limits_are_accepted() -> None:
    normalise_parameters({f"k{i}": "x" * 180 for i in range(20)} | {})  # 20 keys, < 4 KB
    normalise_parameters({"k": {"n": 1}, "l": [1, 2]})  # depth 2
