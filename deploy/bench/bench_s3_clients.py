"""Which S3 client the export worker should upload with (issue 25): figures, no pass/fail.

For each candidate (minio, boto3, obstore), in a fresh interpreter of a scratch virtualenv
(the candidates are not dependencies of the service), against the S3-compatible server of
the tests (``deploy/s3/server.sh``: S3Proxy):

* import time and the resident memory the import adds;
* a multipart upload of ``--mb`` MB in 8 MB parts from an in-memory source, the way the
  worker would stream a file: wall time, CPU time per MB, peak resident memory;
* a presigned GET URL (the download's redirect mode): microseconds per URL.

Run it under the services script, which starts the server::

    EXPORT_CENTER_SERVICES=s3 deploy/services.sh run \\
        .venv/bin/python deploy/bench/bench_s3_clients.py [--mb 64]

boto3 is configured with ``request_checksum_calculation="when_required"``: its newer
default sends flexible checksums that S3Proxy (and several other S3 servers) refuse.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CANDIDATES = {"minio": "minio", "boto3": "boto3", "obstore": "obstore"}
HERE = Path(__file__).resolve()
SERVER = HERE.parents[1] / "s3" / "server.sh"
KEY, SECRET, BUCKET = "export-center", "export-center-secret", "export-center"

MEASURE = r"""
import io, json, os, resource, sys, time
which, endpoint, size_mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
KEY, SECRET, BUCKET = "export-center", "export-center-secret", "export-center"
MB = 1024 * 1024
PART = 8 * MB
SIZE = size_mb * MB
def rss():
    return int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) / 1024
r0 = rss(); t0 = time.perf_counter()
__import__(which)
import_ms = (time.perf_counter() - t0) * 1000; import_mb = rss() - r0
chunk = os.urandom(PART)
name = f"bench/{which}-{os.getpid()}.bin"
c0, w0 = time.process_time(), time.perf_counter()
if which == "minio":
    from minio import Minio
    host = endpoint.split("//", 1)[1]
    client = Minio(host, access_key=KEY, secret_key=SECRET, secure=False, region="us-east-1")
    class Source(io.RawIOBase):
        left = SIZE
        def readable(self): return True
        def read(self, n=-1):
            n = min(n if n and n > 0 else PART, self.left, PART)
            self.left -= n
            return chunk[:n]
    client.put_object(BUCKET, name, Source(), length=-1, part_size=PART)
    presign = lambda: client.presigned_get_object(BUCKET, name)
elif which == "boto3":
    import boto3
    from botocore.config import Config
    s3 = boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
        region_name="us-east-1",
        config=Config(request_checksum_calculation="when_required",
                      response_checksum_validation="when_required"),
    )
    up = s3.create_multipart_upload(Bucket=BUCKET, Key=name)
    parts = []
    for i in range(SIZE // PART):
        p = s3.upload_part(Bucket=BUCKET, Key=name, UploadId=up["UploadId"],
                           PartNumber=i + 1, Body=chunk)
        parts.append({"PartNumber": i + 1, "ETag": p["ETag"]})
    s3.complete_multipart_upload(Bucket=BUCKET, Key=name, UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": parts})
    presign = lambda: s3.generate_presigned_url(
        "get_object", Params={"Bucket": BUCKET, "Key": name}, ExpiresIn=60)
else:
    import obstore
    from obstore.store import S3Store
    store = S3Store(BUCKET, endpoint=endpoint, access_key_id=KEY, secret_access_key=SECRET,
                    region="us-east-1", client_options={"allow_http": True},
                    virtual_hosted_style_request=False)
    with obstore.open_writer(store, name, buffer_size=PART) as out:
        for _ in range(SIZE // PART):
            out.write(chunk)
    from datetime import timedelta
    presign = lambda: obstore.sign(store, "GET", name, timedelta(seconds=60))
cpu, wall = time.process_time() - c0, time.perf_counter() - w0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t0 = time.perf_counter()
for _ in range(200):
    presign()
presign_us = (time.perf_counter() - t0) / 200 * 1e6
print(json.dumps({"import_ms": import_ms, "import_mb": import_mb, "wall_s": wall,
                  "cpu_ms_per_mb": cpu * 1000 / size_mb, "peak_mb": peak,
                  "presign_us": presign_us}))
"""


def main(size_mb: int) -> None:
    endpoint = subprocess.run(
        [str(SERVER), "url"], capture_output=True, text=True, check=True
    ).stdout.strip()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    with tempfile.TemporaryDirectory(prefix="bench-s3-") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        subprocess.run(
            [
                python,
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                *CANDIDATES.values(),
            ],
            check=True,
        )
        versions = subprocess.run(
            [python, "-m", "pip", "list", "--format", "json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        pinned = {p["name"]: p["version"] for p in json.loads(versions)}
        print(f"\n{size_mb} MB multipart upload in 8 MB parts to {endpoint} (S3Proxy)")
        print(
            "| client | import ms | RSS at import MB | upload s | CPU ms per MB "
            "| peak RSS MB | presign µs |"
        )
        print("|---|---|---|---|---|---|---|")
        for name, package in CANDIDATES.items():
            out = subprocess.run(
                [python, "-c", MEASURE, name, endpoint, str(size_mb)],
                capture_output=True,
                text=True,
            )
            if out.returncode != 0:
                reason = out.stderr.strip().splitlines()[-1]
                print(f"| {name} {pinned.get(package, '?')} | failed: {reason} |")
                continue
            f = json.loads(out.stdout.strip().splitlines()[-1])
            print(
                f"| {name} {pinned.get(package, '?')} | {f['import_ms']:.0f} "
                f"| {f['import_mb']:.1f} | "
                f"{f['wall_s']:.2f} | {f['cpu_ms_per_mb']:.1f} | {f['peak_mb']:.0f} | "
                f"{f['presign_us']:.0f} |",
                flush=True,
            )
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=64)
    main(parser.parse_args().mb)
