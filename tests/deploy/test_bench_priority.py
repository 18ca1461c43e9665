"""``deploy/bench/bench_priority.py`` prints its figures (smoke run, tiny sizes).

Runs ``bench_priority.py --quick`` for real — two worker priorities, each in a fresh
embedded service, exports over HTTP beside two busy loops the script starts and kills —
and checks that the table has a row per variant with a number in every column. No figure
is compared with anything: benchmarks print figures, speed is never asserted.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "deploy" / "bench" / "bench_priority.py"


def test_bench_priority_prints_a_row_per_worker_priority() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {
        line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:-1]]
        for line in done.stdout.splitlines()
        if line.startswith("| nice")
    }
    assert set(rows) == {"nice +10 + SCHED_IDLE", "nice +10"}, done.stdout
    for variant, cells in rows.items():
        for cell in cells[:-1]:
            float(cell.replace(",", ""))  # every figure column holds a number
        assert cells[-1], variant  # every round's figure
    assert "round 1:" in done.stdout and "load average" in done.stdout
