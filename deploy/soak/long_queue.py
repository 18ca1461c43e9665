"""Soak: a long queue on two instances with few slots, and how many commands it costs.

Two ``export-center serve`` processes (``--slots`` consumer slots each, the in-process bus
each) share a throwaway MariaDB (``tests/own_mariadb.py``) and one storage directory.
``--tasks`` exports of ``--rows`` rows are created at once by ``--users`` requesters, far
more than the slots run at a time, with a short re-send interval
(``FILE_EXPORT_SENT_STALE_SECONDS``, ``--stale``): a task waits many intervals before a
slot takes it. With one requester, fair share keeps one slot of each instance for someone
else (``FILE_EXPORT_CONSUMER_RESERVED_SLOTS``): that slot takes the queued commands one by
one and acks each as ``deferred_fair_share``. ``--storage-down`` gives the second instance
a storage whose probe fails, so its slots take every command it is given and ack it as
``storage_unavailable``, while the first instance runs the exports.

A queued command is not a lost one: the task is pulled from the database as soon as a
slot may run it (§8.1), and the reconciler re-sends only a command that no slot has seen
(§8.5-1). At the end it prints, besides the checks:

* sends per task: every send of every command (the outbox rows' ``attempt_count``: the
  first send and every re-send) over the tasks;
* the reconciler's re-sends (``export_reconciler_action_total{action="redispatch"}``) and
  the commands acked without a claim, by reason (``export_consumer_no_claim_total``), of
  both instances;
* checks: every task SUCCEEDED, once (one file each), and none stuck.

``--code DIR`` runs the service from another checkout (``git archive COMMIT | tar -x -C
DIR``) with this soak, to print the same figures before and after a change. Figures only,
not part of the tests.

Usage::

    .venv/bin/python deploy/soak/long_queue.py [--tasks 300] [--users 1] [--slots 2]
        [--rows 2000] [--stale 5] [--storage-down] [--code DIR] [--timeout 1200] [--keep]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from deploy.soak.cluster import (  # noqa: E402
    ROOT,
    SENDS_PER_TASK_SQL,
    Instance,
    create_exports,
    migrate,
    soak_world,
    verdict,
)
from tests.own_mariadb import OwnMariaDB  # noqa: E402
from web.demo_provider.data import demo_registry_yaml  # noqa: E402

SECRET = "soak-long-queue-secret-" + "s" * 32
DATABASE = "export_center_soak"
METRIC = re.compile(r'^(export_\w+_total)\{(\w+)="([^"]*)"\} ([0-9.e+]+)$', re.MULTILINE)


def service_env(args: argparse.Namespace) -> dict[str, str]:
    return {
        "FILE_EXPORT_JWT_SECRET": SECRET,
        "FILE_EXPORT_HTTP_BIND": "127.0.0.1:0",
        "FILE_EXPORT_RECONCILER_POLL_MS": "1000",
        "FILE_EXPORT_PUBLISHER_POLL_MS": "200",
        "FILE_EXPORT_SENT_STALE_SECONDS": str(args.stale),
        "FILE_EXPORT_REDISPATCH_GRACE_SECONDS": "1",
        "FILE_EXPORT_MAX_ACTIVE_TASKS_PER_USER": "10000",
        "FILE_EXPORT_MAX_ACTIVE_TASKS_PER_TYPE": "10000",
        "FILE_EXPORT_CONSUMER_CONCURRENCY": str(args.slots),
        "FILE_EXPORT_SHUTDOWN_GRACE_SECONDS": "1",
    }


async def counters(url: str) -> Counter[tuple[str, str]]:
    """The labelled ``export_…`` counters of one instance's ``/metrics``."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as c:
        text = (await c.get("/metrics")).text
    return Counter({(name, label): float(value) for name, _, label, value in METRIC.findall(text)})


async def soak(args: argparse.Namespace) -> int:
    code = Path(args.code).resolve() if args.code else ROOT
    with soak_world(DATABASE, demo_registry_yaml(batch_size=500), args.keep) as world:
        env = {**service_env(args), **world.env}
        failed = await migrate(env, world.work, code)
        if failed:
            print(failed, file=sys.stderr)
            return 2
        second = dict(env)
        if args.storage_down:
            # A file where the probe makes its folder: every probe fails, nothing else.
            broken = world.work / "broken-files"
            broken.mkdir()
            (broken / ".probe").write_text("not a folder")
            second["FILE_EXPORT_STORAGE_DIR"] = str(broken)
        world.instances += [
            Instance("soak-a", world.work, env, code),
            Instance("soak-b", world.work, second, code),
        ]
        for inst in world.instances:
            await inst.start()
        return await run(args, world.db, world.instances)


async def run(args: argparse.Namespace, db: OwnMariaDB, instances: list[Instance]) -> int:
    started = time.monotonic()
    created = await create_exports(
        instances, SECRET, args.tasks, rows=lambda i: args.rows, user=lambda i: 100 + i % args.users
    )
    if created is None:
        return 2
    ids = created

    async def terminal() -> int:
        rows = await db.rows(
            f"SELECT COUNT(*) FROM {DATABASE}.file_export_task "
            "WHERE status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')"
        )
        return int(rows[0][0]) if rows else 0

    with trio.move_on_after(args.timeout):
        while await terminal() < len(ids):
            await trio.sleep(1)
    elapsed = time.monotonic() - started
    # the queue is empty: let the slots take the commands left in the buses (no-claims)
    await trio.sleep(2 * args.stale)

    seen: Counter[tuple[str, str]] = Counter()
    for inst in instances:
        seen.update(await counters(inst.url))
    rows = await db.rows(f"SELECT id, status, object_key FROM {DATABASE}.file_export_task")
    statuses = Counter(r[1] for r in rows)
    not_done = [r[0] for r in rows if r[1] != "SUCCEEDED"]
    [[sends, commanded]] = await db.rows(SENDS_PER_TASK_SQL.format(db=DATABASE))
    per_task = await db.rows(
        f"SELECT SUM(attempt_count) FROM {DATABASE}.file_export_outbox GROUP BY task_id"
    )
    most = max((int(r[0]) for r in per_task), default=0)
    files = list((Path(instances[0].env["FILE_EXPORT_STORAGE_DIR"]) / "exports").glob("*/*"))
    duplicated = [t for t, n in Counter(f.parent.name for f in files).items() if n > 1]
    no_claims = {label: int(v) for (name, label), v in seen.items() if "no_claim" in name and v}
    resent = int(seen[("export_reconciler_action_total", "redispatch")])

    print(
        f"\n== long queue: {len(ids)} tasks of {args.rows} rows by {args.users} requester(s) "
        f"on 2 instances × {args.slots} slots, re-send interval {args.stale} s"
        f"{', storage of soak-b down' if args.storage_down else ''}; {elapsed:.0f} s"
    )
    print(f"code: {'this checkout' if not args.code else args.code}")
    print(f"statuses {dict(statuses)}")
    print(
        f"sends per task: {int(sends) / len(ids):.2f} ({sends} sends for {len(ids)} tasks, "
        f"{commanded} with a command; at most {most} for one task)"
    )
    print(f"re-sends by the reconciler: {resent}; acked without a claim: {no_claims}")
    checks = {"not succeeded": len(not_done), "duplicated": len(duplicated)}
    return verdict(checks, instances, args.keep)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", type=int, default=300)
    p.add_argument("--users", type=int, default=1, help="requesters, round robin")
    p.add_argument("--slots", type=int, default=2, help="consumer slots per instance")
    p.add_argument("--rows", type=int, default=2000, help="rows per export")
    p.add_argument("--stale", type=float, default=5, help="FILE_EXPORT_SENT_STALE_SECONDS")
    p.add_argument(
        "--storage-down", action="store_true", help="the second instance's storage fails"
    )
    p.add_argument("--code", help="the checkout the service runs (default: this one)")
    p.add_argument("--timeout", type=float, default=1200, help="give up after, seconds")
    p.add_argument("--keep", action="store_true", help="keep the logs and files")
    sys.exit(trio.run(soak, p.parse_args()))


if __name__ == "__main__":
    main()
