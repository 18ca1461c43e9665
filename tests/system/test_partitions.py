"""Hosts apart (issue 35 items 1 and 2): three instances of the service, each on a host of
its own (a network namespace, tests/hosts/), sharing MariaDB, the RocketMQ broker and the
S3 server across their links; a steady stream of exports runs while a link is cut,
delayed or made lossy, then healed; the checker reads the database and the bucket and
every invariant must hold (tests/hosts/checker.py): every task terminal, at most one
SUCCEEDED run per task, exactly one object per SUCCEEDED task and none for any other, no
incomplete upload after recovery, no command sent for a finished task.

Each scenario prints a line of figures (tasks, time to recover, attempts) in the run's
"Figures" section. Needs root (namespaces, nftables), as the test command runs.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import httpx
import pytest
import trio

from db.store import ExportStore
from tests.helpers import API
from tests.hosts.checker import Report, check
from tests.hosts.cluster import Instance, Services, infrastructure, instance_env, instances, logs
from tests.hosts.netns import Network, hosts, sweep_stale
from tests.processes import process_client
from tests.s3_helpers import drop_bucket, new_bucket
from tests.servers import Broker

#: The sizes of the steady stream's exports, in turn (rows).
SIZES = (2_000, 10_000, 30_000)
#: Seconds between two exports of the stream.
EVERY = 1.0
#: The exports a scenario cuts in the middle of: large enough to be running for seconds.
BIG = 150_000
#: How long the cluster may take to settle once healed, seconds.
SETTLE = 180


@dataclass
class Cluster:
    """Three instances on three hosts, and what the checker reads."""

    network: Network
    services: Services
    hosts: dict[str, Instance]
    store: ExportStore
    bucket: str
    folder: Path
    created: list[str] = field(default_factory=list)

    async def create(self, rows: int, via: Instance) -> str:
        """An export of ``rows`` rows, created through ``via``'s API."""
        async with process_client(via.url) as client:
            answer = await client.post(
                API, json={"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": rows}}
            )
        body = answer.json()
        assert body["code"] == "200", body
        task_id = str(body["data"]["id"])
        self.created.append(task_id)
        return task_id

    async def row(self, task_id: str) -> dict:
        """The task's row, as the database has it now."""
        async with self.store.db.transaction() as tx:
            found = await tx.fetchone(
                self.store.db.dialect.render(
                    "SELECT id, status, lease_owner, dispatch_version, attempt_count"
                    " FROM file_export_task WHERE id = :id"
                ),
                {"id": int(task_id)},
            )
        assert found is not None, task_id
        return dict(found)

    async def events(self, task_id: str) -> list[dict]:
        """The task's history: kind, detail and when (database clock)."""
        async with self.store.db.transaction() as tx:
            rows = await tx.fetchall(
                self.store.db.dialect.render(
                    "SELECT kind, detail_json, created_at FROM file_export_task_event"
                    " WHERE task_id = :id ORDER BY id"
                ),
                {"id": int(task_id)},
            )
        return [
            {"kind": r["kind"], "detail": json.loads(r["detail_json"]), "at": r["created_at"]}
            for r in rows
        ]

    async def running_on(self, task_id: str) -> Instance:
        """The instance that runs the task, once it runs."""
        owners = {i.instance_id: i for i in self.hosts.values()}
        while True:
            row = await self.row(task_id)
            if row["status"] == "RUNNING" and row["lease_owner"] in owners:
                return owners[row["lease_owner"]]
            assert row["status"] == "PENDING", row
            await trio.sleep(0.05)

    async def settled(self) -> Report:
        """Wait until every invariant holds (the cluster had time to finish and clean
        up), or the time is up; the last report either way."""
        report = await check(self.store, self.bucket)
        with trio.move_on_after(SETTLE):
            while report.violations:
                await trio.sleep(0.5)
                report = await check(self.store, self.bucket)
        return report

    async def failure(self, report: Report) -> str:
        """A failed check's message: what broke, the history of the tasks it names, then
        the end of every instance's log."""
        lines = list(report.violations[:40])
        for task_id in sorted({m for v in report.violations for m in re.findall(r"\d{12,}", v)})[
            :5
        ]:
            lines.append(f"history of {task_id}:")
            lines += [f"  {e['at']} {e['kind']} {e['detail']}" for e in await self.events(task_id)]
        return "\n".join([*lines, *logs(self.folder)])


@pytest.fixture(scope="module", autouse=True)
def _no_stale_hosts() -> None:
    """Remove the namespaces and bridges of an earlier run that was killed mid-way."""
    sweep_stale()


@pytest.fixture
async def cluster(
    rocketmq_broker: Broker, mysql_store: ExportStore, tmp_path: Path
) -> AsyncIterator[Cluster]:
    bucket = await trio.to_thread.run_sync(new_bucket)
    services = Services()
    try:
        with hosts(["a", "b", "c"]) as network:
            async with infrastructure(network, services):
                env = instance_env(rocketmq_broker, bucket)
                async with instances(network, services, env, tmp_path) as running:
                    yield Cluster(network, services, running, mysql_store, bucket, tmp_path)
    finally:
        await trio.to_thread.run_sync(drop_bucket, bucket)


async def steady_stream(cluster: Cluster, stop: trio.Event) -> None:
    """Create an export every :data:`EVERY` seconds, sizes in turn, until ``stop``, through
    the instances whose links are whole (a request to one cut from the database would only
    wait: the stream's creates are not what a scenario tests)."""
    n = 0
    while not stop.is_set():
        reachable = [i for i in cluster.hosts.values() if not i.links.rules] or list(
            cluster.hosts.values()
        )
        try:
            await cluster.create(SIZES[n % len(SIZES)], reachable[n % len(reachable)])
        except httpx.HTTPError:
            pass  # an instance cut from the database answers slowly; the next one is tried
        n += 1
        with trio.move_on_after(EVERY):
            await stop.wait()


async def scenario(
    cluster: Cluster, figures: dict[str, str], name: str, fault: Callable[[], Awaitable[str]]
) -> None:
    """Run ``fault`` while a steady stream of exports runs, heal everything, then check
    the invariants; ``fault`` returns what to add to the figures (its time to recover)."""
    stop = trio.Event()
    started = time.monotonic()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(steady_stream, cluster, stop)
        try:
            said = await fault()
        finally:
            for instance in cluster.hosts.values():
                instance.links.heal()
                await instance.proxy.clear("mariadb")
            await trio.sleep(EVERY * 3)  # a few more exports after the heal
            stop.set()
    report = await cluster.settled()
    figures[f"partition: {name}"] = (
        f"{report.line()}; {said}; {time.monotonic() - started:.0f} s in all"
    )
    assert not report.violations, await cluster.failure(report)
    # (a create equal to one a moment before answers that task: ids repeat in the list)
    succeeded = report.statuses.get("SUCCEEDED", 0)
    assert succeeded == len(set(cluster.created)), await cluster.failure(report)


async def wait_for(what: str, probe: Callable[[], Awaitable[bool]], timeout: float = 120) -> float:
    """Wait for ``probe()``; return the seconds it took."""
    started = time.monotonic()
    with trio.fail_after(timeout):
        while not await probe():
            await trio.sleep(0.1)
    return time.monotonic() - started


def aborted_at(instance: Instance, task_id: str) -> datetime | None:
    """When ``instance`` aborted its run of ``task_id`` for want of a lease renewal."""
    for line in instance.log.read_text(errors="replace").splitlines():
        if task_id in line and "aborting the run" in line:
            return datetime.fromisoformat(json.loads(line)["timestamp"].replace("Z", "+00:00"))
    return None


async def cut_mid_export(
    cluster: Cluster, ports: tuple[int, ...], direction: str = "both"
) -> tuple[Instance, str, float]:
    """Start a big export, cut the instance that runs it on ``ports``; return it, the
    task and the seconds until another instance finished the task."""
    big = await cluster.create(BIG, cluster.hosts["a"])
    owner = await cluster.running_on(big)
    owner.links.cut(*ports, direction=direction)  # type: ignore[arg-type]

    async def finished_elsewhere() -> bool:
        row = await cluster.row(big)
        return row["status"] == "SUCCEEDED"

    recovered = await wait_for("another instance finished the task", finished_elsewhere)
    history = await cluster.events(big)
    claims = [e for e in history if e["kind"] == "claimed"]
    assert claims[-1]["detail"].get("instance") != owner.instance_id, claims
    return owner, big, recovered


async def test_an_instance_cut_from_the_database_mid_export_stops_and_another_finishes(
    cluster: Cluster, figures: dict[str, str]
) -> None:
    async def fault() -> str:
        owner, big, recovered = await cut_mid_export(cluster, (cluster.services.mariadb,))
        # It stopped writing before its lease could be taken over: its watchdog gave up
        # before another instance's reconciler recovered the lease.
        took_over = [e["at"] for e in await cluster.events(big) if e["kind"] == "lease_recovered"]
        stopped = aborted_at(owner, big)
        assert took_over and stopped is not None, logs(cluster.folder)
        assert stopped.replace(tzinfo=None) <= took_over[0], (stopped, took_over)
        return (
            f"the cut instance stopped, another finished its export {recovered:.1f} s after the cut"
        )

    await scenario(cluster, figures, "cut from the database mid-export", fault)


async def test_an_instance_cut_from_the_object_store_only_waits_and_recovers(
    cluster: Cluster, figures: dict[str, str]
) -> None:
    async def fault() -> str:
        a = cluster.hosts["a"]
        a.links.cut(cluster.services.s3)

        async def a_reports_storage_down() -> bool:
            async with process_client(a.url) as client:
                details = (await client.get("/healthz/details")).json()
            return bool(details["components"]["storage"]["status"] == "down")

        seen = await wait_for("a's probe sees the store down", a_reports_storage_down)
        await trio.sleep(10)  # the stream goes on meanwhile, on b and c
        return f"a saw the store down after {seen:.1f} s and claimed nothing until healed"

    await scenario(cluster, figures, "cut from the object store only", fault)


async def test_an_instance_cut_from_the_broker_only_runs_from_the_database(
    cluster: Cluster, figures: dict[str, str]
) -> None:
    async def fault() -> str:
        a = cluster.hosts["a"]
        a.links.cut(*cluster.services.broker)
        created = [await cluster.create(2_000, a) for _ in range(3)]

        async def done() -> bool:
            return all([(await cluster.row(t))["status"] == "SUCCEEDED" for t in created])

        took = await wait_for("exports created on a without its broker finished", done)
        return f"exports created on a, cut from the broker, finished in {took:.1f} s"

    await scenario(cluster, figures, "cut from the broker only", fault)


async def test_an_instance_cut_from_everything_and_healed_after_its_lease_expired_commits_nothing(
    cluster: Cluster, figures: dict[str, str]
) -> None:
    async def fault() -> str:
        owner, big, recovered = await cut_mid_export(cluster, cluster.services.all())
        # Healed only now, its lease long taken over: whatever it still held is fenced.
        owner.links.heal()
        await trio.sleep(5)  # its own reconnection and a heartbeat or two
        succeeded = [e for e in await cluster.events(big) if e["kind"] == "succeeded"]
        assert len(succeeded) == 1, succeeded
        return (
            f"taken over and finished {recovered:.1f} s after the cut;"
            " the healed owner committed nothing"
        )

    await scenario(cluster, figures, "cut from everything, healed after its lease expired", fault)


async def test_a_one_way_cut_to_the_database(cluster: Cluster, figures: dict[str, str]) -> None:
    async def fault() -> str:
        owner, _, recovered = await cut_mid_export(
            cluster, (cluster.services.mariadb,), direction="out"
        )
        return (
            "packets from the owner to the database dropped:"
            f" finished elsewhere {recovered:.1f} s after the cut"
        )

    await scenario(cluster, figures, "one-way cut to the database", fault)


async def test_a_slow_and_lossy_database_link_for_a_minute(
    cluster: Cluster, figures: dict[str, str]
) -> None:
    async def fault() -> str:
        a = cluster.hosts["a"]
        await a.proxy.add_latency("mariadb", 300)
        a.links.lose(5, cluster.services.mariadb)
        await trio.sleep(60)
        return "300 ms and 5 % loss on a's database link for 60 s"

    await scenario(cluster, figures, "300 ms delay, 5 % loss on a database link", fault)
