"""What N cores give an export's CPU work on this machine: the ceiling of the scaling figure.

Issue 9 asks N concurrent exports for ≥ 0.9 × N × one export's throughput, up to the free
cores. Whether a machine can give that at all depends on more than its core count: an
export's work — JSON decoding into many small objects, typing, XML, deflate — leans on
caches and memory, which two cores of a small virtual machine may share. This script
measures that ceiling without the service: each process decodes ROWS demo rows from
Provider-like JSON batches of 1,000 (encoded once, before the clock starts) and writes
them with the service's own :class:`XlsxStreamWriter` (deflate level 1) into a temporary
file, as an export worker does, minus HTTP and pipes.

It runs the loop in one process alone, then in PROCESSES processes started together (all
made ready first, then released at once), three rounds alternated, and prints rows/s of
each and the ratio of the medians. A ratio of 1.6 means the service's N-export figure
cannot exceed ~1.6 × one export here, however well it shares the cores.

Usage::

    .venv/bin/python deploy/bench/bench_cores.py [ROWS] [PROCESSES]   # 200000, cpu count
    .venv/bin/python deploy/bench/bench_cores.py --loop ROWS           # one process (internal)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actors.pipeline.writer.xlsx_stream import XlsxStreamWriter  # noqa: E402
from web.demo_provider.data import DEMO_COLUMNS, customer_row  # noqa: E402

BATCH = 1000


def loop(rows: int) -> None:
    """One process: make the batches, say ``ready``, wait for ``go`` on stdin, then decode
    and write them; print the loop's wall seconds."""
    encoder = msgspec.json.Encoder()
    batches = [
        encoder.encode(
            {"rows": [customer_row(i) for i in range(start, min(start + BATCH, rows + 1))]}
        )
        for start in range(1, rows + 1, BATCH)
    ]
    decoder = msgspec.json.Decoder()
    print("ready", flush=True)
    sys.stdin.readline()
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        writer = XlsxStreamWriter(out, DEMO_COLUMNS, max_rows=rows, max_bytes=1 << 40)
        for number, raw in enumerate(batches, 1):
            writer.write_rows(decoder.decode(raw)["rows"], number)
        writer.close()
        print(f"{time.perf_counter() - started:.4f}", flush=True)


def together(rows: int, processes: int) -> list[float]:
    """Wall seconds of the loop in each of ``processes`` processes released at once."""
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--loop", str(rows)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    seconds = []
    for proc in procs:
        out, _ = proc.communicate()
        assert proc.returncode == 0
        seconds.append(float(out.strip()))
    return seconds


def measure(rows: int, processes: int, rounds: int = 3) -> tuple[float, float]:
    """(rows/s of one process alone, aggregate rows/s of ``processes`` at once), each the
    median of ``rounds`` rounds that alternate the two (the machine's speed drifts);
    prints every round and the ratio of the medians."""
    ones, aggregates = [], []
    for round_ in range(1, rounds + 1):
        (alone,) = together(rows, 1)
        many = together(rows, processes)
        ones.append(rows / alone)
        aggregates.append(processes * rows / max(many))
        each = ", ".join(f"{rows / s:,.0f}" for s in many)
        print(
            f"round {round_}: decode + write {rows:,} rows, one process alone "
            f"{ones[-1]:,.0f} rows/s; {processes} at once {each} rows/s each, "
            f"aggregate {aggregates[-1]:,.0f}",
            flush=True,
        )
    one, aggregate = statistics.median(ones), statistics.median(aggregates)
    print(
        f"medians: one {one:,.0f} rows/s, {processes} at once {aggregate:,.0f} "
        f"(x{aggregate / one:.2f})"
    )
    return one, aggregate


def main() -> None:
    if sys.argv[1:2] == ["--loop"]:
        loop(int(sys.argv[2]))
        return
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    processes = int(sys.argv[2]) if len(sys.argv) > 2 else (os.cpu_count() or 1)
    measure(rows, processes)


if __name__ == "__main__":
    main()
