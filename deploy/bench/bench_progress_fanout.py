"""Administrators' progress streams beside exports (issue 35 item 6): figures, no pass/fail.

An administrator (``platform:download:all``) sees every task of its tenant and app, so its
progress stream receives every change there: with thousands of administrators' pages open
the fan-out of the progress feed (``web/progress_feed.py``) is the instance's load, not
the database. This benchmark starts the embedded service as its own process
(``bench_workers.Service``: SQLite, four consumer slots, the demo Provider in a process of
its own at the workers' priority; ``--provider in-process`` serves it inside the service,
as the embedded defaults do) and measures, one request after another, ``/healthz`` (its
statuses: every answer should be 200) and the task list (``GET …/export-tasks``, p95):

1. idle: no stream open, no export;
2. exports alone: ``--exports`` exports running all the time (a new one as soon as one
   ends, each of ``--rows`` rows, one exporting user each);
3. streams and exports: ``--streams`` progress streams open (default 5,000, half of them
   administrators': ``--admins``), held by a process of their own over plain sockets, so
   their reading costs little CPU and the probes do not share its event loop; the same
   exports run meanwhile (the holder: ``deploy/bench/progress_holder.py``).

Each figure is printed beside the idle one (the target for the list's p95 under load is
1.5 × idle). At the end the stream holder reports what each stream received; the script
checks that every administrator's stream of the exporting tenant saw every export of the
window end, that each exporting user's streams saw its own exports and no other task, and
that every other stream — other users, administrators of another tenant — received no task
at all, and prints the events and bytes delivered. The machine's cores and its load
average at the start and the end are printed (the machine may be shared).

Usage::

    .venv/bin/python deploy/bench/bench_progress_fanout.py [--streams 5000] [--admins 0.5]
        [--exports 2] [--rows 200000] [--seconds 30] [--probes 300]
    BENCH_SOURCE=/path/to/other/checkout .venv/bin/python deploy/bench/bench_progress_fanout.py
        # runs the service from another checkout of the code (e.g. before a change)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from deploy.bench.bench_workers import API, PROVIDERS, Service, percentiles  # noqa: E402
from deploy.bench.progress_holder import (  # noqa: E402
    FIRST_USER,
    PER_USER,
    TENANT,
    Holder,
    Stream,
    plan,
)

#: The user whose requests probe the list (a user of its own, with no stream open).
PROBER = 99_999
#: Pause between two probes, seconds (keeps the probe from becoming the load).
PROBE_PAUSE = 0.02
ENDED = ("SUCCEEDED", "FAILED", "CANCELLED")


# --- the service side: exports and probes -------------------------------------------------


def api_client(url: str, user: int) -> httpx.AsyncClient:
    token = Stream("user", TENANT, user).token()
    return httpx.AsyncClient(base_url=url, timeout=60, headers={"Authorization": f"Bearer {token}"})


class Exports:
    """Keeps ``count`` exports running, one per exporting user: a new one as soon as one
    ends, until :meth:`stop`; remembers each one's id and end."""

    def __init__(self, url: str, count: int, rows: int) -> None:
        self.url, self.count, self.rows = url, count, rows
        self.ended: dict[int, list[tuple[str, str]]] = {u: [] for u in range(count)}
        self._stop = trio.Event()

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            for u in range(self.count):
                nursery.start_soon(self._one_user, u)

    def stop(self) -> None:
        self._stop.set()

    async def _one_user(self, u: int) -> None:
        async with api_client(self.url, FIRST_USER + u) as c:
            while not self._stop.is_set():
                body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": self.rows}}
                created = (await c.post(API, json=body)).json()
                assert created["code"] == "200", created
                task_id = created["data"]["id"]
                with trio.fail_after(600):
                    while (task := (await c.get(f"{API}/{task_id}")).json()["data"])[
                        "status"
                    ] not in ENDED:
                        await trio.sleep(0.5)
                self.ended[u].append((task_id, task["status"]))


@dataclass
class Probed:
    """The probes of one phase: ``/healthz`` statuses and times, the list's times (ms).

    ``row`` prints the list's p50, p95, p99 and maximum: a p95 alone hides the stalls
    a busy event loop makes (a before/after with the same p95 can differ by seconds
    at the tail)."""

    health: list[tuple[int, float]]
    listed: list[float]

    def row(self, name: str, idle: Probed | None) -> str:
        statuses = sorted({s for s, _ in self.health})
        bad = sum(1 for s, _ in self.health if s != 200)
        h = percentiles([ms for _, ms in self.health])
        p = percentiles(self.listed)
        ratio = f"{p[1] / percentiles(idle.listed)[1]:.2f}" if idle else "1.00"
        return (
            f"| {name} | {len(self.health)} | {bad} ({', '.join(map(str, statuses))}) | "
            f"{h[0]:.1f} | {h[2]:.1f} | {p[0]:.1f} | {p[1]:.1f} | {p[2]:.1f} | "
            f"{max(self.listed):.1f} | {ratio} |"
        )


async def probe(url: str, count: int | None, seconds: float | None) -> Probed:
    """``/healthz`` then the list, one request after another, ``count`` times or for
    ``seconds``."""
    health: list[tuple[int, float]] = []
    listed: list[float] = []
    started = time.perf_counter()
    async with api_client(url, PROBER) as c:
        while (count is None or len(listed) < count) and (
            seconds is None or time.perf_counter() - started < seconds
        ):
            t0 = time.perf_counter()
            status = (await c.get("/healthz")).status_code
            health.append((status, (time.perf_counter() - t0) * 1000))
            t0 = time.perf_counter()
            answer = await c.get(API, params={"pageSize": 10})
            listed.append((time.perf_counter() - t0) * 1000)
            assert answer.status_code == 200, answer.text
            await trio.sleep(PROBE_PAUSE)
    return Probed(health, listed)


async def with_exports(
    url: str, args: argparse.Namespace, seconds: float
) -> tuple[Probed, Exports]:
    """Probe for ``seconds`` while ``args.exports`` exports run; then let them end."""
    exports = Exports(url, args.exports, args.rows)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(exports.run)
        await trio.sleep(1)  # the first exports claimed and running
        probed = await probe(url, None, seconds)
        exports.stop()
    return probed, exports


def check(streams: list[Stream], received: list[dict[str, Any]], exports: Exports) -> list[str]:
    """What each stream should have received of the window's exports, against what it did:
    the problems found (none expected)."""
    own = {FIRST_USER + u: {i for i, _ in ended} for u, ended in exports.ended.items()}
    every = set().union(*own.values())
    problems = []
    for stream, got in zip(streams, received, strict=True):
        tasks: dict[str, str] = got["tasks"]
        if stream.group == "admin":
            want, may = every, every
        elif stream.group == "user":
            want = may = own.get(stream.user, set())
        else:
            want = may = set()
        if not want <= {i for i, s in tasks.items() if s in ENDED}:
            problems.append(f"{stream}: missed the end of {sorted(want - set(tasks))}")
        if set(tasks) - may:
            problems.append(f"{stream}: received tasks not its own {sorted(set(tasks) - may)}")
    return problems


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


async def main(args: argparse.Namespace) -> None:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"cores: {cores}; load average at the start: {load()}", flush=True)
    streams = plan(args.streams, args.admins)
    groups = {g: sum(1 for s in streams if s.group == g) for g in ("user", "admin", "foreign")}
    with tempfile.TemporaryDirectory(prefix="bench-fanout-") as tmp:
        source = os.environ.get("BENCH_SOURCE")
        service = Service(
            Path(tmp), Path(source).resolve() if source else None, provider=args.provider
        )
        holder: Holder | None = None
        try:
            url = await service.ready()
            await probe(url, 20, None)  # warm up the request path
            idle = await probe(url, args.probes, None)
            alone, _ = await with_exports(url, args, args.seconds)
            holder = Holder(url, args.streams, args.admins)
            connect_s = await holder.connected()
            cpu0, wall0 = sum(service.cpu_seconds()), time.perf_counter()
            loaded, exports = await with_exports(url, args, args.seconds)
            cpu = (sum(service.cpu_seconds()) - cpu0) / (time.perf_counter() - wall0)
            # The last ends reach the streams within a feed interval or two.
            with trio.move_on_after(30):
                while check(streams, received := await holder.report(), exports):
                    await trio.sleep(0.5)
        finally:
            if holder is not None:
                holder.stop()
            service.stop()
    done = [s for ended in exports.ended.values() for _, s in ended]
    print(
        f"{args.streams:,} streams ({groups['user']:,} ordinary users', {groups['admin']:,} "
        f"administrators' of the exporting tenant, {groups['foreign']:,} of another tenant's "
        f"administrator), {PER_USER} per user, all open in {connect_s:.1f} s; "
        f"{args.exports} exports of {args.rows:,} rows kept running, {args.provider} Provider; "
        f"service from {os.environ.get('BENCH_SOURCE') or Path(__file__).resolve().parents[2]}"
    )
    print()
    print(
        "| phase | probes | /healthz not 200 (statuses) | /healthz p50 ms | /healthz p99 ms "
        "| list p50 ms | list p95 ms | list p99 ms | list max ms | list p95 × idle |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(idle.row("idle", None))
    print(alone.row(f"{args.exports} exports", idle))
    print(loaded.row(f"{args.exports} exports + {args.streams:,} streams", idle))
    print()
    print(
        f"exports during the window with the streams open: {len(done)} ended "
        f"({', '.join(f'{s} {done.count(s)}' for s in sorted(set(done)))}); "
        f"service CPU {cpu:.2f} cores"
    )
    for group in ("admin", "user", "foreign"):
        got = [r for s, r in zip(streams, received, strict=True) if s.group == group]
        if got:
            events = sum(r["events"] for r in got)
            size = sum(r["bytes"] for r in got)
            print(
                f"{group} streams: {len(got):,}, {events:,} events ({events / len(got):.1f} "
                f"per stream), {size / 1e6:.1f} MB received"
            )
    problems = check(streams, received, exports)
    print(f"delivery: {'every stream received what it should' if not problems else 'WRONG'}")
    for problem in problems[:20]:
        print(f"  {problem}")
    print(f"load average at the end: {load()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=5000)
    parser.add_argument("--admins", type=float, default=0.5, help="share of admin streams")
    parser.add_argument("--exports", type=int, default=2)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--probes", type=int, default=300, help="idle probes")
    parser.add_argument("--provider", choices=PROVIDERS, default="demo")
    trio.run(main, parser.parse_args())
