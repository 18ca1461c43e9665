"""``export-center accept --load``: the production load acceptance, against a live
deployment, from the outside (docs/capacity.md).

1. **Idle.** For ``--baseline-seconds`` it sends the neighbours' request — the first page
   of the caller's task list, what the download center asks most — at ``--probe-rate``
   requests a second and keeps each latency.
2. **Load.** It starts ``--exports`` exports at once (``--parameters``: the largest size
   your registry allows) and keeps probing the same way until every one has ended, while
   it samples the instance's memory each second from ``/metrics``.
3. **Check.** Each export must have succeeded; its file is downloaded and read back as
   ``export-center accept`` does.

One verdict line ends it: PASS when every export passed and the probes' p95 under load is
within ``--allowance`` (+20 %) of the idle p95; with it, the CPU the instance used (cores,
the service process and its export workers), its peak memory, and the Provider's p95 and
p99 over the run (from ``export_provider_request_seconds``). The exit status is 0 only on
PASS.

``/metrics`` is read from ``--metrics-url`` (default ``--base-url``; with several
instances behind a balancer, give one instance's address: its figures are that
instance's), with ``--metrics-token`` when ``FILE_EXPORT_METRICS_TOKEN`` is set; without
an answer the figures say "not available" and the verdict stands on the API and the
exports.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import trio
from prometheus_client.parser import text_string_to_metric_families

from actors.cli.acceptance_checks import (
    API,
    FINAL,
    AcceptanceError,
    Checked,
    check_export,
    create_export,
)
from actors.core.ops.load_check import LoadFigures, histogram_quantile, judge_load, quantile

_CPU = ("process_cpu_seconds_total", "export_workers_cpu_seconds_total")
_MEMORY = ("process_resident_memory_bytes", "export_workers_resident_memory_bytes")
_PROVIDER = "export_provider_request_seconds_bucket"


@dataclass
class Scrape:
    """One read of ``/metrics``: the sums this command needs."""

    cpu: dict[str, float] = field(default_factory=dict)
    memory: dict[str, float] = field(default_factory=dict)
    provider: dict[float, float] = field(default_factory=dict)  # le -> cumulative count


def parse_metrics(text: str) -> Scrape:
    """The CPU counters, memory gauges and Provider latency buckets (summed over their
    labels) of a ``/metrics`` page."""
    scrape = Scrape()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in _CPU:
                scrape.cpu[sample.name] = scrape.cpu.get(sample.name, 0.0) + sample.value
            elif sample.name in _MEMORY:
                scrape.memory[sample.name] = scrape.memory.get(sample.name, 0.0) + sample.value
            elif sample.name == _PROVIDER:
                le = float(sample.labels["le"])
                scrape.provider[le] = scrape.provider.get(le, 0.0) + sample.value
    return scrape


class MetricsReader:
    """Reads the instance's ``/metrics``; ``None`` when it cannot (the reason kept)."""

    def __init__(self, url: str, token: str | None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.AsyncClient(base_url=url, headers=headers, timeout=10)
        self.problem: str | None = None

    async def read(self) -> Scrape | None:
        try:
            answer = await self._client.get("/metrics")
        except httpx.HTTPError as exc:
            self.problem = f"/metrics unreachable: {exc}"
            return None
        if answer.status_code != 200:
            self.problem = f"/metrics answered HTTP {answer.status_code} (--metrics-token?)"
            return None
        return parse_metrics(answer.text)

    async def aclose(self) -> None:
        await self._client.aclose()


async def probe(client: httpx.AsyncClient, rate: float, until: Callable[[], bool]) -> list[float]:
    """Send the neighbours' request ``rate`` times a second until ``until()``; the
    latencies in milliseconds (a failed request counts as the time it took)."""
    samples: list[float] = []
    period = 1 / rate
    next_at = trio.current_time()
    while not until():
        started = time.perf_counter()
        try:
            await client.get(API, params={"pageSize": 20})
        except httpx.HTTPError:
            pass
        samples.append((time.perf_counter() - started) * 1000)
        next_at += period
        await trio.sleep_until(max(next_at, trio.current_time()))
    return samples


@dataclass
class LoadRun:
    """The options of one ``accept --load``."""

    base_url: str
    token: str
    export_type: str
    #: one per export
    parameters: list[dict[str, Any]]
    exports: int
    baseline_seconds: float
    probe_rate: float
    allowance: float
    timeout: float
    metrics_url: str | None
    metrics_token: str | None


async def run_load(run: LoadRun) -> tuple[bool, str]:
    """Carry out the load acceptance; (passed, verdict line)."""
    headers = {"Authorization": f"Bearer {run.token}"}
    reader = MetricsReader(run.metrics_url or run.base_url, run.metrics_token)
    async with httpx.AsyncClient(base_url=run.base_url, headers=headers, timeout=30) as client:
        phase_end = trio.current_time() + run.baseline_seconds
        idle = await probe(client, run.probe_rate, lambda: trio.current_time() >= phase_end)
        before = await reader.read()
        started = time.monotonic()
        ids = [await trio.to_thread.run_sync(_create, run, i) for i in range(run.exports)]
        if len(set(ids)) < len(ids):
            raise AcceptanceError(
                "the service answered identical creates with the task it already had: "
                "give --parameters once per export, each different"
            )
        finished = trio.Event()
        peak_memory = 0.0
        loaded: list[float] = []

        async def sample_memory() -> None:
            nonlocal peak_memory
            while not finished.is_set():
                scrape = await reader.read()
                if scrape is not None:
                    peak_memory = max(peak_memory, sum(scrape.memory.values()))
                with trio.move_on_after(1):
                    await finished.wait()

        async def probe_loaded() -> None:
            loaded.extend(await probe(client, run.probe_rate, finished.is_set))

        async def wait_all() -> None:
            try:
                with trio.move_on_after(run.timeout):
                    while True:
                        states = [
                            (await client.get(f"{API}/{tid}")).json()["data"]["status"]
                            for tid in ids
                        ]
                        if all(state in FINAL for state in states):
                            break
                        await trio.sleep(0.5)
            finally:
                finished.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(sample_memory)
            nursery.start_soon(probe_loaded)
            nursery.start_soon(wait_all)
        seconds = time.monotonic() - started
        after = await reader.read()
    await reader.aclose()
    checked, failures = await trio.to_thread.run_sync(_check_all, run, ids)
    figures = LoadFigures(
        exports=run.exports,
        passed=len(checked),
        failures=tuple(failures),
        idle_p95_ms=quantile(idle, 0.95) if idle else math.nan,
        loaded_p95_ms=quantile(loaded, 0.95) if loaded else math.nan,
        probes=len(loaded),
    )
    passed, clause = judge_load(figures, run.allowance)
    rows = sum(c.rows for c in checked)
    line = (
        f"accept --load: {'PASS' if passed else 'FAIL'} {len(checked)}/{run.exports} exports "
        f"at once ({rows} rows, {seconds:.1f} s); {clause}; "
        + _resources(before, after, seconds, peak_memory, reader.problem)
    )
    return passed, line


def _create(run: LoadRun, index: int) -> str:
    with httpx.Client(
        base_url=run.base_url, headers={"Authorization": f"Bearer {run.token}"}, timeout=30
    ) as client:
        return create_export(client, run.export_type, run.parameters[index])


def _check_all(run: LoadRun, ids: list[str]) -> tuple[list[Checked], list[str]]:
    """Download and read back every export (after the measured phase)."""
    from rich.console import Console
    from rich.progress import Progress, TextColumn

    checked: list[Checked] = []
    failures: list[str] = []
    progress = Progress(
        TextColumn("checking task {task.fields[task_id]}"), console=Console(stderr=True)
    )
    with (
        httpx.Client(
            base_url=run.base_url, headers={"Authorization": f"Bearer {run.token}"}, timeout=60
        ) as client,
        progress,
    ):
        for tid in ids:
            try:
                checked.append(check_export(client, tid, run.timeout, progress))
            except (AcceptanceError, httpx.HTTPError) as exc:
                failures.append(str(exc) or type(exc).__name__)
    return checked, failures


def _resources(
    before: Scrape | None,
    after: Scrape | None,
    seconds: float,
    peak_memory: float,
    problem: str | None,
) -> str:
    if before is None or after is None:
        return f"CPU, memory and Provider latency not available ({problem})"
    service = after.cpu.get(_CPU[0], 0) - before.cpu.get(_CPU[0], 0)
    workers = after.cpu.get(_CPU[1], 0) - before.cpu.get(_CPU[1], 0)
    buckets = [(le, after.provider[le] - before.provider.get(le, 0)) for le in after.provider]
    p95 = histogram_quantile(buckets, 0.95)
    p99 = histogram_quantile(buckets, 0.99)
    provider = (
        "no Provider requests seen"
        if p95 is None or p99 is None
        else f"Provider p95 {p95:.2f} s, p99 {p99:.2f} s"
    )
    return (
        f"CPU {(service + workers) / seconds:.2f} cores (service {service:.1f} s, "
        f"export workers {workers:.1f} s); memory peak {peak_memory / 2**20:.0f} MB "
        f"(service and workers); {provider}"
    )
