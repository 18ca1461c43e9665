"""Many open progress streams on one embedded instance (issue 24): figures, no pass/fail.

Starts the embedded service as its own process (``bench_workers.Service``: SQLite, the demo
Provider in the service), then, for each count of open progress streams (default 10,
1,000 and 5,000, held by this process over real HTTP, 20 per user), measures while they
are open and tasks change:

* the database reads per second made for progress: ``export_progress_feed_reads_total``
  of the service's ``/metrics`` over the window (before the progress feed, every stream
  read once per ``FILE_EXPORT_PROGRESS_POLL_SECONDS``: as many reads per second as
  streams);
* ``/healthz`` p99 and the task list's p95 (``GET …/export-tasks``, one request after
  another), beside the same figures with no stream open, and their ratio;
* the service's resident memory (``VmRSS``) beside the idle figure, per open stream;
* every stream's events: a small export is created each second during the window, and the
  streams of its user must all see it (the fan-out works under the load).

``uptime`` before and after (the machine may be shared). The streams and the probes run in
this process: on a small machine their CPU competes with the service's, which makes the
latency figures pessimistic.

Usage::

    .venv/bin/python deploy/bench/bench_progress.py [--streams 10,1000,5000] [--seconds 20]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from deploy.bench.bench_workers import API, Service, client, percentiles  # noqa: E402

PROGRESS = "/api/platform/v1/files/progress"
PER_USER = 20
FIRST_USER = 70_000
PROBES = 200
FEED_READS = re.compile(r"^export_progress_feed_reads_total (\S+)$", re.M)


def rss_mb(pid: int) -> float:
    """Resident memory of process ``pid``, MB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) / 1024  # type: ignore[union-attr]


async def feed_reads(c: httpx.AsyncClient) -> float:
    text = (await c.get("/metrics")).text
    match = FEED_READS.search(text)
    return float(match.group(1)) if match else 0.0


async def probe(c: httpx.AsyncClient) -> tuple[float, float]:
    """(``/healthz`` p99, list p95), ms, over PROBES requests each."""
    health, listed = [], []
    for _ in range(PROBES):
        t0 = time.perf_counter()
        assert (await c.get("/healthz")).status_code == 200
        health.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        assert (await c.get(API, params={"pageSize": 10})).status_code == 200
        listed.append((time.perf_counter() - t0) * 1000)
        await trio.sleep(0.01)
    return percentiles(health)[2], percentiles(listed)[1]


async def measure(url: str, pid: int, streams: int, seconds: float) -> dict[str, float]:
    users = max(1, -(-streams // PER_USER))
    seen: dict[int, set[str]] = {}
    connected = 0
    all_in = trio.Event()
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)

    async def one(c: httpx.AsyncClient, user: int, n: int) -> None:
        nonlocal connected
        async with c.stream("GET", PROGRESS, headers=c.headers) as response:
            assert response.status_code == 200, response.status_code
            names = seen.setdefault(user * PER_USER + n, set())
            first = True
            async for line in response.aiter_lines():
                if first:
                    first = False
                    connected += 1
                    if connected == streams:
                        all_in.set()
                if line.startswith("data: "):
                    names.add(json.loads(line[6:])["taskName"])

    clients = [client(url, FIRST_USER + u, limits) for u in range(users)]
    async with clients[0] as creator, client(url, FIRST_USER + 999_999) as watcher:
        t0 = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for i in range(streams):
                nursery.start_soon(one, clients[i // PER_USER], i // PER_USER, i % PER_USER)
            with trio.fail_after(600):
                await all_in.wait()
            connect_s = time.perf_counter() - t0
            reads0, started = await feed_reads(watcher), time.perf_counter()
            made = []
            while time.perf_counter() - started < seconds:
                name = f"bench {streams} {len(made)}"
                body = {
                    "exportType": "CUSTOMER_LIST",
                    "taskName": name,
                    "parameters": {"rowCount": 10},
                }
                answer = await creator.post(API, json=body)
                assert answer.json()["code"] == "200", answer.text
                made.append(name)
                await trio.sleep(1)
            reads = (await feed_reads(watcher) - reads0) / (time.perf_counter() - started)
            healthz_p99, list_p95 = await probe(watcher)
            rss = rss_mb(pid)
            with trio.fail_after(120):  # every stream of the creating user saw every export
                while not all(set(made) <= seen[i] for i in range(min(PER_USER, streams))):
                    await trio.sleep(0.2)
            nursery.cancel_scope.cancel()
    for c in clients[1:]:
        await c.aclose()
    return {
        "reads_per_s": reads,
        "healthz_p99": healthz_p99,
        "list_p95": list_p95,
        "rss_mb": rss,
        "connect_s": connect_s,
    }


async def main(counts: list[int], seconds: float) -> None:
    os.environ["FILE_EXPORT_PROGRESS_STREAMS_PER_USER"] = str(PER_USER)
    with tempfile.TemporaryDirectory(prefix="bench-progress-") as tmp:
        service = Service(Path(tmp), None, provider="in-process")
        try:
            url = await service.ready()
            async with client(url, FIRST_USER + 999_998) as c:
                idle_healthz, idle_list = await probe(c)
            idle_rss = rss_mb(service.proc.pid)
            print(
                f"idle: /healthz p99 {idle_healthz:.1f} ms, list p95 {idle_list:.1f} ms, "
                f"RSS {idle_rss:.1f} MB"
            )
            print(
                "| open streams | progress DB reads/s | before the feed (1/stream/s) | "
                "/healthz p99 ms (x idle) | list p95 ms (x idle) | RSS MB | KB per stream | "
                "all connected in s |"
            )
            print("|---|---|---|---|---|---|---|---|")
            for n in counts:
                f = await measure(url, service.proc.pid, n, seconds)
                per_stream = (f["rss_mb"] - idle_rss) * 1024 / n
                print(
                    f"| {n:,} | {f['reads_per_s']:.2f} | {n:,} | {f['healthz_p99']:.1f} "
                    f"(x{f['healthz_p99'] / idle_healthz:.2f}) | {f['list_p95']:.1f} "
                    f"(x{f['list_p95'] / idle_list:.2f}) | {f['rss_mb']:.1f} | "
                    f"{per_stream:.1f} | {f['connect_s']:.1f} |",
                    flush=True,
                )
        finally:
            service.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", default="10,1000,5000")
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    trio.run(main, [int(x) for x in args.streams.split(",")], args.seconds)
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
