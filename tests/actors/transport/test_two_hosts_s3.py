"""Several hosts, proven: instances that share MariaDB, RocketMQ and an S3 bucket but each
have a data directory of their own, as on separate hosts (issue 25).

Real ``export-center serve`` processes, the real broker, the real S3-compatible server of
the test command (S3Proxy), wall-clock time. Instance A runs every export (B and C run no
consumers); B runs the reconciler and streams downloads; C answers downloads with a
redirect to a presigned URL. Run with ``-s`` to see the figures.
"""

from __future__ import annotations

import io
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import openpyxl
import pytest
import trio

from actors.core.models import TaskStatus
from db.store import ExportStore
from tests.actors.transport.service_rocketmq_helpers import process_env
from tests.helpers import API, MYSQL_TEST_URL
from tests.processes import ServeProcess
from tests.processes import process_client as client
from tests.s3_helpers import (
    S3_TEST_KEY,
    S3_TEST_SECRET,
    S3_TEST_URL,
    drop_bucket,
    incomplete_uploads,
    new_bucket,
    object_keys,
)
from tests.servers import Broker

#: the file expires this long after A finishes it (FILE_EXPORT_RETENTION_DAYS, in days)
RETENTION_SECONDS = 25


@pytest.fixture
async def bucket() -> AsyncIterator[str]:
    name = await trio.to_thread.run_sync(new_bucket)
    yield name
    await trio.to_thread.run_sync(drop_bucket, name)


REGISTRY = Path(__file__).resolve().parents[3] / "actors" / "defaults" / "registry.yaml"


def big_registry(tmp_path: Path) -> Path:
    """The built-in registry with room for 500,000 rows a file (~36 MB, seven parts): A
    is still uploading for seconds after its first part went up."""
    text = REGISTRY.read_text()
    assert "max-rows: 200000" in text and "maximum: 200000" in text
    path = tmp_path / "registry.yaml"
    bigger = text.replace("max-rows: 200000", "max-rows: 500000")
    path.write_text(bigger.replace("maximum: 200000", "maximum: 500000"))  # rowCount's bound
    return path


def host_env(broker: Broker, bucket: str, registry: Path, **extra: str) -> dict[str, str]:
    return {
        **process_env(broker),
        "FILE_EXPORT_REGISTRY": str(registry),
        "FILE_EXPORT_DATABASE_URL": MYSQL_TEST_URL,
        "FILE_EXPORT_STORAGE": "s3",
        "FILE_EXPORT_S3_ENDPOINT": S3_TEST_URL,
        "FILE_EXPORT_S3_BUCKET": bucket,
        "FILE_EXPORT_S3_ACCESS_KEY_ID": S3_TEST_KEY,
        "FILE_EXPORT_S3_SECRET_ACCESS_KEY": S3_TEST_SECRET,
        "FILE_EXPORT_S3_PART_SIZE_MB": "5",
        "FILE_EXPORT_TASK_LEASE_SECONDS": "4",
        "FILE_EXPORT_RETENTION_DAYS": str(RETENTION_SECONDS / 86400),
        "FILE_EXPORT_WORKER_NICE": "0",
        **extra,
    }


def rows_of(body: bytes) -> list[tuple]:
    book = openpyxl.load_workbook(io.BytesIO(body), read_only=True)
    values = [row for sheet in book.worksheets for row in sheet.values]
    book.close()
    return values


async def test_three_hosts_share_one_bucket_downloads_expiry_and_a_killed_upload(
    tmp_path: Path,
    rocketmq_broker: Broker,
    bucket: str,
    mysql_store: ExportStore,
) -> None:
    registry = big_registry(tmp_path)
    a = ServeProcess(
        tmp_path / "host-a",
        tmp_path / "a.log",
        **host_env(rocketmq_broker, bucket, registry, FILE_EXPORT_RECONCILER_ENABLED="false"),
    )
    b = ServeProcess(
        tmp_path / "host-b",
        tmp_path / "b.log",
        **host_env(rocketmq_broker, bucket, registry, FILE_EXPORT_CONSUMER_ENABLED="false"),
    )
    c = ServeProcess(
        tmp_path / "host-c",
        tmp_path / "c.log",
        **host_env(
            rocketmq_broker,
            bucket,
            registry,
            FILE_EXPORT_CONSUMER_ENABLED="false",
            FILE_EXPORT_RECONCILER_ENABLED="false",
            FILE_EXPORT_DOWNLOAD_MODE="redirect",
            FILE_EXPORT_DOWNLOAD_URL_SECONDS="60",
        ),
    )
    try:
        url_a, url_b, url_c = await a.ready(60), await b.ready(60), await c.ready(60)

        # 1. An export created on B, run and uploaded by A.
        async with client(url_b) as cb:
            r = (
                await cb.post(
                    API, json={"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 3000}}
                )
            ).json()
        small = r["data"]["id"]
        with trio.fail_after(60):
            while (task := await mysql_store.get_task(int(small))).status != TaskStatus.SUCCEEDED:
                assert task.status in (TaskStatus.PENDING, TaskStatus.RUNNING), task
                await trio.sleep(0.1)
        finished_at = trio.current_time()
        assert task.object_key is not None
        assert await trio.to_thread.run_sync(object_keys, bucket) == [task.object_key]
        for host in ("host-a", "host-b", "host-c"):  # nothing on any host's own disk
            assert not list((tmp_path / host).rglob("*.xlsx")), host

        async def download_from_b_and_c() -> bytes:
            async with client(url_b) as cb:
                streamed = await cb.get(f"{API}/{small}/download")
                assert streamed.status_code == 200, streamed.text
                tail = await cb.get(f"{API}/{small}/download", headers={"Range": "bytes=-100"})
                assert tail.status_code == 206 and tail.content == streamed.content[-100:]
            async with client(url_c) as cc:
                redirect = await cc.get(f"{API}/{small}/download")
            assert redirect.status_code == 302, redirect.text
            location = redirect.headers["Location"]
            assert location.startswith(S3_TEST_URL) and "X-Amz-Signature" in location
            async with httpx.AsyncClient(timeout=10) as browser:  # no token: the URL is it
                fetched = await browser.get(location)
            assert fetched.status_code == 200
            assert fetched.content == streamed.content
            assert "filename*=UTF-8''" in fetched.headers["Content-Disposition"]
            return streamed.content

        body = await download_from_b_and_c()
        values = rows_of(body)
        assert len(values) == 3001 and values[0][0] is not None

        # 2. A killed with SIGKILL mid-upload: B's reconciler recovers the lease and
        #    leaves neither an object nor an incomplete upload of that run.
        async with client(url_a) as ca:
            r = (
                await ca.post(
                    API, json={"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 500_000}}
                )
            ).json()
        big = int(r["data"]["id"])
        with trio.fail_after(90):
            while True:
                running = await mysql_store.get_task(big)
                key = running.object_key
                if key and key in await trio.to_thread.run_sync(incomplete_uploads, bucket):
                    break
                assert running.status in (TaskStatus.PENDING, TaskStatus.RUNNING), running
                await trio.sleep(0.05)
        a.proc.send_signal(signal.SIGKILL)
        killed_at = trio.current_time()
        assert await a.wait() == -signal.SIGKILL
        with trio.fail_after(60):
            while (await mysql_store.get_task(big)).dispatch_version == running.dispatch_version:
                await trio.sleep(0.1)
            while key in await trio.to_thread.run_sync(incomplete_uploads, bucket):
                await trio.sleep(0.1)
        cleaned_at = trio.current_time()
        assert await trio.to_thread.run_sync(incomplete_uploads, bucket) == []
        assert key not in await trio.to_thread.run_sync(object_keys, bucket)

        # 3. A's finished file outlives A.
        assert await download_from_b_and_c() == body

        # 4. Expiry run by B deletes the object A wrote.
        with trio.fail_after(RETENTION_SECONDS + 60):
            while (await mysql_store.get_task(int(small))).status != TaskStatus.EXPIRED:
                await trio.sleep(0.2)
        expired_at = trio.current_time()
        assert task.object_key not in await trio.to_thread.run_sync(object_keys, bucket)
        async with client(url_c) as cc:
            gone = await cc.get(f"{API}/{small}/download")
        assert gone.json()["code"] == "410"  # a business outcome: HTTP 200, envelope 410
        print(
            f"\n[two hosts] 3,000 rows by A, downloaded from B (stream, range) and C "
            f"(presigned redirect); A killed mid-upload: lease recovered and upload aborted "
            f"{cleaned_at - killed_at:.1f} s after SIGKILL (lease 4 s); expired by B "
            f"{expired_at - finished_at:.1f} s after success (retention {RETENTION_SECONDS} s)"
        )
    finally:
        for process in (a, b, c):
            process.close()
