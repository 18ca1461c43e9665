"""``deploy/dev bench`` prints every figure of issue 9 item 5 (smoke run, tiny sizes).

Runs ``deploy/bench/bench_all.py --quick --skip-history`` for real — the writer benchmark,
the embedded service as its own process, real exports over HTTP — and checks that each
section and each summary line is there with a number in it. No figure is compared with
anything: speed is never a test assertion here (benchmarks print figures).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH_ALL = REPO / "deploy" / "bench" / "bench_all.py"

#: The summary's figure column, one line each, in the order printed.
SUMMARY_FIGURES = (
    "API p95 during 4 exports, demo Provider on the same cores",
    "aggregate rows/s, 2 vs 1 export, demo Provider on the same cores",
    "aggregate rows/s, 4 vs 1 export, demo Provider on the same cores",
    "API p95 during 4 exports, Provider elsewhere (replayed)",
    "aggregate rows/s, 2 vs 1 export, Provider elsewhere (replayed)",
    "aggregate rows/s, 4 vs 1 export, Provider elsewhere (replayed)",
    "this machine's ceiling: bare decode + write loop, one process per core vs one",
    "one export end to end vs xlsxwriter constant_memory, demo Provider on the same cores",
    "one export end to end vs openpyxl write_only, demo Provider on the same cores",
    "one export end to end, rows per service CPU-s, demo Provider on the same cores",
    "one export end to end vs xlsxwriter constant_memory, Provider elsewhere (replayed)",
    "one export end to end vs openpyxl write_only, Provider elsewhere (replayed)",
    "one export end to end, rows per service CPU-s, Provider elsewhere (replayed)",
    "create -> RUNNING p50 / p99 idle",
    "peak RSS service + workers, 200 rows",
    "peak RSS service + workers, 400 rows",
)


@pytest.mark.slow
def test_quick_run_prints_every_figure() -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(BENCH_ALL),
            "--quick",
            "--skip-history",
            "--rows",
            "300",
            "--rss-rows",
            "200,400",
            "--creates",
            "3",
            "--idle-samples",
            "10",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    text = out.stdout
    assert text.startswith("uptime at the start:"), text[:500]
    assert re.search(r"uptime at the end: .*load average", text), text[-500:]
    # the writers side by side, from bench_xlsx_writer.py
    for writer in ("stream level 1", "xlsxwriter cm", "openpyxl wo"):
        assert re.search(rf"^{writer} +[\d.]+ +\d+", text, re.M), writer
    # the latency / throughput table, from bench_workers.py
    # twice: with the demo Provider, then with the replayed one; the API's latency idle
    # and during 1 and 4 exports, the throughput of 1, 2 and 4 (rows/s, the 6th cell)
    for scenario in ("idle", "1 export", "4 exports"):
        found = re.findall(rf"^\| {scenario} \| [\d.]+ \|", text, re.M)
        assert len(found) == 2, (scenario, found)
    for scenario in ("1 export", "2 exports", "4 exports"):
        found = re.findall(rf"^\| {scenario} \|(?: [^|]+ \|){{4}} [\d,]+ \|", text, re.M)
        assert len(found) == 2, (scenario, found)
    assert "answers replayed at almost no CPU" in text
    for provider in ("demo", "replay"):
        assert f"one export alone, end to end ({provider} Provider): 300 rows at" in text
    assert re.search(r"create → RUNNING over 3 exports .* p50 [\d.]+, p99 [\d.]+", text)
    # the summary: every figure, a target beside it, something measured
    summary = text[text.index("## Summary") :]
    rows = re.findall(r"^\| (.+?) \| (.+?) \| (.+?) \|$", summary, re.M)
    assert rows[0] == ("figure", "target", "measured"), summary
    rows = rows[1:]
    assert [r[0] for r in rows] == list(SUMMARY_FIGURES), summary
    for figure, target, measured in rows:
        assert target.strip() and re.search(r"\d", measured), (figure, measured)
    # no figure of the history benchmark when it is skipped
    assert "finished tasks" not in summary


@pytest.mark.slow
def test_history_benchmark_runs_every_duty_on_a_small_history() -> None:
    """bench_history.py measures every reconciler duty, the gauges and the list pages:
    a renamed or moved duty must fail here, not in a 15-minute run."""
    out = subprocess.run(
        [
            sys.executable,
            str(REPO / "deploy" / "bench" / "bench_history.py"),
            *("--sizes", "100,1000", "--db", "sqlite", "--repeat", "1"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    for figure in ("reconciler pass", "gauges (sampler)", "list: admin, page 1", "create"):
        assert re.search(rf"^\s*{re.escape(figure)}\s+\|", out.stdout, re.M), figure
