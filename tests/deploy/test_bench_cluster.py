"""deploy/bench/bench_cluster.py runs end to end on a tiny load (the real MariaDB, broker
and S3 server of the test command): a renamed option, status counter or route must fail
here, not in the capacity measurement."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_cluster_benchmark_prints_every_figure() -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(REPO / "deploy" / "bench" / "bench_cluster.py"),
            *("--rows", "3000", "--instances", "2", "--slots", "1", "--tasks", "2"),
            *("--task-rows", "1000", "--paced", "2", "--idle-seconds", "1"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    for figure in (
        "## One export of 3,000 rows",
        "| Questions |",
        "| Handler_write |",
        "| object-store requests | 1 (1 parts of 8 MiB) | 0 |",
        "| CPU seconds, service + export worker |",
        "## Cluster: 2 instances x 1 slots, 2 exports",
        "tasks/min",
        "queries/s",
        "create->RUNNING with the queue: p50",
        "paced at",
    ):
        assert figure in out.stdout, f"{figure!r} missing:\n{out.stdout}"
