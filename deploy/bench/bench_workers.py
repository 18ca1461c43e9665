"""Benchmark of export CPU work vs API latency (issue 9 items 1 and 3): figures, no pass/fail.

Starts the embedded service (SQLite, in-process bus, four consumer slots) as its own
process in a temporary directory — ``python -m actors serve``, the one process that is
deployed — so the measuring client never shares an interpreter with the service. The demo
Provider runs in a third process (``export-center demo-provider``), as a Provider is another
service in production: its CPU is shown apart and not counted as the export service's.
It runs at the export workers' priority (``BENCH_PROVIDER_NICE``, default 10; on Linux the
``SCHED_IDLE`` policy too when ``BENCH_PROVIDER_SCHED_IDLE`` is true, default false as the
workers' ``FILE_EXPORT_WORKER_SCHED_IDLE``): on a shared
benchmark machine it then competes with the exports, not with the API, as it would not at
all on a host of its own. ``BENCH_PROVIDER=in-process`` serves it inside the service
instead, as the embedded defaults do; ``BENCH_PROVIDER=replay`` runs
``deploy/bench/replay_provider.py`` instead, which replays the demo Provider's answers at
almost no CPU (a Provider on other hosts: what the service itself does with the cores).
Before the measured scenarios one export runs unmeasured, so the first measured one does
not pay for the cold start (imports, first connections, the replay's cache). Then:

* throughput: aggregate rows/s of 1, 2 and 4 concurrent exports of ROWS rows each
  (rows of all exports / (last completedAt - first startedAt), DB clock; three rounds of
  1, 2, 4 alternated, each figure the median round's), and CPU seconds
  per wall second over the run of the service process and, apart, of the children it
  reaped — its export workers (from ``/proc``, Linux only), of the Provider process, and
  rows per CPU-second of the service (process + workers). Nothing else asks the service
  anything meanwhile: the latency probe below costs both the service and this client a
  fifth of a core, which the exports would otherwise share on a small machine;
* API latency: ``GET /api/platform/v1/files/export-tasks`` one request after another,
  p50/p95/p99 in ms, while idle, then during one export and during four concurrent
  exports run again for the purpose.

Each concurrent export is created by another user, so fair share never holds one back.

Usage::

    .venv/bin/python deploy/bench/bench_workers.py [ROWS]   # default 200000
    BENCH_SOURCE=/path/to/other/checkout .venv/bin/python deploy/bench/bench_workers.py
        # runs the service from another checkout of the code (e.g. before a change)
"""

from __future__ import annotations

import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actors.core.principal import AppCode  # noqa: E402
from web.auth import issue_token  # noqa: E402
from web.demo_provider.data import DEMO_SERVICE, demo_registry_yaml  # noqa: E402

API = "/api/platform/v1/files/export-tasks"
SECRET = "bench-workers-secret-" + "x" * 32
READY = re.compile(r"ready at (http://127\.0\.0\.1:\d+)")
#: The registry's ceiling for ``max-rows``; a larger ``max_rows`` lifts it for the bench only.
REGISTRY_MAX_ROWS = 500_000
#: Starts the service with the registry's ``max-rows`` ceiling raised to ``sys.argv[1]``:
#: only a benchmark exports more rows than a deployed registry may allow.
_LIFTED_CEILING = (
    "import runpy, sys; import actors.core.registry as r; "
    "r.MAX_ROWS_RANGE = (1, int(sys.argv.pop(1))); "
    "runpy.run_module('actors', run_name='__main__', alter_sys=True)"
)
#: Runs ``export-center demo-provider`` (``python -m actors`` only serves).
_PROVIDER = "import sys; from actors.cli.main import main; main(['demo-provider', *sys.argv[1:]])"
#: The replaying stand-in (``BENCH_PROVIDER=replay``).
_REPLAY = str(Path(__file__).resolve().with_name("replay_provider.py"))
#: How the Provider runs: ``demo`` (its own process), ``replay``, ``in-process``.
PROVIDERS = ("demo", "replay", "in-process")
PROVIDER_TOKEN = "bench-provider-token"
#: The Provider's niceness: the service's export workers' default (FILE_EXPORT_WORKER_NICE).
#: On its own host a Provider would not take CPU from the service's event loop; on a
#: shared benchmark machine it competes with the export workers instead, at their priority.
PROVIDER_NICE = int(os.environ.get("BENCH_PROVIDER_NICE", "10"))
#: The Provider under ``SCHED_IDLE`` as well, when the workers are
#: (FILE_EXPORT_WORKER_SCHED_IDLE, default false), so "at the workers' priority" holds whole.
#: (Two alternated runs each, with and without it, showed no difference in the API's p95
#: beyond this machine's run-to-run noise.)
PROVIDER_SCHED_IDLE = os.environ.get("BENCH_PROVIDER_SCHED_IDLE", "false") == "true"
_IDLE = (
    "import os; hasattr(os, 'SCHED_IDLE') and "
    "os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0)); "
)
#: Requests sampled while idle.
IDLE_SAMPLES = 300
#: Pause between two latency samples, seconds (keeps the client from becoming the load).
SAMPLE_PAUSE = 0.02


class Service:
    """``python -m actors serve`` in ``tmp``; from ``source`` when given.

    ``max_rows`` is the registry's ``max-rows`` for CUSTOMER_LIST; above the registry's
    ceiling (500,000) the service starts with that ceiling lifted (a benchmark-only
    override, used for the 1,000,000-row memory figure).
    """

    def __init__(
        self,
        tmp: Path,
        source: Path | None,
        max_rows: int = REGISTRY_MAX_ROWS,
        *,
        provider: str = "demo",
        env: dict[str, str] | None = None,
    ) -> None:
        if provider not in PROVIDERS:
            raise ValueError(f"provider must be one of {', '.join(PROVIDERS)}, not {provider!r}")
        registry = tmp / "registry.yaml"
        registry.write_text(demo_registry_yaml(max_rows=max_rows))
        self.provider: subprocess.Popen[bytes] | None = None
        self._provider_log = None
        provider_env: dict[str, str] = {}
        if provider != "in-process":
            # The Provider is another service on other machines in production: in a process
            # of its own, its CPU is not counted as the export service's.
            port = free_port()
            self.provider_log = tmp / "provider.log"
            self._provider_log = open(self.provider_log, "w")  # noqa: SIM115 - closed in stop()
            self.provider = subprocess.Popen(
                [
                    *("nice", "-n", str(PROVIDER_NICE)),
                    sys.executable,
                    "-c",
                    (_IDLE if PROVIDER_SCHED_IDLE else "")
                    + (
                        f"import runpy; runpy.run_path({_REPLAY!r}, run_name='__main__')"
                        if provider == "replay"
                        else _PROVIDER
                    ),
                    *("--bind", f"127.0.0.1:{port}"),
                ],
                cwd=source or None,
                env={**os.environ, "INTERNAL_SERVICE_TOKEN": PROVIDER_TOKEN},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._provider_log,
            )
            provider_env = {
                "FILE_EXPORT_PROVIDER_URLS": f'{{"{DEMO_SERVICE}": "http://127.0.0.1:{port}"}}',
                "INTERNAL_SERVICE_TOKEN": PROVIDER_TOKEN,
                "FILE_EXPORT_DEMO_PROVIDER": "false",
            }
        env = {
            **provider_env,
            **os.environ,
            "FILE_EXPORT_DATA_DIR": str(tmp / "data"),
            "FILE_EXPORT_HTTP_BIND": "127.0.0.1:0",
            "FILE_EXPORT_JWT_SECRET": SECRET,
            "FILE_EXPORT_REGISTRY": str(registry),
            "FILE_EXPORT_CONSUMER_CONCURRENCY": "4",
            "FILE_EXPORT_CONSUMER_RESERVED_SLOTS": "0",
            "FILE_EXPORT_TYPE_RESERVED_PLACES": "0",
            "FILE_EXPORT_MAX_ACTIVE_TASKS_PER_TYPE": "8",
            "FILE_EXPORT_PUBLISHER_POLL_MS": "200",
            "FILE_EXPORT_SHUTDOWN_GRACE_SECONDS": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            **(env or {}),  # a benchmark's own settings win
        }
        if source is not None:
            env["PYTHONPATH"] = str(source)
        self.log = tmp / "service.log"
        self._log = open(self.log, "w")  # noqa: SIM115 - closed in stop()
        command = [sys.executable, "-m", "actors"]
        if max_rows > REGISTRY_MAX_ROWS:
            command = [sys.executable, "-c", _LIFTED_CEILING, str(max_rows)]
        self.proc = subprocess.Popen(
            command,
            cwd=source or None,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
        )
        self.url = ""

    async def ready(self) -> str:
        with trio.fail_after(60):
            while self.provider is not None and "listening on" not in self.provider_log.read_text():
                assert self.provider.poll() is None, self.provider_log.read_text()
                await trio.sleep(0.05)
            while not (m := READY.search(self.log.read_text())):
                assert self.proc.poll() is None, self.log.read_text()
                await trio.sleep(0.05)
        self.url = m.group(1)
        return self.url

    def cpu_seconds(self) -> tuple[float, float]:
        """(utime + stime of the service process, of the children it has reaped), seconds."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = [int(f) for f in fields[11:15]]  # utime stime cutime cstime
        hz = os.sysconf("SC_CLK_TCK")
        return (ticks[0] + ticks[1]) / hz, (ticks[2] + ticks[3]) / hz

    def provider_cpu_seconds(self) -> float:
        """utime + stime of the Provider process, seconds (0 when it runs in the service)."""
        if self.provider is None:
            return 0.0
        fields = Path(f"/proc/{self.provider.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.provider is not None:
            self.provider.terminate()
            self.provider.wait(30)
            assert self._provider_log is not None
            self._provider_log.close()
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def client(url: str, user: int, limits: httpx.Limits | None = None) -> httpx.AsyncClient:
    token = issue_token(
        SECRET,
        user_id=user,
        tenant_id=0,
        app_code=AppCode.PLATFORM,
        perms=("platform:customer:export",),
    )
    return httpx.AsyncClient(
        base_url=url,
        timeout=60,
        limits=limits or httpx.Limits(),
        headers={"Authorization": f"Bearer {token}"},
    )


async def sample_latency(c: httpx.AsyncClient, until: trio.Event, limit: int | None) -> list[float]:
    """Time list requests one after another until ``until`` is set (or ``limit`` samples)."""
    samples: list[float] = []
    while not until.is_set() and (limit is None or len(samples) < limit):
        started = time.perf_counter()
        response = await c.get(API, params={"pageSize": 10})
        samples.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.text
        await trio.sleep(SAMPLE_PAUSE)
    return samples


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    """(p50, p95, p99) of ``samples`` (inclusive method; a single sample is all three)."""
    if len(samples) < 2:
        return samples[0], samples[0], samples[0]
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return cuts[49], cuts[94], cuts[98]


async def run_exports(url: str, count: int, rows: int, first_user: int) -> dict[str, Any]:
    """Create ``count`` exports (one per user) and wait for all; rows/s on the DB clock."""
    clients = [client(url, first_user + i) for i in range(count)]
    try:
        ids = []
        for i, c in enumerate(clients):
            body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": rows, "n": i}}
            created = (await c.post(API, json=body)).json()
            assert created["code"] == "200", created
            ids.append(created["data"]["id"])
        done = []
        with trio.fail_after(3600):
            for c, task_id in zip(clients, ids, strict=True):
                while True:
                    task = (await c.get(f"{API}/{task_id}")).json()["data"]
                    if task["status"] in ("SUCCEEDED", "FAILED", "CANCELLED"):
                        break
                    await trio.sleep(0.2)
                assert task["status"] == "SUCCEEDED", task
                done.append(task)
    finally:
        for c in clients:
            await c.aclose()
    start = min(datetime.fromisoformat(t["startedAt"]) for t in done)
    end = max(datetime.fromisoformat(t["completedAt"]) for t in done)
    seconds = (end - start).total_seconds()
    return {"seconds": seconds, "rows_per_s": count * rows / seconds, "rows": count * rows}


async def scenario(
    service: Service, count: int, rows: int, user: int, *, probe: bool = False
) -> dict[str, Any]:
    """``count`` concurrent exports; with ``probe``, the API's latency sampled alongside
    (``latency`` (p50, p95, p99) ms and ``samples`` in the result)."""
    stop = trio.Event()
    result: dict[str, Any] = {}
    (own0, children0), wall0 = service.cpu_seconds(), time.monotonic()
    provider0 = service.provider_cpu_seconds()

    async def exports() -> None:
        result.update(await run_exports(service.url, count, rows, user))
        stop.set()

    samples: list[float] = []
    async with trio.open_nursery() as n:
        n.start_soon(exports)
        if probe:
            async with client(service.url, 1) as prober:
                samples = await sample_latency(prober, stop, None)
    (own1, children1), wall = service.cpu_seconds(), time.monotonic() - wall0
    result["cpu_own"] = (own1 - own0) / wall
    result["cpu_children"] = (children1 - children0) / wall
    result["cpu_provider"] = (service.provider_cpu_seconds() - provider0) / wall
    result["service_cpu_s"] = own1 - own0 + children1 - children0
    if probe:
        result["latency"] = percentiles(samples)
        result["samples"] = len(samples)
    return result


async def measure(
    service: Service, rows: int, idle_samples: int, rounds: int = 3
) -> tuple[tuple[float, float, float], dict[int, dict[str, Any]]]:
    """Warm up with one unmeasured export; the idle latency; the throughput of 1, 2 and 4
    exports, ``rounds`` times alternated (the median round of each); the latency during 1
    and during 4 exports (run again, probed).

    Returns:
        (idle (p50, p95, p99) ms, the :func:`scenario` results by number of exports, the
        latency of the probed runs added to those of 1 and 4).
    """
    # The first export pays for imports, first connections and the replay Provider's
    # cache: measured, it would make one export look slower and the ratios better.
    await run_exports(service.url, 1, rows, 50)
    async with client(service.url, 1) as probe:
        await sample_latency(probe, trio.Event(), 20)  # warm up the request path
        idle = percentiles(await sample_latency(probe, trio.Event(), idle_samples))
    # Rounds of 1, 2, 4 exports, each figure the median round's: on a shared or virtual
    # machine the speed drifts by tens of percent within minutes, and a ratio of two
    # scenarios run once each would measure the drift as much as the scaling.
    tried: dict[int, list[dict[str, Any]]] = {1: [], 2: [], 4: []}
    for round_ in range(rounds):
        for count in tried:
            tried[count].append(await scenario(service, count, rows, 1000 * round_ + 100 * count))
    runs = {
        count: sorted(results, key=lambda r: r["rows_per_s"])[len(results) // 2]
        for count, results in tried.items()
    }
    for count, user in ((1, 500), (4, 600)):
        probed = await scenario(service, count, rows, user, probe=True)
        runs[count].update(latency=probed["latency"], samples=probed["samples"])
    return idle, runs


async def main(rows: int) -> None:
    source = Path(os.environ["BENCH_SOURCE"]).resolve() if os.environ.get("BENCH_SOURCE") else None
    with tempfile.TemporaryDirectory(prefix="bench-workers-") as tmp:
        service = Service(Path(tmp), source, provider=os.environ.get("BENCH_PROVIDER", "demo"))
        try:
            await service.ready()
            idle, runs = await measure(service, rows, IDLE_SAMPLES)
        finally:
            service.stop()
    print(f"source: {source or Path(__file__).resolve().parents[2]}; {rows} rows per export")
    print(f"load average at the end: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    print()
    print_table(idle, runs)


def print_table(idle: tuple[float, float, float], runs: dict[int, dict[str, Any]]) -> None:
    """The markdown table of latency, throughput and CPU per scenario (``runs`` by count)."""
    print(
        "| scenario | API p50 ms | API p95 ms | API p99 ms | p95 × idle | rows/s | × one "
        "| CPU/wall service | CPU/wall workers | CPU/wall Provider | rows per service CPU-s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| idle | {idle[0]:.1f} | {idle[1]:.1f} | {idle[2]:.1f} | 1.0 | | | | | | |")
    one = runs[1]["rows_per_s"]
    for count, r in runs.items():
        if "latency" in r:
            p50, p95, p99 = r["latency"]
            latency = f"{p50:.1f} | {p95:.1f} | {p99:.1f} | {p95 / idle[1]:.1f}"
        else:
            latency = "- | - | - | -"
        print(
            f"| {count} export{'s' if count > 1 else ''} | {latency} | "
            f"{r['rows_per_s']:,.0f} | {r['rows_per_s'] / one:.2f} | "
            f"{r['cpu_own']:.2f} | {r['cpu_children']:.2f} | {r['cpu_provider']:.2f} | "
            f"{r['rows'] / r['service_cpu_s']:,.0f} |"
        )


if __name__ == "__main__":
    trio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 200_000)
