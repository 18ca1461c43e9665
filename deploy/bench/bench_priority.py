"""Benchmark of the export workers' scheduling priority (issue 22 item 8): figures, no pass/fail.

The question: which priority keeps the API ahead of the export workers *and* lets the
workers progress when something else on the host keeps the cores busy. Each variant is a
``FILE_EXPORT_WORKER_NICE`` with or without ``FILE_EXPORT_WORKER_SCHED_IDLE`` (``10+idle``
is nice +10 under ``SCHED_IDLE``, ``10`` nice +10 alone). For each variant, in a fresh
embedded service (``bench_workers.Service``: ``python -m actors`` in a temporary directory,
SQLite, in-process bus, four consumer slots) whose Provider is ``replay_provider.py`` at the
normal priority (a Provider on other hosts: it neither takes the cores nor starves):

* API latency: after one unmeasured warm-up export, ``GET …/export-tasks`` one request
  after another while idle, then during four concurrent exports of ROWS rows
  (``bench_workers.scenario``): p95 in ms and p95 during / p95 idle;
* alone: one export of ROWS rows with nothing else running, rows/s from ``startedAt`` to
  ``completedAt`` (the service's clock): the yardstick of the next figure;
* beside a CPU hog: HOGS busy loops (``python3 -c`` with a ``while`` loop, normal priority,
  started and killed by this script, and ending by themselves after the bound should the
  script be killed first) run while one export of ROWS rows runs; its rows/s
  from ``startedAt`` to ``completedAt`` (the service's clock). An export not finished
  within ``--bound`` seconds is stopped there and its rate is the rows it had written by
  then (``processedRows``) over the time since it was seen running, marked ``*``.

The variants run in turn (A, B, A, B, …; ``--rounds`` rounds) because the speed of a
shared machine drifts within minutes; each figure printed is the median over the rounds,
with every round's figure and ``uptime`` at the start of each round beside it.

Usage::

    .venv/bin/python deploy/bench/bench_priority.py [--rows 200000] [--rounds 3]
        [--variants 10+idle,10] [--hogs 2] [--bound 30]
    .venv/bin/python deploy/bench/bench_priority.py --quick   # smoke run, ~30 s
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import trio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_workers  # noqa: E402

#: A busy loop: one core's worth of normal-priority load for ``sys.argv[1]`` seconds at most.
HOG = (
    "import sys, time\n"
    "end = time.monotonic() + float(sys.argv[1])\n"
    "while time.monotonic() < end: pass"
)


@dataclass(frozen=True)
class Variant:
    """A worker priority: ``nice`` increment and whether ``SCHED_IDLE`` is on."""

    nice: int
    idle: bool

    @classmethod
    def parse(cls, text: str) -> Variant:
        """``"10+idle"`` or ``"10"``."""
        nice, _, idle = text.strip().partition("+")
        if idle not in ("", "idle"):
            raise ValueError(f"a variant is NICE or NICE+idle, not {text!r}")
        return cls(int(nice), idle == "idle")

    def __str__(self) -> str:
        return f"nice +{self.nice}" + (" + SCHED_IDLE" if self.idle else "")


@dataclass
class Figures:
    """Every round's figures of one variant."""

    idle_p95: list[float] = field(default_factory=list)
    busy_p95: list[float] = field(default_factory=list)
    alone_rows_per_s: list[float] = field(default_factory=list)
    hog_rows_per_s: list[float] = field(default_factory=list)
    hog_unfinished: list[bool] = field(default_factory=list)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


async def beside_hogs(service: bench_workers.Service, rows: int, hogs: int, bound: float) -> Any:
    """One export of ``rows`` rows while ``hogs`` busy loops run; (rows/s, unfinished)."""
    loops = [subprocess.Popen([sys.executable, "-c", HOG, str(bound + 30)]) for _ in range(hogs)]
    try:
        await trio.sleep(1)  # the loops are running, not starting
        async with bench_workers.client(service.url, 900) as c:
            body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": rows, "n": "hog"}}
            created = (await c.post(bench_workers.API, json=body)).json()
            assert created["code"] == "200", created
            task_id = created["data"]["id"]
            deadline = time.monotonic() + bound
            seen_running: float | None = None
            while True:
                task = (await c.get(f"{bench_workers.API}/{task_id}")).json()["data"]
                if task["status"] == "RUNNING" and seen_running is None:
                    seen_running = time.monotonic()
                if task["status"] in ("SUCCEEDED", "FAILED", "CANCELLED"):
                    assert task["status"] == "SUCCEEDED", task
                    seconds = (
                        datetime.fromisoformat(task["completedAt"])
                        - datetime.fromisoformat(task["startedAt"])
                    ).total_seconds()
                    return rows / seconds, False
                if time.monotonic() >= deadline:
                    running_for = time.monotonic() - (seen_running or deadline - bound)
                    return int(task["processedRows"]) / running_for, True
                await trio.sleep(0.2)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


async def one_round(variant: Variant, args: argparse.Namespace, into: Figures) -> None:
    """A fresh service at ``variant``'s worker priority: latency, alone, beside the hogs."""
    rows, hogs, idle_samples = args.rows, args.hogs, args.idle_samples
    os.environ["FILE_EXPORT_WORKER_NICE"] = str(variant.nice)
    os.environ["FILE_EXPORT_WORKER_SCHED_IDLE"] = "true" if variant.idle else "false"
    with tempfile.TemporaryDirectory(prefix="bench-priority-") as tmp:
        service = bench_workers.Service(Path(tmp), None, provider="replay")
        try:
            await service.ready()
            await bench_workers.run_exports(service.url, 1, rows, 50)  # warm-up
            async with bench_workers.client(service.url, 1) as probe:
                await bench_workers.sample_latency(probe, trio.Event(), 20)
                idle = bench_workers.percentiles(
                    await bench_workers.sample_latency(probe, trio.Event(), idle_samples)
                )
            busy = await bench_workers.scenario(service, 4, rows, 600, probe=True)
            alone = (await bench_workers.run_exports(service.url, 1, rows, 700))["rows_per_s"]
            rate, unfinished = await beside_hogs(service, rows, hogs, args.bound)
        finally:
            service.stop()
    into.idle_p95.append(idle[1])
    into.busy_p95.append(busy["latency"][1])
    into.alone_rows_per_s.append(alone)
    into.hog_rows_per_s.append(rate)
    into.hog_unfinished.append(unfinished)
    mark = "*" if unfinished else ""
    print(
        f"  {variant}: API p95 idle {idle[1]:.1f} ms, during 4 exports "
        f"{busy['latency'][1]:.1f} ms (× {busy['latency'][1] / idle[1]:.2f}); "
        f"one export alone {alone:,.0f} rows/s, beside {hogs} busy loops {rate:,.0f}{mark}",
        flush=True,
    )


def print_table(figures: dict[Variant, Figures], rows: int, hogs: int) -> None:
    print()
    print(
        f"| worker priority | API p95 idle ms | API p95 during 4 exports ms | p95 × idle "
        f"| rows/s of one {rows:,}-row export alone | beside {hogs} busy loops | each round |"
    )
    print("|---|---:|---:|---:|---:|---:|---|")
    for variant, f in figures.items():
        ratios = [b / i for b, i in zip(f.busy_p95, f.idle_p95, strict=True)]
        rounds = ", ".join(
            f"{r:,.0f}{'*' if u else ''}"
            for r, u in zip(f.hog_rows_per_s, f.hog_unfinished, strict=True)
        )
        print(
            f"| {variant} | {statistics.median(f.idle_p95):.1f} "
            f"| {statistics.median(f.busy_p95):.1f} | {statistics.median(ratios):.2f} "
            f"| {statistics.median(f.alone_rows_per_s):,.0f} "
            f"| {statistics.median(f.hog_rows_per_s):,.0f} | {rounds} |"
        )
    print("\n(medians over the rounds; * = not finished within the bound: rows written / time)")


async def main(args: argparse.Namespace) -> None:
    # The replayed Provider stands for one on other hosts: normal priority, so neither the
    # busy loops nor the workers' policy starve it (bench_workers reads these at start).
    bench_workers.PROVIDER_NICE = 0
    bench_workers.PROVIDER_SCHED_IDLE = False
    variants = [Variant.parse(v) for v in args.variants.split(",")]
    figures = {v: Figures() for v in variants}
    print(f"{args.rows:,} rows per export, {args.hogs} busy loops, {os.cpu_count()} cores")
    for round_ in range(args.rounds):
        print(f"round {round_ + 1}: {uptime()}", flush=True)
        for variant in variants:
            await one_round(variant, args, figures[variant])
    print(f"end: {uptime()}")
    print_table(figures, args.rows, args.hogs)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows per export")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every variant")
    parser.add_argument(
        "--variants", default="10+idle,10", help="comma-separated NICE or NICE+idle"
    )
    parser.add_argument("--hogs", type=int, default=2, help="busy loops beside the export")
    parser.add_argument(
        "--bound", type=float, default=30, help="seconds the export beside the loops may take"
    )
    parser.add_argument(
        "--idle-samples", type=int, default=200, help="latency samples taken while idle"
    )
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 2,000 rows, one round, 10 s bound"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.rounds, args.bound, args.idle_samples = 2_000, 1, 10.0, 50
    return args


if __name__ == "__main__":
    trio.run(main, parse_args(sys.argv[1:]))
