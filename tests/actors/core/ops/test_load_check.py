"""The load acceptance's arithmetic and verdict, by tables."""

from __future__ import annotations

import math

import pytest

from actors.core.ops.load_check import LoadFigures, histogram_quantile, judge_load, quantile


@pytest.mark.parametrize(
    ("samples", "q", "expected"),
    [
        ([5.0], 0.95, 5.0),
        (list(range(1, 101)), 0.95, 95),
        (list(range(1, 101)), 0.99, 99),
        (list(range(100, 0, -1)), 0.5, 50),  # order does not matter
        ([1.0, 2.0, 3.0], 1.0, 3.0),
    ],
)
def test_quantile_is_the_nearest_rank(samples: list[float], q: float, expected: float) -> None:
    assert quantile(samples, q) == expected


@pytest.mark.parametrize(("samples", "q"), [([], 0.5), ([1.0], 0.0), ([1.0], 1.5)])
def test_quantile_refuses_what_has_none(samples: list[float], q: float) -> None:
    with pytest.raises(ValueError):
        quantile(samples, q)


INF = math.inf


@pytest.mark.parametrize(
    ("buckets", "q", "expected"),
    [
        # 100 observations: 50 under 0.1 s, 90 under 0.25 s, all under 0.5 s
        ([(0.1, 50), (0.25, 90), (0.5, 100), (INF, 100)], 0.5, 0.1),
        ([(0.1, 50), (0.25, 90), (0.5, 100), (INF, 100)], 0.95, 0.375),
        ([(0.1, 50), (0.25, 90), (0.5, 100), (INF, 100)], 0.99, 0.475),
        # the first bucket interpolates from 0
        ([(1.0, 10), (INF, 10)], 0.5, 0.5),
        # ranks in +Inf answer the highest finite bound, as PromQL does
        ([(0.1, 1), (1.0, 2), (INF, 10)], 0.95, 1.0),
        # no observations
        ([(0.1, 0), (INF, 0)], 0.95, None),
        ([], 0.95, None),
    ],
)
def test_histogram_quantile_interpolates_as_promql(
    buckets: list[tuple[float, float]], q: float, expected: float | None
) -> None:
    got = histogram_quantile(buckets, q)
    assert got == pytest.approx(expected) if expected is not None else got is None


def figures(**changes: object) -> LoadFigures:
    base = dict(exports=4, passed=4, failures=(), idle_p95_ms=10.0, loaded_p95_ms=11.0, probes=200)
    return LoadFigures(**{**base, **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "passed", "says"),
    [
        ({}, True, "API p95 10.0 ms idle, 11.0 ms under load (+10%, allowed +20%)"),
        ({"loaded_p95_ms": 12.0}, True, "(+20%"),  # exactly the allowance passes
        ({"loaded_p95_ms": 12.1}, False, "slowed beyond the allowance"),
        ({"passed": 3, "failures": ("task 7 FAILED: timeout",)}, False, "3/4 exports passed"),
        ({"probes": 19}, False, "only 19 API probes under load"),
        ({"loaded_p95_ms": 9.0}, True, "(-10%"),
    ],
)
def test_the_verdict(changes: dict[str, object], passed: bool, says: str) -> None:
    ok, clause = judge_load(figures(**changes))
    assert ok is passed
    assert says in clause, clause
