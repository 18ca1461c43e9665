"""``deploy/bench/bench_progress_fanout.py`` prints its figures (smoke run, tiny load).

Runs the benchmark for real — the embedded service as its own process, exports over HTTP,
a stream holder of its own with ordinary users', administrators' and another tenant's
streams — on a few dozen streams, and checks that the table has a row per phase with a
number in every column and that every stream received what it should. No figure is
compared with anything: benchmarks print figures, speed is never asserted.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "deploy" / "bench" / "bench_progress_fanout.py"


def test_the_fanout_benchmark_prints_every_figure() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH)]
        + ["--streams", "60", "--rows", "3000", "--seconds", "2", "--probes", "20"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    rows = {
        line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:-1]]
        for line in done.stdout.splitlines()
        if line.startswith("| ") and not line.startswith("| phase")
    }
    assert set(rows) == {"idle", "2 exports", "2 exports + 60 streams"}, done.stdout
    for phase, cells in rows.items():
        assert re.fullmatch(r"\d+ \([\d, ]+\)", cells[1]), (phase, cells)  # count (statuses)
        for cell in (cells[0], *cells[2:]):
            float(cell)  # every figure column holds a number
    for line in ("cores: ", "load average at the start", "load average at the end"):
        assert line in done.stdout, done.stdout
    assert "delivery: every stream received what it should" in done.stdout, done.stdout
    assert "foreign streams: 3, 0 events" in done.stdout, done.stdout
