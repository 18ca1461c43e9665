"""Benchmark of the streaming XLSX writer against the libraries it was chosen over.

Makes N rows (first argument, default 200000) of the demo Provider's 8 columns once
(``web.demo_provider.data.customer_row``, the values a run gets from JSON), then writes the
same rows, in batches of 500, with each writer in turn and prints, side by side: wall and
CPU seconds, rows per second of each, the ratio of CPU time to a bare xlsxwriter
``constant_memory`` loop, the file size and the peak memory the writer added. Figures
only, no pass/fail: targets live here, not in timed tests.

Writers:

* ``stream level 1`` — :class:`XlsxStreamWriter` as the runner uses it (every guard on).
* ``stream level 6`` — the same with zlib's deflate level 6 (the size/speed trade-off;
  level 1 is ISA-L's).
* ``xlsxwriter cm`` — a bare loop: ``constant_memory``, one typed ``write_*`` call per
  cell, dates parsed with ``fromisoformat``; no guards, no warnings.
* ``openpyxl wo`` — ``write_only`` workbook, ``append`` per row, same parsing.
* ``rustpy-xlsxwriter`` — only when installed (not a dependency): the records handed over
  at once, as its API wants them, long strings cut first (it refuses them).

Usage::

    .venv/bin/python deploy/bench/bench_xlsx_writer.py [ROWS] [--only NAME[,NAME…]]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actors.core.batch import ColumnDef, ColumnType  # noqa: E402
from actors.pipeline.writer.xlsx_stream import XlsxStreamWriter  # noqa: E402
from web.demo_provider.data import DEMO_COLUMNS, customer_row  # noqa: E402

BATCH_SIZE = 500  # the registry's default batch-size
MAX_BYTES = 1 << 40  # no file-size limit here: the figure is the speed
Rows = list[dict[str, Any]]
Batches = list[Rows]


def make_batches(count: int) -> Batches:
    """Provider-like batches of the demo's raw JSON values, made once for every writer."""
    rows = [customer_row(i) for i in range(1, count + 1)]
    return [rows[i : i + BATCH_SIZE] for i in range(0, count, BATCH_SIZE)]


def _parse_date(value: Any) -> Any:
    return date.fromisoformat(value) if isinstance(value, str) else value


def _parse_datetime(value: Any) -> Any:
    if isinstance(value, str):
        return datetime.fromisoformat(value).replace(tzinfo=None)
    return value


def _python_values(columns: Sequence[ColumnDef]) -> list[tuple[str, Callable[[Any], Any]]]:
    """What a bare library loop does with the JSON values: parse dates, keep the rest."""
    parse: dict[ColumnType, Callable[[Any], Any]] = {
        ColumnType.DATE: _parse_date,
        ColumnType.DATETIME: _parse_datetime,
    }
    return [(c.key, parse.get(c.type, lambda v: v)) for c in columns]


def run_stream(path: Path, batches: Batches, level: int) -> int:
    with path.open("wb") as out:
        writer = XlsxStreamWriter(
            out, DEMO_COLUMNS, max_rows=10**8, max_bytes=MAX_BYTES, compress_level=level
        )
        try:
            for number, batch in enumerate(batches, 1):
                writer.write_rows(batch, number)
            writer.close()
        except BaseException:
            writer.discard()
            raise
    return writer.rows_written


def run_xlsxwriter(path: Path, batches: Batches) -> int:
    import xlsxwriter

    book = xlsxwriter.Workbook(
        str(path),
        {
            "constant_memory": True,
            "strings_to_formulas": False,
            "strings_to_urls": False,
            "strings_to_numbers": False,
        },
    )
    sheet = book.add_worksheet("Export")
    date_format = book.add_format({"num_format": "yyyy-mm-dd"})
    datetime_format = book.add_format({"num_format": "yyyy-mm-dd hh:mm:ss"})
    bold = book.add_format({"bold": True})
    for c, column in enumerate(DEMO_COLUMNS):
        sheet.write_string(0, c, column.title, bold)
    writers: dict[ColumnType, Callable[[int, int, Any], Any]] = {
        ColumnType.STRING: lambda r, c, v: sheet.write_string(r, c, v),
        ColumnType.INTEGER: lambda r, c, v: sheet.write_number(r, c, v),
        ColumnType.DECIMAL: lambda r, c, v: sheet.write_number(r, c, v),
        ColumnType.BOOLEAN: lambda r, c, v: sheet.write_boolean(r, c, v),
        ColumnType.DATE: lambda r, c, v: sheet.write_datetime(r, c, v, date_format),
        ColumnType.DATETIME: lambda r, c, v: sheet.write_datetime(r, c, v, datetime_format),
    }
    plan = [
        (c, key, parse, writers[column.type])
        for c, ((key, parse), column) in enumerate(
            zip(_python_values(DEMO_COLUMNS), DEMO_COLUMNS, strict=True)
        )
    ]
    r = 0
    for batch in batches:
        for row in batch:
            r += 1
            for c, key, parse, write in plan:
                value = row.get(key)
                if value is not None:
                    write(r, c, parse(value))
    book.close()
    return r


def run_openpyxl(path: Path, batches: Batches) -> int:
    import openpyxl

    book = openpyxl.Workbook(write_only=True)
    sheet = book.create_sheet("Export")
    sheet.append([c.title for c in DEMO_COLUMNS])
    plan = _python_values(DEMO_COLUMNS)
    count = 0
    for batch in batches:
        for row in batch:
            sheet.append([parse(row.get(key)) for key, parse in plan])
            count += 1
    book.save(path)
    return count


def _cut(value: Any) -> Any:
    return value[:32_767] if isinstance(value, str) else value


def run_rustpy(path: Path, batches: Batches) -> int:
    import rustpy_xlsxwriter

    # It refuses a string over Excel's limit instead of cutting it: cut it here.
    plan = [
        (key, _cut if c.type is ColumnType.STRING else parse)
        for (key, parse), c in zip(_python_values(DEMO_COLUMNS), DEMO_COLUMNS, strict=True)
    ]
    records = [
        {key: parse(row.get(key)) for key, parse in plan} for batch in batches for row in batch
    ]
    rustpy_xlsxwriter.FastExcel(str(path), sanitize_formulas=True).sheet("Export", records).save()
    return len(records)


def _rustpy_installed() -> bool:
    try:
        import rustpy_xlsxwriter  # noqa: F401
    except ImportError:
        return False
    return True


WRITERS: dict[str, Callable[[Path, Batches], int]] = {
    "stream level 1": lambda p, b: run_stream(p, b, 1),
    "stream level 6": lambda p, b: run_stream(p, b, 6),
    "xlsxwriter cm": run_xlsxwriter,
    "openpyxl wo": run_openpyxl,
}
if _rustpy_installed():
    WRITERS["rustpy-xlsxwriter"] = run_rustpy
BASELINE = "xlsxwriter cm"


def _status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark (Linux), so each writer's peak is its own."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", nargs="?", type=int, default=200_000)
    parser.add_argument("--only", help="comma-separated writer names")
    args = parser.parse_args()
    names = list(WRITERS) if not args.only else [n.strip() for n in args.only.split(",")]

    started = time.perf_counter()
    batches = make_batches(args.rows)
    print(
        f"{args.rows} demo rows made in {time.perf_counter() - started:.1f} s; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    results: dict[str, tuple[float, float, int, int | None]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-xlsx-") as tmp:
        for name in names:
            path = Path(tmp) / f"{name.replace(' ', '-')}.xlsx"
            gc.collect()
            base = _status_kib("VmRSS") if _reset_peak() else None
            begin, begin_cpu = time.perf_counter(), time.process_time()
            rows = WRITERS[name](path, batches)
            seconds = time.perf_counter() - begin
            cpu = time.process_time() - begin_cpu
            peak = _status_kib("VmHWM")
            added = None if base is None or peak is None else max(peak - base, 0)
            results[name] = (seconds, cpu, path.stat().st_size, added)
            assert rows == args.rows, (name, rows)
            path.unlink()
    baseline = results.get(BASELINE)
    # CPU seconds are the fair figure on a shared machine (the process's own time, so
    # other load does not count); wall seconds are what a user waits.
    print(
        f"{'writer':<18} {'wall s':>7} {'rows/s':>8} {'CPU s':>7} {'rows/CPU-s':>11} "
        f"{'× xlsxwriter (CPU)':>19} {'file MB':>8} {'+peak MiB':>10}"
    )
    for name, (seconds, cpu, size, added) in results.items():
        ratio = f"{baseline[1] / cpu:.2f}" if baseline else "-"
        memory = f"{added / 1024:.1f}" if added is not None else "-"
        print(
            f"{name:<18} {seconds:>7.2f} {args.rows / seconds:>8.0f} {cpu:>7.2f} "
            f"{args.rows / cpu:>11.0f} {ratio:>19} {size / 1e6:>8.2f} {memory:>10}"
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
