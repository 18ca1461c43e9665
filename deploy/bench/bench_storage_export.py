"""An export to a local directory against the same export streamed to an S3 bucket
(issue 25): figures, no pass/fail.

The service runs as its own process (``bench_workers.Service``, the demo Provider in
another process) with ``FILE_EXPORT_STORAGE=local`` and then ``s3`` (S3Proxy, the test
command's server), alternating ``--repeat`` times. For each run: wall seconds, rows per
second, CPU seconds of the service and its export worker, CPU milliseconds per MB of the
file, and the export worker's peak resident memory (``VmHWM``, sampled from ``/proc``
while it runs). The difference between the two columns is what uploading while writing
costs: the parts held in memory and the requests.

Usage (the services script starts S3Proxy if missing)::

    EXPORT_CENTER_SERVICES=s3 deploy/services.sh run \\
        .venv/bin/python deploy/bench/bench_storage_export.py [--rows 200000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from deploy.bench.bench_workers import API, Service, client  # noqa: E402
from tests.s3_helpers import (  # noqa: E402
    S3_TEST_KEY,
    S3_TEST_SECRET,
    S3_TEST_URL,
    drop_bucket,
    new_bucket,
)


def worker_peaks(service_pid: int) -> dict[int, int]:
    """``VmHWM`` in bytes of each child process of the service now."""
    peaks: dict[int, int] = {}
    for task in Path(f"/proc/{service_pid}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for pid in children:
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("VmHWM:"):
                    peaks[int(pid)] = int(line.split()[1]) * 1024
    return peaks


async def one_run(tmp: Path, env: dict[str, str], rows: int, seq: int) -> dict[str, float]:
    service = Service(tmp, None, env=env)
    try:
        url = await service.ready()
        async with client(url, 7) as c:
            warm = (
                await c.post(
                    API, json={"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 500}}
                )
            ).json()
            while (await c.get(f"{API}/{warm['data']['id']}")).json()["data"][
                "status"
            ] != "SUCCEEDED":
                await trio.sleep(0.1)
            before = service.cpu_seconds()
            started = time.monotonic()
            body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": rows - seq}}
            tid = (await c.post(API, json=body)).json()["data"]["id"]
            peak: dict[int, int] = {}
            while True:
                for pid, value in worker_peaks(service.proc.pid).items():
                    peak[pid] = max(peak.get(pid, 0), value)
                task = (await c.get(f"{API}/{tid}")).json()["data"]
                if task["status"] in ("SUCCEEDED", "FAILED"):
                    break
                await trio.sleep(0.05)
            assert task["status"] == "SUCCEEDED", task
            seconds = time.monotonic() - started
            after = service.cpu_seconds()
    finally:
        service.stop()
    cpu = (after[0] - before[0]) + (after[1] - before[1])
    size = int(task["sizeBytes"])
    return {
        "seconds": seconds,
        "rows_per_s": (rows - seq) / seconds,
        "cpu_s": cpu,
        "cpu_ms_per_mb": cpu * 1000 / (size / 2**20),
        "worker_peak_mb": max(peak.values(), default=0) / 2**20,
        "mb": size / 2**20,
    }


async def main(rows: int, repeat: int) -> None:
    bucket = new_bucket()
    s3 = {
        "FILE_EXPORT_STORAGE": "s3",
        "FILE_EXPORT_S3_ENDPOINT": S3_TEST_URL,
        "FILE_EXPORT_S3_BUCKET": bucket,
        "FILE_EXPORT_S3_ACCESS_KEY_ID": S3_TEST_KEY,
        "FILE_EXPORT_S3_SECRET_ACCESS_KEY": S3_TEST_SECRET,
        "FILE_EXPORT_WORKER_NICE": "0",
    }
    results: dict[str, list[dict[str, float]]] = {"local": [], "s3": []}
    try:
        for n in range(repeat):
            for label, env in (("local", {"FILE_EXPORT_WORKER_NICE": "0"}), ("s3", s3)):
                with tempfile.TemporaryDirectory(prefix="bench-storage-") as tmp:
                    results[label].append(await one_run(Path(tmp), env, rows, n))
    finally:
        drop_bucket(bucket)
    print(f"\n{rows:,}-row export, median of {repeat} runs each, alternated:\n")
    print("| storage | seconds | rows/s | CPU s (service + worker) | CPU ms per MB | "
          "worker peak RSS MB | file MB |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for label, runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(
            f"| {label} | {med['seconds']:.2f} | {med['rows_per_s']:,.0f} | {med['cpu_s']:.2f} | "
            f"{med['cpu_ms_per_mb']:.0f} | {med['worker_peak_mb']:.0f} | {med['mb']:.1f} |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    trio.run(main, args.rows, args.repeat)
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
