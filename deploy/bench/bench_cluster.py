"""The capacity model's measurements (issue 25; docs/capacity.md): figures, no pass/fail.

Everything real: instances of the service as processes of their own (``bench_workers.
Service``, each with its demo Provider in another process), one MariaDB, the RocketMQ
broker (prefix ``test-``, which ``broker.sh start`` provisions) and the S3-compatible
server (S3Proxy), each instance with a data directory of its own, as on separate hosts.

1. **One export's cost** (one instance, quiet otherwise): a ``--rows`` export (100,000 by
   default). MariaDB's statements (``Questions`` and ``Com_*``) and rows written
   (``Handler_write``/``_update``/``_delete``) during the run, less what the idle
   instance does in as long (its polls, measured for ``--idle-seconds`` before); the
   object-store requests (from the file's size and the part size: a create, the parts
   and a complete, or one PUT) and bytes; the CPU seconds of the service process and its
   export worker (the Provider's apart).
2. **The cluster**: ``--instances`` instances (4) × ``--slots`` slots (4) with ``--tasks``
   exports of ``--task-rows`` rows (48 × 20,000) created at once: tasks per minute from
   the first start to the last finish, MariaDB queries per second meanwhile, and p95
   create→RUNNING; then, for ``--paced-seconds`` (60), exports created at half that rate,
   one at a time, for the p95 create→RUNNING when nothing queues (the dispatch path).

The instances, MariaDB, the broker and S3Proxy share this machine's cores: on a small
machine the cluster figures are a floor, and ``uptime`` is printed before and after.

Usage (the services script starts what is missing)::

    deploy/services.sh run .venv/bin/python deploy/bench/bench_cluster.py \\
        [--rows 100000] [--instances 4] [--slots 4] [--tasks 48] [--task-rows 20000]
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actors.core.ops.load_check import quantile  # noqa: E402
from deploy.bench.bench_workers import API, Service, client  # noqa: E402
from tests.s3_helpers import (  # noqa: E402
    S3_TEST_KEY,
    S3_TEST_SECRET,
    S3_TEST_URL,
    drop_bucket,
    new_bucket,
)

MARIADB = ("127.0.0.1", "3307", "export_center", "export_center")
STATUS = (
    "Questions",
    "Com_select",
    "Com_insert",
    "Com_update",
    "Com_delete",
    "Com_commit",
    "Handler_write",
    "Handler_update",
    "Handler_delete",
)
PART_MB = 8


def mariadb_status() -> dict[str, int]:
    """MariaDB's global counters of :data:`STATUS`."""
    host, port, user, password = MARIADB
    names = ",".join(f"'{n}'" for n in STATUS)
    out = subprocess.run(
        ["mariadb", "-h", host, "-P", port, "-u", user, f"-p{password}", "-N", "-e",
         f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return {line.split()[0]: int(line.split()[1]) for line in out.splitlines()}


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in STATUS}


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


async def create(url: str, user: int, rows: int) -> str:
    async with client(url, user) as c:
        body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": rows}}
        answer = (await c.post(API, json=body)).json()
        assert answer["code"] == "200", answer
        return str(answer["data"]["id"])


async def wait_all(created: list[tuple[str, int, str]], timeout: float) -> list[dict[str, Any]]:
    """Wait until every ``(url, user, task id)`` has ended; the tasks' JSON. A task is
    seen by the user who created it."""
    clients: dict[tuple[str, int], Any] = {}
    try:
        with trio.fail_after(timeout):
            while True:
                tasks = []
                for url, user, tid in created:
                    c = clients.get((url, user)) or clients.setdefault(
                        (url, user), client(url, user)
                    )
                    tasks.append((await c.get(f"{API}/{tid}")).json()["data"])
                if all(t["status"] in ("SUCCEEDED", "FAILED") for t in tasks):
                    failed = [t for t in tasks if t["status"] == "FAILED"]
                    assert not failed, failed[0].get("failureMessage")
                    return tasks
                await trio.sleep(0.25)
    finally:
        for c in clients.values():
            await c.aclose()


def cpu(service: Service) -> float:
    own, children = service.cpu_seconds()
    return own + children


def instance_env(database: str, bucket: str, slots: int) -> dict[str, str]:
    return {
        "FILE_EXPORT_DATABASE_URL": database,
        "FILE_EXPORT_TRANSPORT": "rocketmq",
        "MQ_TOPIC_PREFIX": "test-",
        "ROCKETMQ_NAME_SERVER": "127.0.0.1:9876",
        "FILE_EXPORT_RECONCILER_ENABLED": "true",
        "FILE_EXPORT_PUBLISHER_ENABLED": "true",
        "FILE_EXPORT_CONSUMER_ENABLED": "true",
        "FILE_EXPORT_CONSUMER_CONCURRENCY": str(slots),
        "FILE_EXPORT_MAX_ACTIVE_TASKS_PER_USER": "1000",
        "FILE_EXPORT_MAX_ACTIVE_TASKS_PER_TYPE": "1000",
        "FILE_EXPORT_STORAGE": "s3",
        "FILE_EXPORT_S3_ENDPOINT": S3_TEST_URL,
        "FILE_EXPORT_S3_BUCKET": bucket,
        "FILE_EXPORT_S3_ACCESS_KEY_ID": S3_TEST_KEY,
        "FILE_EXPORT_S3_SECRET_ACCESS_KEY": S3_TEST_SECRET,
        "FILE_EXPORT_S3_PART_SIZE_MB": str(PART_MB),
        "FILE_EXPORT_WORKER_NICE": "0",
    }


async def one_export_cost(tmp: Path, env: dict[str, str], rows: int, idle_seconds: float) -> None:
    (tmp / "cost").mkdir()
    service = Service(tmp / "cost", None, env=env)
    try:
        url = await service.ready()
        await wait_all([(url, 1, await create(url, 1, 1000))], 60)  # warm: connections, spare
        idle_before, idle_t0 = mariadb_status(), time.monotonic()
        await trio.sleep(idle_seconds)
        idle = delta(mariadb_status(), idle_before)
        idle_seconds = time.monotonic() - idle_t0
        before, cpu_before, t0 = mariadb_status(), cpu(service), time.monotonic()
        [task] = await wait_all([(url, 2, await create(url, 2, rows))], 600)
        seconds = time.monotonic() - t0
        used = delta(mariadb_status(), before)
        cpu_used = cpu(service) - cpu_before
    finally:
        service.stop()
    size = int(task["sizeBytes"])
    part = PART_MB * 1024 * 1024
    parts = math.ceil(size / part)
    requests = 1 if parts <= 1 else parts + 2
    net = {k: used[k] - idle[k] * seconds / idle_seconds for k in STATUS}
    print(f"\n## One export of {rows:,} rows (one instance, {seconds:.1f} s)\n")
    print("| figure | this export | idle instance, same time |\n|---|---|---|")
    for k in STATUS:
        print(f"| {k} | {net[k]:,.0f} | {idle[k] * seconds / idle_seconds:,.0f} |")
    print(f"| object-store requests | {requests} ({parts} parts of {PART_MB} MiB) | 0 |")
    print(f"| bytes stored | {size:,} | |")
    print(f"| CPU seconds, service + export worker | {cpu_used:.2f} | |")
    print(f"| rows per CPU-second | {rows / cpu_used:,.0f} | |")


async def cluster(
    tmp: Path, env: dict[str, str], instances: int, tasks: int, rows: int, paced: float
) -> None:
    for i in range(instances):
        (tmp / f"host-{i}").mkdir()
    services = [Service(tmp / f"host-{i}", None, env=env) for i in range(instances)]
    try:
        urls = [await s.ready() for s in services]
        await wait_all(
            [(u, 100 + i, await create(u, 100 + i, 1000 + i)) for i, u in enumerate(urls)], 60
        )
        # 1. saturation: every task created at once, spread over the instances' APIs
        before, t0 = mariadb_status(), time.monotonic()
        created = []
        for n in range(tasks):
            url = urls[n % instances]
            created.append((url, 1000 + n, await create(url, 1000 + n, rows + n)))
        done = await wait_all(created, 900)
        seconds = time.monotonic() - t0
        used = delta(mariadb_status(), before)
        starts = [parse_time(t["startedAt"]) for t in done]
        ends = [parse_time(t["completedAt"]) for t in done]
        span = (max(ends) - min(starts)).total_seconds()
        waits = [
            (parse_time(t["startedAt"]) - parse_time(t["requestedAt"])).total_seconds()
            for t in done
        ]
        per_minute = len(done) / span * 60
        print(
            f"\n## Cluster: {instances} instances x {env['FILE_EXPORT_CONSUMER_CONCURRENCY']} "
            f"slots, {tasks} exports of ~{rows:,} rows created at once\n"
        )
        print(f"- sustained: {per_minute:.1f} tasks/min ({len(done)} in {span:.1f} s)")
        print(f"- MariaDB: {used['Questions'] / seconds:,.0f} queries/s "
              f"({used['Com_commit'] / seconds:,.1f} commits/s, "
              f"{(used['Handler_write'] + used['Handler_update']) / seconds:,.0f} "
              f"rows written/s)")  # fmt: skip
        print(f"- create->RUNNING with the queue: p50 {quantile(waits, 0.5):.2f} s, "
              f"p95 {quantile(waits, 0.95):.2f} s")  # fmt: skip
        # 2. paced below capacity: the dispatch path's latency, nothing queued
        interval = 120 / per_minute  # half the sustained rate
        paced_ids = []
        deadline = time.monotonic() + paced
        n = 0
        while time.monotonic() < deadline:
            url = urls[n % instances]
            paced_ids.append((url, 5000 + n, await create(url, 5000 + n, rows + 10_000 + n)))
            n += 1
            await trio.sleep(interval)
        waits = [
            (parse_time(t["startedAt"]) - parse_time(t["requestedAt"])).total_seconds()
            for t in await wait_all(paced_ids, 600)
        ]
        print(f"- paced at {60 / interval:.1f} tasks/min for {paced:.0f} s ({len(waits)} "
              f"exports): create->RUNNING p50 {quantile(waits, 0.5) * 1000:.0f} ms, "
              f"p95 {quantile(waits, 0.95) * 1000:.0f} ms")  # fmt: skip
    finally:
        for s in services:
            s.stop()


async def main(args: argparse.Namespace) -> None:
    database = (
        f"mysql://{MARIADB[2]}:{MARIADB[3]}@{MARIADB[0]}:{MARIADB[1]}/"
        f"export_center_cluster_{uuid.uuid4().hex[:8]}"
    )
    bucket = new_bucket()
    env = instance_env(database, bucket, args.slots)
    subprocess.run(
        [sys.executable, "-c", "from actors.cli.main import main; main(['migrate'])"],
        env={**os.environ, "FILE_EXPORT_DATABASE_URL": database},
        check=True,
        capture_output=True,
    )
    try:
        with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
            await one_export_cost(Path(tmp), env, args.rows, args.idle_seconds)
            await cluster(Path(tmp), env, args.instances, args.tasks, args.task_rows, args.paced)
    finally:
        drop_bucket(bucket)
        host, port, user, password = MARIADB
        name = database.rsplit("/", 1)[1]
        subprocess.run(
            ["mariadb", "-h", host, "-P", port, "-u", user, f"-p{password}", "-e",
             f"DROP DATABASE IF EXISTS {name}"],
            check=False, capture_output=True,
        )  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--instances", type=int, default=4)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--tasks", type=int, default=48)
    parser.add_argument("--task-rows", type=int, default=20_000)
    parser.add_argument("--paced", type=float, default=60.0)
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    args = parser.parse_args()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    trio.run(main, args)
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
