"""The production load acceptance's arithmetic and verdict (``export-center accept
--load``; docs/capacity.md): pure functions, tested by tables.

The rule, the design's acceptance of a production load (docs/capacity.md): four exports of
the largest size run at once while the API's other users — the neighbours — see their p95
latency grow by at most 20 %; CPU, memory and the Provider's p95/p99 are reported beside
the verdict.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: The design's allowance for the neighbours' API p95 under load: +20 %.
DEFAULT_ALLOWANCE = 0.20


def quantile(samples: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0 < q ≤ 1) of ``samples``.

    Raises:
        ValueError: no samples, or ``q`` outside (0, 1].
    """
    if not samples:
        raise ValueError("no samples")
    if not 0 < q <= 1:
        raise ValueError(f"quantile {q} outside (0, 1]")
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def histogram_quantile(buckets: Iterable[tuple[float, float]], q: float) -> float | None:
    """The ``q`` quantile of a Prometheus histogram, as PromQL's ``histogram_quantile``
    estimates it: linear interpolation inside the bucket the rank falls in.

    Args:
        buckets: ``(upper bound, cumulative count)`` pairs, ``+Inf`` included (the
            increase of ``…_bucket`` over the interval, summed over the other labels).
        q: the quantile, 0 < q ≤ 1.

    Returns:
        Seconds (the histogram's unit), or ``None`` without observations. A rank in the
        ``+Inf`` bucket answers the highest finite bound (PromQL does the same).
    """
    ordered = sorted(buckets)
    if not ordered or ordered[-1][1] <= 0:
        return None
    total = ordered[-1][1]
    rank = q * total
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in ordered:
        if count >= rank:
            if math.isinf(bound):
                return lower_bound
            if count == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (
                count - lower_count
            )
        lower_bound, lower_count = bound, count
    return lower_bound


@dataclass(frozen=True, slots=True)
class LoadFigures:
    """What a load acceptance measured.

    Attributes:
        exports: exports started at once.
        passed: those that succeeded and read back.
        failures: why each other one failed.
        idle_p95_ms: the neighbours' API p95 before the exports, milliseconds.
        loaded_p95_ms: the same while the exports ran.
        probes: API requests measured while loaded (the p95's sample size).
    """

    exports: int
    passed: int
    failures: tuple[str, ...]
    idle_p95_ms: float
    loaded_p95_ms: float
    probes: int


def judge_load(figures: LoadFigures, allowance: float = DEFAULT_ALLOWANCE) -> tuple[bool, str]:
    """Whether the load acceptance passed, and the clause that says why.

    It passes when every export passed and the loaded p95 is at most ``(1 + allowance)``
    times the idle one. Fewer than 20 probes under load is a failure: a p95 of fewer
    samples is the maximum, not a percentile.
    """
    growth = figures.loaded_p95_ms / figures.idle_p95_ms - 1 if figures.idle_p95_ms > 0 else 0.0
    api = (
        f"API p95 {figures.idle_p95_ms:.1f} ms idle, {figures.loaded_p95_ms:.1f} ms under load "
        f"({growth:+.0%}, allowed {allowance:+.0%})"
    )
    if figures.passed < figures.exports:
        return False, (
            f"{figures.passed}/{figures.exports} exports passed ({'; '.join(figures.failures)}); "
            + api
        )
    if figures.probes < 20:
        return False, f"only {figures.probes} API probes under load, too few for a p95; " + api
    if growth > allowance:
        return False, f"the neighbours' API slowed beyond the allowance: {api}"
    return True, api
