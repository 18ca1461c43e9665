"""Every figure of issue 9 item 5 in one run, with the issue's targets beside them.

Figures, no pass/fail: a target is printed next to its figure, never asserted. The run:

1. ``bench_xlsx_writer.py`` as a subprocess: the writers side by side over ROWS pre-made
   demo rows (its table is printed as is); the bare xlsxwriter ``constant_memory`` loop and
   openpyxl ``write_only`` rows/s are taken from it. Then ``bench_cores.py``: the same
   rows decoded and written (the worker's CPU work without HTTP and pipes) by one process
   alone and by one per core at once: the ceiling this machine puts on the scaling
   figures below.
2. The embedded service (``bench_workers.Service``: ``python -m actors`` in a temporary
   directory, SQLite, in-process bus, four consumer slots) calling the demo Provider over
   real HTTP in a process of its own (``export-center demo-provider``, at the export
   workers' priority): the Provider's CPU is another service's and is not counted as ours.

   * after one unmeasured warm-up export, aggregate rows/s and CPU per wall second of 1,
     2 and 4 concurrent exports of ROWS rows, then API ``GET …/export-tasks``
     p50/p95/p99 idle and during 1 and 4 concurrent exports run again for it
     (``bench_workers.measure``: the probe's own CPU is kept out of the throughput);
   * one export of ROWS rows end to end, alone: rows/s from ``startedAt`` to
     ``completedAt`` (the service's clock) and rows per CPU-second of the whole process
     tree (service + its export worker), as ratios to the two bare library loops;
   * create → RUNNING: CREATES small exports one after another (each waited for before
     the next), ``startedAt - requestedAt`` as the API returns them (the service's wall
     clock, millisecond resolution), p50/p99;
   * peak RSS of the whole service — the service process plus every descendant (its
     export workers), summed from ``/proc`` every 50 ms — during one export of each
     RSS_ROWS size (default 100,000 and 1,000,000; the registry's ``max-rows`` ceiling
     is lifted for this benchmark only). Summed RSS counts shared pages once per process:
     an upper bound.
3. The same latency and scaling scenarios against a second service whose Provider is
   ``replay_provider.py``: the demo Provider's answers made once and replayed at almost no
   CPU, as if the Provider ran on other hosts. On a 2-core machine the demo Provider takes
   about a third of a core per export, so with it the scaling figures say as much about
   the Provider's share of the cores as about the service; both are printed.
4. ``bench_history.py`` as a subprocess (``--skip-history`` leaves it out; ~15 minutes):
   reconciler pass, create and list at 1k vs 1M finished tasks on SQLite and MariaDB
   (127.0.0.1:3307); the "best" ratios go into the summary.

``uptime`` is printed at the start and at the end (the machine may be shared), then one
summary table: target of the issue | figure measured. This script runs the scenarios; the
service's process tree is read by ``process_tree.py``, and what was measured and the
summary table are ``summary.py``'s.

Usage::

    deploy/dev bench [--quick] [--skip-history] [--rows N] [--rss-rows N,N] [--creates N]
    .venv/bin/python deploy/bench/bench_all.py --quick --skip-history   # smoke run, ~1 min
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import trio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_cores  # noqa: E402
import bench_workers  # noqa: E402
from process_tree import tree_cpu, tree_rss  # noqa: E402
from summary import Export, Results, print_summary, summary  # noqa: E402

#: Sizes of a full run and of ``--quick`` (a smoke run: seconds, not minutes).
FULL = {"rows": 200_000, "rss_rows": "100000,1000000", "creates": 50, "rounds": 3}
QUICK = {"rows": 2_000, "rss_rows": "1000,4000", "creates": 5, "rounds": 1}
QUICK_HISTORY = ["--sizes", "100,1000", "--db", "sqlite", "--repeat", "3"]
#: Pause between two samples of the process tree's memory, seconds.
RSS_SAMPLE_PAUSE = 0.05
XLSX_WRITERS = ("stream level 1", "stream level 6", "xlsxwriter cm", "openpyxl wo")


def uptime(when: str) -> None:
    out = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    print(f"uptime at the {when}: {out.strip()}", flush=True)


# --- the measurements ---------------------------------------------------------------


def run_writers(rows: int) -> dict[str, dict[str, float]]:
    """``bench_xlsx_writer.py ROWS``, its output printed; rows/s and rows/CPU-s per writer."""
    out = subprocess.run(
        [sys.executable, str(HERE / "bench_xlsx_writer.py"), str(rows)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    print(out, end="", flush=True)
    figures = {}
    for line in out.splitlines():
        for name in XLSX_WRITERS:
            if line.startswith(name + " "):
                cells = line[len(name) :].split()
                figures[name] = {"rows_per_s": float(cells[1]), "rows_per_cpu_s": float(cells[3])}
    return figures


async def one_export(service: bench_workers.Service, rows: int, user: int) -> Export:
    """One export alone, with the service tree's memory sampled and CPU counted."""
    pid = service.proc.pid
    peak = [0, 0]
    result: dict[str, Any] = {}
    cpu0 = tree_cpu(pid)

    async def export(cancel: trio.CancelScope) -> None:
        result.update(await bench_workers.run_exports(service.url, 1, rows, user))
        cancel.cancel()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(export, nursery.cancel_scope)
        while True:
            own, total = tree_rss(pid)
            peak = [max(peak[0], own), max(peak[1], total)]
            await trio.sleep(RSS_SAMPLE_PAUSE)
    return Export(rows, result["rows_per_s"], tree_cpu(pid) - cpu0, peak[0], peak[1])


async def create_to_running(service: bench_workers.Service, count: int) -> list[float]:
    """``startedAt - requestedAt`` in ms of ``count`` 10-row exports, one after another."""
    api = bench_workers.API
    delays = []
    async with bench_workers.client(service.url, 900) as c:
        for i in range(count):
            body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 10, "n": i}}
            created = (await c.post(api, json=body)).json()
            assert created["code"] == "200", created
            task_id = created["data"]["id"]
            with trio.fail_after(120):
                while (task := (await c.get(f"{api}/{task_id}")).json()["data"])["status"] not in (
                    "SUCCEEDED",
                    "FAILED",
                    "CANCELLED",
                ):
                    await trio.sleep(0.05)
            assert task["status"] == "SUCCEEDED", task
            started = datetime.fromisoformat(task["startedAt"])
            requested = datetime.fromisoformat(task["requestedAt"])
            delays.append((started - requested).total_seconds() * 1000)
    return delays


@contextlib.asynccontextmanager
async def started(max_rows: int, provider: str) -> AsyncIterator[bench_workers.Service]:
    """The embedded service with ``provider`` ("demo", "replay") in a temporary
    directory, ready; stopped when the block ends."""
    with tempfile.TemporaryDirectory(prefix=f"bench-all-{provider}-") as tmp:
        service = bench_workers.Service(Path(tmp), None, max_rows=max_rows, provider=provider)
        try:
            await service.ready()
            yield service
        finally:
            service.stop()


async def end_to_end(
    service: bench_workers.Service, rows: int, results: Results, provider: str
) -> None:
    """One export of ``rows`` alone on ``service``, recorded under ``provider`` and printed."""
    results.end_to_end[provider] = e2e = await one_export(service, rows, 500)
    print(
        f"\none export alone, end to end ({provider} Provider): {e2e.rows:,} rows at "
        f"{e2e.rows_per_s:,.0f} rows/s (service clock), "
        f"{e2e.rows / e2e.cpu_seconds:,.0f} rows per CPU-second (service + worker)",
        flush=True,
    )


async def run_service(args: argparse.Namespace, results: Results) -> None:
    rss_rows = [int(r) for r in args.rss_rows.split(",")]
    max_rows = max([args.rows, *rss_rows])
    # 1,000,000 demo rows make a file of ~75 MB, over the default 50 MB limit.
    os.environ.setdefault("FILE_EXPORT_MAX_FILE_SIZE_MB", "1024")
    async with started(max_rows, "demo") as service:
        print(
            f"\nservice at {service.url}, {args.rows:,} rows per export; the demo Provider "
            "in a process of its own on the same cores",
            flush=True,
        )
        results.scaling["demo"] = await bench_workers.measure(
            service, args.rows, args.idle_samples, rounds=args.rounds
        )
        bench_workers.print_table(*results.scaling["demo"])
        await end_to_end(service, args.rows, results, "demo")
        results.to_running = await create_to_running(service, args.creates)
        p = bench_workers.percentiles(results.to_running)
        print(
            f"create → RUNNING over {len(results.to_running)} exports (startedAt - "
            f"requestedAt, service wall clock, ms): p50 {p[0]:.1f}, p99 {p[2]:.1f}, "
            f"max {max(results.to_running):.1f}",
            flush=True,
        )
        for i, rows in enumerate(rss_rows):
            results.rss.append(r := await one_export(service, rows, 600 + i))
            print(
                f"peak RSS during a {r.rows:,}-row export: service + workers "
                f"{r.peak_total / 1e6:.1f} MB (service alone {r.peak_service / 1e6:.1f} MB)"
                f"; {r.rows_per_s:,.0f} rows/s",
                flush=True,
            )
    async with started(max_rows, "replay") as service:
        print(
            "\nthe same scenarios with the Provider elsewhere: its answers replayed at "
            "almost no CPU (deploy/bench/replay_provider.py)",
            flush=True,
        )
        results.scaling["replay"] = await bench_workers.measure(
            service, args.rows, args.idle_samples, rounds=args.rounds
        )
        bench_workers.print_table(*results.scaling["replay"])
        await end_to_end(service, args.rows, results, "replay")


def run_history(quick: bool) -> tuple[dict[str, dict[str, float]], tuple[str, str]]:
    """``bench_history.py``, output streamed.

    Returns:
        the best-of ratios larger / smaller history, ``{db: {figure: ratio}}``, and the
        two history sizes as printed.
    """
    command = [sys.executable, str(HERE / "bench_history.py"), *(QUICK_HISTORY if quick else [])]
    lines = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            print(line, end="", flush=True)
            lines.append(line.rstrip("\n"))
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, command)
    # The second table ("best ms") is the cost of the work itself on a shared machine.
    start = next(i for i, line in enumerate(lines) if line.startswith("best ms"))
    heads = [cell.split() for cell in lines[start].split("|")[1:]]  # db small big ratio
    dbs = [head[0] for head in heads]
    ratios: dict[str, dict[str, float]] = {db: {} for db in dbs}
    for line in lines[start + 2 :]:
        if "|" not in line:
            break
        name, *cells = line.split("|")
        for db, cell in zip(dbs, cells, strict=True):
            ratios[db][name.strip()] = float(cell.split()[2].rstrip("x"))
    return ratios, (heads[0][1], heads[0][2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--skip-history", action="store_true", help="leave bench_history out")
    parser.add_argument("--rows", type=int, help="rows per export and per writer loop")
    parser.add_argument("--rss-rows", help="comma-separated export sizes for peak RSS")
    parser.add_argument("--creates", type=int, help="exports timed for create -> RUNNING")
    parser.add_argument(
        "--rounds", type=int, help="alternated rounds of the scaling and cores figures (median)"
    )
    parser.add_argument("--idle-samples", type=int, default=bench_workers.IDLE_SAMPLES)
    args = parser.parse_args()
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.quick and args.idle_samples == bench_workers.IDLE_SAMPLES:
        args.idle_samples = 50

    cores = os.cpu_count() or 1
    uptime("start")
    began = time.monotonic()
    results = Results()
    print(f"\n## XLSX writers over {args.rows:,} pre-made demo rows\n", flush=True)
    results.writers = run_writers(args.rows)
    print(f"\n## What {cores} cores give the same work here (bench_cores.py)\n", flush=True)
    results.cores = bench_cores.measure(args.rows, cores, args.rounds)
    print("\n## The embedded service", flush=True)
    trio.run(run_service, args, results)
    if not args.skip_history:
        print("\n## Queries at 1k vs 1M finished tasks\n", flush=True)
        results.history, results.history_sizes = run_history(args.quick)
    print_summary(summary(results, cores))
    print(f"\n{cores} cores; {time.monotonic() - began:.0f} s in all")
    uptime("end")


if __name__ == "__main__":
    main()
