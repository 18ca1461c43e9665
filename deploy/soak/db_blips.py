"""Soak: many exports on two instances while their database connections keep dying.

Two ``export-center serve`` processes share one MariaDB and one storage directory. While
``--tasks`` exports (default 200) run, an admin connection kills a random one of the
service's MariaDB connections every ``--kill-min``..``--kill-max`` seconds, and each
instance is SIGKILLed once (at about 30 % and 60 % of the tasks done) and started again.
At the end it checks, and prints:

* lost: tasks that did not end SUCCEEDED (must be 0);
* duplicated: tasks with more than one file in storage, or more than one SUCCEEDED run in
  the logs (must be 0);
* stuck: tasks not terminal when the soak gives up (must be 0);
* orphan files: files in storage that no SUCCEEDED task references (must be 0);
* reconciler crashes: reconciler restarts or duty failures with a traceback (must be 0);
* and how long the database blips lasted, as the services measured them, and the commands
  sent per task (lease recoveries and hand-backs write new ones; re-sends count too).

By default it starts its own throwaway MariaDB (``tests/own_mariadb.py``:
``deploy/mariadb/server.sh`` on a free port, in a temporary directory) and stops it at the
end; it never touches a shared server. Exit status 0 only if every check passes. Figures
only, not part of the tests.

Usage::

    .venv/bin/python deploy/soak/db_blips.py [--tasks 200] [--rows-min 1000]
        [--rows-max 6000] [--kill-min 0.3] [--kill-max 1.5] [--timeout 1200] [--keep]
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from deploy.soak.cluster import (  # noqa: E402
    SENDS_PER_TASK_SQL,
    Instance,
    create_exports,
    migrate,
    soak_world,
    verdict,
)
from tests.own_mariadb import OwnMariaDB  # noqa: E402
from web.demo_provider.data import demo_registry_yaml  # noqa: E402

SECRET = "soak-db-blips-secret-" + "s" * 32
DATABASE = "export_center_soak"
REGISTRY = demo_registry_yaml(batch_size=100, max_attempts=5)
SERVICE_ENV = {
    "FILE_EXPORT_JWT_SECRET": SECRET,
    "FILE_EXPORT_HTTP_BIND": "127.0.0.1:0",
    "FILE_EXPORT_TASK_LEASE_SECONDS": "10",
    "FILE_EXPORT_TASK_HEARTBEAT_SECONDS": "2",
    "FILE_EXPORT_RECONCILER_POLL_MS": "1000",
    "FILE_EXPORT_PUBLISHER_POLL_MS": "200",
    "FILE_EXPORT_SENT_STALE_SECONDS": "5",
    "FILE_EXPORT_REDISPATCH_GRACE_SECONDS": "1",
    "FILE_EXPORT_MAX_ACTIVE_TASKS_PER_USER": "1000",
    "FILE_EXPORT_MAX_ACTIVE_TASKS_PER_TYPE": "1000",
    "FILE_EXPORT_CONSUMER_CONCURRENCY": "3",
    "FILE_EXPORT_SHUTDOWN_GRACE_SECONDS": "1",
}


async def soak(args: argparse.Namespace) -> int:
    with soak_world(DATABASE, REGISTRY, args.keep) as world:
        env = {**SERVICE_ENV, **world.env}
        failed = await migrate(env, world.work)
        if failed:
            print(failed, file=sys.stderr)
            return 2
        world.instances += [Instance(n, world.work, env) for n in ("soak-a", "soak-b")]
        for inst in world.instances:
            await inst.start()
        return await run(args, world.db, world.work, world.instances)


async def run(
    args: argparse.Namespace, db: OwnMariaDB, work: Path, instances: list[Instance]
) -> int:
    rng = random.Random(args.seed)
    started = time.monotonic()
    created = await create_exports(
        instances,
        SECRET,
        args.tasks,
        rows=lambda i: rng.randint(args.rows_min, args.rows_max),
        user=lambda i: 100 + i % 20,
    )
    if created is None:
        return 2
    ids = created

    kills = 0
    sigkills: list[str] = []
    done = trio.Event()

    async def terminal_count() -> int:
        rows = await db.rows(
            f"SELECT COUNT(*) FROM {DATABASE}.file_export_task "
            "WHERE status IN ('SUCCEEDED', 'FAILED')"
        )
        return int(rows[0][0]) if rows else 0

    async def kill_connections() -> None:
        nonlocal kills
        while not done.is_set():
            await trio.sleep(rng.uniform(args.kill_min, args.kill_max))
            victims = await db.service_connections()
            if victims:
                await db.kill(rng.choice(victims))
                kills += 1

    async def sigkill_instances() -> None:
        for inst, fraction in zip(instances, (0.3, 0.6), strict=True):
            while await terminal_count() < fraction * len(ids):
                await trio.sleep(0.5)
            inst.sigkill()
            sigkills.append(f"{inst.name} at {fraction:.0%}")
            print(f"SIGKILLed {inst.name} with {await terminal_count()} tasks terminal")
            await trio.sleep(3)
            await inst.start()
            print(f"restarted {inst.name}")

    stuck: list[list[str]] = []
    with trio.move_on_after(args.timeout):
        async with trio.open_nursery() as n:
            n.start_soon(kill_connections)
            n.start_soon(sigkill_instances)
            while await terminal_count() < len(ids) or len(sigkills) < 2:
                await trio.sleep(1)
            done.set()
            n.cancel_scope.cancel()
    elapsed = time.monotonic() - started
    # let the reconcilers finish deleting the files of recovered runs
    await trio.sleep(3)

    rows = await db.rows(
        f"SELECT id, status, object_key, attempt_count, dispatch_version FROM "
        f"{DATABASE}.file_export_task"
    )
    tasks = {int(r[0]): r for r in rows}
    statuses = Counter(r[1] for r in tasks.values())
    lost = [t for t in ids if tasks.get(t, [None, "MISSING"])[1] != "SUCCEEDED"]
    stuck = [r for r in tasks.values() if r[1] in ("PENDING", "RUNNING")]
    storage = work / "shared-files" / "exports"
    files = sorted(p.relative_to(storage.parent).as_posix() for p in storage.glob("*/*"))
    referenced = {r[2] for r in tasks.values() if r[1] == "SUCCEEDED"}
    orphans = [f for f in files if f not in referenced]
    per_task = Counter(f.split("/")[1] for f in files)
    logs = "".join(inst.log_text() for inst in instances)
    succeeded_runs = Counter(re.findall(r"task (\d+) v\d+ SUCCEEDED", logs))
    duplicated = [t for t in ids if per_task.get(str(t), 0) > 1 or succeeded_runs[str(t)] > 1]
    reconciler_crashes = len(re.findall(r"actor reconciler crashed", logs)) + len(
        re.findall(r"reconciler \w+ failed this pass", logs)
    )
    restarts = Counter(re.findall(r"actor (\S+) crashed; restarting", logs))
    duty_skips = Counter(re.findall(r"reconciler (\w+) skipped this pass", logs))
    blips = sorted(float(x) for x in re.findall(r"database reachable again after ([\d.]+)s", logs))
    attempts = Counter(int(r[3]) for r in tasks.values())
    versions = Counter(int(r[4]) for r in tasks.values())
    [[sends, _]] = await db.rows(SENDS_PER_TASK_SQL.format(db=DATABASE))

    print(f"\n== soak: {len(ids)} tasks on 2 instances, {elapsed:.0f} s")
    print(
        f"statuses {dict(statuses)}; attempts {dict(sorted(attempts.items()))}; "
        f"dispatch versions {dict(sorted(versions.items()))}"
    )
    print(f"commands sent: {sends}, {int(sends) / max(1, len(ids)):.2f} per task")
    print(f"chaos: {kills} connections killed; SIGKILLs: {', '.join(sigkills) or 'none'}")
    if blips:
        print(
            f"blips seen by the services: {len(blips)}; median {statistics.median(blips):.3f} s, "
            f"p95 {blips[int(0.95 * (len(blips) - 1))]:.3f} s, max {blips[-1]:.3f} s"
        )
    print(f"reconciler duties skipped on a database fault: {dict(duty_skips)}")
    print(f"actor restarts: {dict(restarts)}; tracebacks in logs: {logs.count('Traceback')}")
    checks = {
        "lost": len(lost),
        "duplicated": len(duplicated),
        "stuck": len(stuck),
        "orphan files": len(orphans),
        "reconciler crashes": reconciler_crashes,
    }
    bad = (("lost", lost), ("duplicated", duplicated), ("orphans", orphans))
    details = [f"{name}: {found[:10]}" for name, found in bad if found]
    return verdict(checks, instances, args.keep, details)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", type=int, default=200)
    p.add_argument("--rows-min", type=int, default=1000)
    p.add_argument("--rows-max", type=int, default=6000)
    p.add_argument("--kill-min", type=float, default=0.3, help="seconds between kills, min")
    p.add_argument("--kill-max", type=float, default=1.5, help="seconds between kills, max")
    p.add_argument("--timeout", type=float, default=1200, help="give up after, seconds")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--keep", action="store_true", help="keep the logs and files")
    sys.exit(trio.run(soak, p.parse_args()))


if __name__ == "__main__":
    main()
