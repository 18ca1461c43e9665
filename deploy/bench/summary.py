"""What bench_all.py measures (:class:`Results`, one :class:`Export` a run alone) and its
summary: one table of the targets of issue 9, each beside the figure measured ("-" where a
figure was not measured). Targets are printed, never asserted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import bench_workers

#: How the summary names the two services' Providers.
PROVIDER_LABELS = {
    "demo": "demo Provider on the same cores",
    "replay": "Provider elsewhere (replayed)",
}
HISTORY_FIGURES = ("reconciler pass", "create", "list: user, page 1", "list: admin, page 1")


@dataclass
class Export:
    """One export run alone: its rows, rows/s (service clock) and what the tree used."""

    rows: int
    rows_per_s: float
    cpu_seconds: float
    peak_service: int
    peak_total: int


@dataclass
class Results:
    """Everything the summary needs; absent figures stay None."""

    writers: dict[str, dict[str, float]] = field(default_factory=dict)
    #: (rows/s of the bare decode + write loop alone, aggregate of one per core at once)
    cores: tuple[float, float] | None = None
    #: Provider kind ("demo", "replay") -> (idle latency, scenario results by exports)
    scaling: dict[str, tuple[tuple[float, float, float], dict[int, dict[str, Any]]]] = field(
        default_factory=dict
    )
    #: one export alone, by Provider kind ("demo", "replay")
    end_to_end: dict[str, Export] = field(default_factory=dict)
    to_running: list[float] = field(default_factory=list)
    rss: list[Export] = field(default_factory=list)
    history: dict[str, dict[str, float]] = field(default_factory=dict)
    #: (smaller, larger) history size as bench_history prints them, e.g. ("1,000", "1,000,000")
    history_sizes: tuple[str, str] = ("", "")


def summary(results: Results, cores: int) -> list[tuple[str, str, str]]:
    """(figure, target of issue 9, measured) rows; "-" where a figure was not measured."""
    rows: list[tuple[str, str, str]] = []
    for provider, (idle, runs) in results.scaling.items():
        label = PROVIDER_LABELS[provider]
        p95 = runs[4]["latency"][1]
        rows.append(
            (
                f"API p95 during 4 exports, {label}",
                "<= 1.2 x idle p95",
                f"{p95:.1f} ms vs {idle[1]:.1f} ms idle (x{p95 / idle[1]:.1f})",
            )
        )
        one = runs[1]["rows_per_s"]
        for n in (2, 4):
            want, got = 0.9 * min(n, cores), runs[n]["rows_per_s"]
            rows.append(
                (
                    f"aggregate rows/s, {n} vs 1 export, {label}",
                    f">= {want:.1f} x ({cores} cores)",
                    f"{got:,.0f} vs {one:,.0f} (x{got / one:.2f})",
                )
            )
    if results.cores is not None:
        alone, together = results.cores
        rows.append(
            (
                "this machine's ceiling: bare decode + write loop, one process per core vs one",
                "- (reference)",
                f"{together:,.0f} vs {alone:,.0f} rows/s (x{together / alone:.2f})",
            )
        )
    for provider, e2e in results.end_to_end.items():
        label = PROVIDER_LABELS[provider]
        per_cpu = e2e.rows / e2e.cpu_seconds
        for name, library, target in (
            ("xlsxwriter cm", "xlsxwriter constant_memory", ">= 3 x"),
            ("openpyxl wo", "openpyxl write_only", "-"),
        ):
            loop = results.writers.get(name)
            measured = "-"
            if loop:
                measured = (
                    f"x{e2e.rows_per_s / loop['rows_per_s']:.2f} wall, "
                    f"x{per_cpu / loop['rows_per_cpu_s']:.2f} per CPU-s"
                )
            rows.append((f"one export end to end vs {library}, {label}", target, measured))
        rows.append(
            (
                f"one export end to end, rows per service CPU-s, {label}",
                ">= 40,000 per core",
                f"{per_cpu:,.0f} ({e2e.rows_per_s:,.0f} rows/s wall)",
            )
        )
    if results.to_running:
        p50, _, p99 = bench_workers.percentiles(results.to_running)
        measured = f"{p50:.1f} / {p99:.1f} ms"
        rows.append(("create -> RUNNING p50 / p99 idle", "<= 25 / 100 ms", measured))
    for r in results.rss:
        rows.append(
            (
                f"peak RSS service + workers, {r.rows:,} rows",
                "<= 200 MB at 1,000,000, flat",
                f"{r.peak_total / 1e6:.1f} MB",
            )
        )
    small, big = results.history_sizes
    for db, ratios in results.history.items():
        for name in HISTORY_FIGURES:
            if name in ratios:
                label = f"{db}: {name}, {big} vs {small} finished tasks"
                rows.append((label, "<= 2 x", f"x{ratios[name]:.1f}"))
    return rows


def print_summary(rows: list[tuple[str, str, str]]) -> None:
    print("\n## Summary (targets of issue 9; printed, not asserted)\n")
    print("| figure | target | measured |")
    print("|---|---|---|")
    for row in rows:
        print(f"| {' | '.join(row)} |")
