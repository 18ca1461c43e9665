"""The CPU and memory series: the service process (standard collector) and its export
workers (child processes), which ``export-center accept --load`` adds up."""

from __future__ import annotations

import subprocess
import sys

from prometheus_client.parser import text_string_to_metric_families

from actors.plumbing.metrics import Metrics


def sample(name: str) -> float:
    page = Metrics().exposition().decode()
    for family in text_string_to_metric_families(page):
        for s in family.samples:
            if s.name == name:
                return float(s.value)
    raise AssertionError(f"{name} not exported")


def test_a_live_child_counts_in_worker_memory_and_its_cpu_once_it_ended() -> None:
    assert sample("process_resident_memory_bytes") > 0
    before_cpu = sample("export_workers_cpu_seconds_total")
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nt = time.process_time()\n"
            "while time.process_time() - t < 0.3: pass\nprint(flush=True)\nsys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert child.stdout is not None
        child.stdout.readline()  # its CPU is spent, it waits
        assert sample("export_workers_resident_memory_bytes") >= 4 * 1024 * 1024
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
        child.stdout.close()  # type: ignore[union-attr]
    assert sample("export_workers_resident_memory_bytes") == 0
    assert sample("export_workers_cpu_seconds_total") >= before_cpu + 0.25
