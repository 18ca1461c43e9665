"""Pure schedules and decisions: backoff (§7.4, §9.2), the §8.2 branches, limits (§12)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from actors.core.backoff import publish_backoff, retry_backoff, should_retry
from actors.core.dispatch import NoClaim, classify_no_claim
from actors.core.errors import ParameterError
from actors.core.limits import normalise_parameters
from actors.core.models import TaskStatus
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
