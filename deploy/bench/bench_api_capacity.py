"""How many task-list and create requests one instance sustains (issue 24): figures only.

Starts the service as its own process (``bench_workers.Service``) on the embedded SQLite
database and, with ``--mariadb URL``, on MariaDB (migrated first). Consumers are off, so a
create stays PENDING and no export competes for the CPU: the figures are the API's. For
each operation (``GET …/export-tasks``, ``POST …/export-tasks``) and each number of
concurrent clients (1, 2, 4, 8, 16, 32), the clients send requests back to back for
``--seconds``; printed: requests per second, p50/p95/p99 in ms. The summary is the most
requests per second with a p95 of at most 50 ms.

The clients run in this process: on a small machine their CPU competes with the
service's, so the figures are a floor. ``uptime`` before and after.

Usage::

    .venv/bin/python deploy/bench/bench_api_capacity.py [--seconds 5] \\
        [--mariadb mysql://export_center:export_center@127.0.0.1:3307/export_center_bench]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from deploy.bench.bench_workers import API, Service, client, percentiles  # noqa: E402

CONCURRENCY = (1, 2, 4, 8, 16, 32)
TARGET_P95_MS = 50.0
PRELOAD = 300
USER = 80_000


async def run_level(
    url: str, op: str, clients: int, seconds: float, seq: list[int]
) -> tuple[float, list[float]]:
    """(requests per second, latencies in ms) of ``clients`` clients for ``seconds``."""
    samples: list[float] = []
    deadline = time.perf_counter() + seconds

    async def one(c: httpx.AsyncClient) -> None:
        while time.perf_counter() < deadline:
            seq[0] += 1
            t0 = time.perf_counter()
            if op == "list":
                answer = await c.get(API, params={"pageSize": 20})
            else:
                body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": seq[0]}}
                answer = await c.post(API, json=body)
            samples.append((time.perf_counter() - t0) * 1000)
            assert answer.json()["code"] == "200", answer.text

    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for i in range(clients):
            c = client(url, USER + i % 4)
            nursery.start_soon(_with(c, one))
    return len(samples) / (time.perf_counter() - started), samples


def _with(c: httpx.AsyncClient, fn):  # type: ignore[no-untyped-def]
    async def run() -> None:
        async with c:
            await fn(c)

    return run


async def bench(label: str, env: dict[str, str], seconds: float) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-api-") as tmp:
        service = Service(Path(tmp), None, provider="in-process", env=env)
        try:
            url = await service.ready()
            seq = [0]
            async with client(url, USER) as c:  # a history for the list to page through
                for i in range(PRELOAD):
                    body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 10**6 + i}}
                    assert (await c.post(API, json=body)).json()["code"] == "200"
            for op in ("list", "create"):
                best = None
                print(f"\n{label}, {op}:")
                print("| clients | req/s | p50 ms | p95 ms | p99 ms |\n|---|---|---|---|---|")
                for n in CONCURRENCY:
                    rps, samples = await run_level(url, op, n, seconds, seq)
                    p50, p95, p99 = percentiles(samples)
                    print(f"| {n} | {rps:.0f} | {p50:.1f} | {p95:.1f} | {p99:.1f} |", flush=True)
                    if p95 <= TARGET_P95_MS and (best is None or rps > best[0]):
                        best = (rps, n, p95)
                if best is None:
                    print(f"{label} {op}: no level kept p95 within {TARGET_P95_MS:.0f} ms")
                else:
                    print(
                        f"{label} {op}: {best[0]:.0f} req/s at p95 {best[2]:.1f} ms "
                        f"({best[1]} clients)"
                    )
        finally:
            service.stop()


async def main(seconds: float, mariadb: str | None) -> None:
    base = {
        "FILE_EXPORT_CONSUMER_ENABLED": "false",
        "FILE_EXPORT_MAX_ACTIVE_TASKS_PER_USER": str(10**9),
        "FILE_EXPORT_MAX_ACTIVE_TASKS_PER_TYPE": str(10**9),
        "FILE_EXPORT_TYPE_RESERVED_PLACES": "0",
    }
    await bench("embedded (SQLite)", base, seconds)
    if mariadb:
        # the demo Provider is mounted by default only on SQLite: the registry names it
        env = {**base, "FILE_EXPORT_DATABASE_URL": mariadb, "FILE_EXPORT_DEMO_PROVIDER": "true"}
        subprocess.run(
            [sys.executable, "-c", "from actors.cli.main import main; main(['migrate'])"],
            env={**os.environ, **env},
            check=True,
            capture_output=True,
        )
        await bench("MariaDB", env, seconds)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--mariadb", default=None)
    args = parser.parse_args()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    trio.run(main, args.seconds, args.mariadb)
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
