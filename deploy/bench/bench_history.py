"""Benchmark: do the service's queries stay flat as finished tasks pile up? (issue 9 item 4)

Figures, no pass/fail. For each database (SQLite file, MariaDB) and each history size
(default 1,000 and 1,000,000 finished tasks), it builds a fresh database with the real
schema, bulk-loads the history, and times with the real store and reconciler:

* one reconciler pass (``Reconciler.reconcile_once``) and each of its duties;
* a create (``ExportStore.create_task``);
* list pages: a user's first page, the same filtered by status, a page deep in a
  user's history, an administrator's first page (all users of the tenant), the
  administrator's page of two finished statuses, and of one user's last hour.

The history is what a service in steady state holds: finished tasks (60 % SUCCEEDED
with files still kept, 30 % EXPIRED, 10 % FAILED) requested over the last 6 days by
1,000 users of one tenant, each with the SENT outbox row of its command (the pruning
keeps 7 days). On top of it, the same small live set in every run: the measured user's
60 tasks, 3 RUNNING tasks with live leases, 3 PENDING tasks in a backoff window. So every
run does the same work; only the history differs.

SQLite gets no ``ANALYZE`` (a service database never runs one); MariaDB gets
``ANALYZE TABLE`` after the bulk load, which InnoDB's automatic statistics would do by
themselves a moment later. Each figure is the median and the best of ``--repeat`` runs
after one warm-up, in milliseconds: two tables. On a shared machine the median carries
the neighbours' load; the best is the cost of the work itself. The MariaDB database
(``export_center_bench_<pid>`` on 127.0.0.1:3307, or ``--mysql-url``) is dropped at the
end.

Usage::

    .venv/bin/python deploy/bench/bench_history.py                   # both sizes, both DBs
    .venv/bin/python deploy/bench/bench_history.py --sizes 1000,100000 --db sqlite
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import trio
import trio_asyncio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actors.composition.database import open_database  # noqa: E402
from actors.core.admission import CreateLimits  # noqa: E402
from actors.core.limits import normalise_parameters  # noqa: E402
from actors.core.outcomes import NewTask  # noqa: E402
from actors.core.principal import DOWNLOAD_ALL_PERMISSION, AppCode, Principal  # noqa: E402
from actors.core.task_list import TaskFilter  # noqa: E402
from actors.plumbing.config_loading import load_settings  # noqa: E402
from actors.plumbing.metrics import Metrics  # noqa: E402
from actors.storage.local import LocalDirectoryStorage  # noqa: E402
from actors.supervised.reconciler import OUTBOX_RETENTION_SECONDS, Reconciler  # noqa: E402
from db.database import Database  # noqa: E402
from db.ids import IdGenerator  # noqa: E402
from db.mysql import MysqlDatabase  # noqa: E402
from db.sqlite import wall_clock_ms  # noqa: E402
from db.store import ExportStore  # noqa: E402
from tests.history import load_history  # noqa: E402

DEFAULT_MYSQL_URL = "mysql://export_center:export_center@127.0.0.1:3307/export_center_bench"
TOPIC = "bench-file-export-command-v1"
BENCH_USER = 1
BENCH_USER_TASKS = 60


def principal(user: int, *, admin: bool = False) -> Principal:
    perms = {"platform:customer:export"} | ({DOWNLOAD_ALL_PERMISSION} if admin else set())
    return Principal(user, 0, AppCode.PLATFORM, frozenset(perms))


def new_task(user: int, i: int) -> NewTask:
    return NewTask(
        "CUSTOMER_LIST",
        "Customers",
        "XLSX",
        normalise_parameters({"rowCount": 10, "i": i}),
        principal(user),
        3,
    )


_NO_LIMITS = CreateLimits(
    max_active_per_user=10**6, max_active_per_type=10**6, type_reserved_places=0
)


async def load_live_set(store: ExportStore) -> None:
    """The same small live set in every run (see module)."""
    db = store.db
    for i in range(BENCH_USER_TASKS):
        result = await store.create_task(new_task(BENCH_USER, i), _NO_LIMITS)
        assert result.task is not None
        t = await store.claim_task(result.task.id, 1, "bench-owner", 600, 3600)
        assert t.task is not None
        for row in await store.claim_due_outbox("bench-pub", 10, 100):
            await store.mark_outbox_sent(row.id, "bench-pub")
        await store.complete_task(
            t.task,
            "bench-owner",
            file_name="c.xlsx",
            object_key=f"exports/{t.task.id}/1/c.xlsx",
            content_type="x",
            size_bytes=1,
            rows=1,
            retention_seconds=86400,
        )
    for i in range(6):
        result = await store.create_task(new_task(2 + i, i), _NO_LIMITS)
        assert result.task is not None
        if i < 3:
            await store.claim_task(result.task.id, 1, "bench-owner", 3600, 7200)
    async with db.transaction() as tx:
        # PENDING tasks wait in a backoff window, their outbox rows too (nothing is due).
        await tx.execute(
            db.dialect.render(
                "UPDATE file_export_task SET next_retry_at = {now+:s} WHERE status = 'PENDING'"
            ),
            {"s": 3600},
        )
        await tx.execute(
            db.dialect.render(
                "UPDATE file_export_outbox SET next_retry_at = {now+:s} WHERE status = 'PENDING'"
            ),
            {"s": 3600},
        )


Figures = dict[str, tuple[float, float]]


async def timed(fn: Callable[[], Awaitable[Any]], repeat: int) -> tuple[float, float]:
    """Median and best milliseconds of ``repeat`` runs after three warm-ups."""
    for _ in range(3):
        await fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples), min(samples)


async def measure(db: Database, tmp: Path, total: int, repeat: int) -> Figures:
    store = ExportStore(db, IdGenerator(wall_clock_ms), topic=TOPIC)
    started = time.perf_counter()
    await load_history(db, total, now_ms=wall_clock_ms())
    if db.dialect.name != "sqlite":
        async with db.transaction() as tx:
            for table in ("file_export_task", "file_export_outbox"):
                await tx.fetchall(f"ANALYZE TABLE {table}")
    await load_live_set(store)
    print(
        f"  {db.dialect.name}: loaded {total:,} finished tasks in "
        f"{time.perf_counter() - started:.1f} s",
        flush=True,
    )
    settings = load_settings(data_dir=tmp, database_url=f"sqlite:///{tmp}/unused.db")
    rec = Reconciler(store, LocalDirectoryStorage(tmp / "files"), settings, Metrics())
    retention = OUTBOX_RETENTION_SECONDS
    figures: Figures = {}
    figures["reconciler pass"] = await timed(rec.reconcile_once, repeat)
    duties: dict[str, Callable[[], Awaitable[Any]]] = {
        "  redispatch (A+B)": rec._redispatch,
        "  lease_recover": rec._recover_leases,
        "  outbox_release": store.release_expired_outbox_claims,
        "  expire": rec._expire_files,
        "  prune": lambda: store.prune_sent_outbox(retention),
        "  gauges (sampler)": store.sample_queues,
    }
    for name, fn in duties.items():
        figures[name] = await timed(fn, repeat)
    user = principal(BENCH_USER)
    hour_ago = await store.db_now() - timedelta(hours=1)
    admin = principal(BENCH_USER, admin=True)
    lists: dict[str, Callable[[], Awaitable[Any]]] = {
        "list: user, page 1": lambda: store.list_tasks(user, all_users=False, limit=20, offset=0),
        "list: user, SUCCEEDED": lambda: store.list_tasks(
            user, all_users=False, filters=TaskFilter(("SUCCEEDED",)), limit=20, offset=0
        ),
        "list: user, page 3": lambda: store.list_tasks(user, all_users=False, limit=20, offset=40),
        "list: admin, page 1": lambda: store.list_tasks(admin, all_users=True, limit=20, offset=0),
        "list: admin, RUNNING": lambda: store.list_tasks(
            admin, all_users=True, filters=TaskFilter(("RUNNING",)), limit=20, offset=0
        ),
        "list: admin, SUCCEEDED+FAILED": lambda: store.list_tasks(
            admin, all_users=True, filters=TaskFilter(("FAILED", "SUCCEEDED")), limit=20, offset=0
        ),
        "list: admin, one user, last hour": lambda: store.list_tasks(
            admin,
            all_users=True,
            filters=TaskFilter(requested_by=BENCH_USER, requested_from=hour_ago),
            limit=20,
            offset=0,
        ),
    }
    for name, fn in lists.items():
        figures[name] = await timed(fn, repeat)
    # One poll of a progress stream (web/progress.py) for the user and the administrator:
    # their live tasks and their 20 newest.
    polls: dict[str, Callable[[], Awaitable[Any]]] = {
        "progress poll: user": lambda: store.tasks_for_progress(
            user, all_users=False, newest=20, limit=500
        ),
        "progress poll: admin": lambda: store.tasks_for_progress(
            admin, all_users=True, newest=20, limit=500
        ),
    }
    for name, fn in polls.items():
        figures[name] = await timed(fn, repeat)
    counter = iter(range(10**6))

    async def create() -> None:
        i = next(counter)
        result = await store.create_task(new_task(100 + i % 50, 1000 + i), _NO_LIMITS)
        assert result.task is not None

    figures["create"] = await timed(create, repeat)
    return figures


async def run_db(kind: str, sizes: list[int], repeat: int, mysql_url: str) -> dict[int, Any]:
    results: dict[int, Any] = {}
    for total in sizes:
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp = Path(tmp_name)
            url = f"sqlite:///{tmp}/history.db" if kind == "sqlite" else mysql_url
            if kind == "sqlite":
                settings = load_settings(data_dir=tmp, database_url=url)
                async with open_database(settings) as db:
                    results[total] = await measure(db, tmp, total, repeat)
                continue
            async with trio_asyncio.open_loop() as loop:
                # No statement timeout: one INSERT of the load may take a minute.
                mdb = MysqlDatabase(url, loop, query_timeout=None)
                try:
                    await mdb.drop_database()
                    await mdb.migrate()
                    results[total] = await measure(mdb, tmp, total, repeat)
                finally:
                    await mdb.drop_database()
                    await mdb.aclose()
    return results


def print_table(results: dict[str, dict[int, Figures]], sizes: list[int], which: int) -> None:
    """One table: the median (``which`` 0) or the best (1) of each figure."""
    small, big = sizes[0], sizes[-1]
    head = f"{('median', 'best')[which] + ' ms':24}"
    for kind in results:
        head += f" | {kind + ' ' + f'{small:,}':>16} {f'{big:,}':>11} {'ratio':>7}"
    print(head)
    print("-" * len(head))
    names = list(next(iter(results.values()))[small])
    for name in names:
        line = f"{name:24}"
        for by_size in results.values():
            a, b = by_size[small][name][which], by_size[big][name][which]
            line += f" | {a:16.2f} {b:11.2f} {b / a if a else float('nan'):6.1f}x"
        print(line)


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


async def main(args: argparse.Namespace) -> None:
    started_load = load_average()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    results = {}
    for kind in args.db.split(","):
        print(f"{kind}:", flush=True)
        results[kind] = await run_db(kind, sizes, args.repeat, args.mysql_url)
    print()
    print_table(results, sizes, 0)
    print()
    print_table(results, sizes, 1)
    print(f"\nload average at the start: {started_load}, at the end: {load_average()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,1000000")
    parser.add_argument("--db", default="sqlite,mariadb")
    parser.add_argument("--repeat", type=int, default=25)
    parser.add_argument("--mysql-url", default=f"{DEFAULT_MYSQL_URL}_{os.getpid()}")
    logging.basicConfig(level=logging.WARNING)
    trio.run(main, parser.parse_args())
