"""Benchmark of the streaming XLSX writer (§11): throughput and peak memory.

Writes N rows (first argument, default 200000) of 8 typed columns to a temporary file and
prints rows, bytes, seconds, rows/s and peak RSS. Figures only, no pass/fail: targets live
here, not in timed tests (DESIGN §8).

Usage::

    .venv/bin/python deploy/bench/bench_xlsx_writer.py [ROWS]
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actors.core.models import ColumnDef, ColumnType  # noqa: E402
from actors.pipeline.xlsx_writer import XlsxExportWriter  # noqa: E402

COLUMNS = [
    ColumnDef("id", "ID", ColumnType.INTEGER, width=12),
    ColumnDef("name", "Customer name", ColumnType.STRING, width=24),
    ColumnDef("email", "Email", ColumnType.STRING, width=30),
    ColumnDef("balance", "Balance", ColumnType.DECIMAL),
    ColumnDef("vip", "VIP", ColumnType.BOOLEAN, width=6),
    ColumnDef("birthday", "Birthday", ColumnType.DATE, width=12),
    ColumnDef("created_at", "Created at", ColumnType.DATETIME, width=20),
    ColumnDef("note", "Note", ColumnType.STRING, width=40),
]
BATCH_SIZE = 500  # the registry's default batch-size (§10.3)
MAX_BYTES = 50 * 1024 * 1024  # §11 file-size limit


def rows(count: int) -> Iterator[list[dict[str, Any]]]:
    """Provider-like batches of raw JSON values (strings for decimals and dates)."""
    batch: list[dict[str, Any]] = []
    for i in range(count):
        batch.append(
            {
                "id": 1_000_000 + i,
                "name": f"Customer {i:07d}",
                "email": f"customer{i}@example.com",
                "balance": f"{(i * 37) % 100000}.{i % 100:02d}",
                "vip": i % 7 == 0,
                "birthday": f"19{50 + i % 50:02d}-{1 + i % 12:02d}-{1 + i % 28:02d}",
                "created_at": f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:"
                f"{(i * 7) % 60:02d}.123+08:00",
                "note": "=cmd|' /C calc'!A0" if i % 1000 == 0 else f"note {i % 97}",
            }
        )
        if len(batch) == BATCH_SIZE:
            yield batch
            batch = []
    if batch:
        yield batch


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    with tempfile.TemporaryDirectory(prefix="bench-xlsx-") as tmp:
        path = Path(tmp) / "bench.xlsx"
        started = time.perf_counter()
        with path.open("wb") as out:
            writer = XlsxExportWriter(out, COLUMNS, max_rows=count, max_bytes=MAX_BYTES, tmpdir=tmp)
            try:
                for batch in rows(count):
                    writer.write_rows(batch)
                size = writer.close()
            except BaseException:
                writer.discard()
                raise
        seconds = time.perf_counter() - started
    # ru_maxrss is in KiB on Linux (bytes on macOS).
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if sys.platform == "darwin":
        peak_kib //= 1024
    print(f"rows:      {writer.rows_written}")
    print(f"bytes:     {size}")
    print(f"seconds:   {seconds:.2f}")
    print(f"rows/s:    {writer.rows_written / seconds:.0f}")
    print(f"peak RSS:  {peak_kib / 1024:.1f} MiB")
    print(f"warnings:  {writer.warnings.summary() or 'none'}")


if __name__ == "__main__":
    main()
