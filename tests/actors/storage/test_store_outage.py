"""The object store goes away and comes back (issue 35 items 3 and 4), on the real S3
server reached through a relay the test cuts (tests/tcp_relay.py):

* a download while the store is unreachable answers HTTP 503 with ``Retry-After`` and
  words for people, not a 500;
* a run that meets the failing store mid-upload fails as transient; its retry waits
  PENDING (no attempt is spent) while the store is down, and the list says why;
* once the store answers, the export runs again and finishes by itself, and the dead
  attempt's incomplete upload is aborted at the reconciler's next pass — no upload
  outlives its run; the bucket holds exactly one object per finished export.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import trio

from tests.helpers import (
    API,
    client_for,
    make_settings,
    metric_value,
    running_service,
    wait_for_status,
)
from tests.provider_server import (
    GATED_SERVICE,
    BatchBody,
    cursor_rows,
    gated_demo_registry,
    gated_demo_table,
    serve_provider,
)
from tests.s3_helpers import (
    S3_TEST_URL,
    drop_bucket,
    incomplete_uploads,
    new_bucket,
    object_keys,
    s3_settings,
)
from tests.tcp_relay import tcp_relay

BIG = 200_000  # rows: a file of several 5 MB parts, so the upload is a multipart one
HOLD_AT = 190_000  # the big run is held here, its second part already uploaded


@pytest.fixture
async def bucket() -> AsyncIterator[str]:
    name = await trio.to_thread.run_sync(new_bucket)
    yield name
    await trio.to_thread.run_sync(drop_bucket, name)


#: The consumer's count of commands and rounds that let a task wait for the storage.
WAITED = 'export_consumer_no_claim_total{reason="storage_unavailable"}'


async def until(condition: object, what: str, timeout: float = 30) -> None:
    """Wait for ``condition()`` (a bounded condition wait)."""
    with trio.fail_after(timeout):
        while not await condition():  # type: ignore[operator]
            await trio.sleep(0.05)


async def test_a_store_outage_is_waited_out_and_leaves_nothing_behind(
    tmp_path: Path, bucket: str
) -> None:
    registry = tmp_path / "registry.yaml"
    registry.write_text(gated_demo_registry(batch_size=1000))
    held, release = trio.Event(), trio.Event()

    async def gate(body: BatchBody) -> None:
        if body["parameters"].get("rowCount") == BIG and cursor_rows(body) >= HOLD_AT:
            held.set()
            await release.wait()

    s3 = urlsplit(S3_TEST_URL)
    async with (
        tcp_relay(s3.hostname or "127.0.0.1", s3.port or 80) as relay,
        serve_provider(gated_demo_table(gate)) as provider_url,
    ):
        settings = make_settings(
            tmp_path,
            **{**s3_settings(bucket), "s3_endpoint": f"http://127.0.0.1:{relay.port}"},
            registry=registry,
            provider_urls={GATED_SERVICE: provider_url},
            internal_service_token="gated-provider-token",
            retry_backoff_seconds=[0.2],
            metrics_sample_seconds=0.2,
            reconciler_poll_ms=300,
            consumer_concurrency=1,
            consumer_poll_ms=100,
        )
        async with running_service(settings) as rt, client_for(rt) as c:

            async def create(rows: int) -> str:
                body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": rows}}
                return str((await c.post(API, json=body)).json()["data"]["id"])

            async def task(task_id: str) -> dict:
                return dict((await c.get(f"{API}/{task_id}")).json()["data"])

            small = await create(50)
            assert (await wait_for_status(c, small, "SUCCEEDED", "FAILED"))["status"] == (
                "SUCCEEDED"
            )
            big = await create(BIG)
            with trio.fail_after(60):
                await held.wait()
            assert await trio.to_thread.run_sync(incomplete_uploads, bucket) != []

            # The store goes away in the middle of the big run's upload; once the probe
            # has seen it, the run goes on and meets it.
            relay.cut()

            async def storage_down() -> bool:
                details = (await c.get("/healthz/details")).json()
                return bool(details["components"]["storage"]["status"] == "down")

            await until(storage_down, "the probe says the store is down")

            release.set()

            async def retry_waits() -> bool:
                seen = await task(big)
                return seen["status"] == "PENDING" and seen["attemptCount"] >= 1

            await until(retry_waits, "the attempt failed as transient, its retry waits")
            failed_attempt = await task(big)
            assert "storage" in (failed_attempt["failureMessage"] or "").lower(), failed_attempt

            # A download now: 503 with Retry-After and words, not a 500.
            answer = await c.get(f"{API}/{small}/download")
            assert answer.status_code == 503 and answer.headers["Retry-After"] == "5"
            assert answer.json()["message"] == (
                "the file storage cannot be reached right now; please try again in a moment"
            )
            page = (await c.get(API)).json()["data"]
            assert page["waiting"]["reason"] == "storage-unavailable"

            # While it is down the retry is not claimed: its command was let wait (the
            # consumer's count says so), and the attempt count at the end shows that no
            # attempt was spent meanwhile.
            async def storage_waited() -> bool:
                return metric_value((await c.get("/metrics")).text, WAITED) >= 1

            await until(storage_waited, "the retry's command was let wait for the storage")
            assert (await task(big))["attemptCount"] == failed_attempt["attemptCount"]

            # The store comes back: the export runs again and finishes by itself, and
            # nothing of the dead attempt stays in the bucket.
            relay.heal()
            done = await wait_for_status(c, big, "SUCCEEDED", "FAILED", timeout=90)
            assert done["status"] == "SUCCEEDED", done
            assert done["attemptCount"] == failed_attempt["attemptCount"] + 1

            async def no_upload_left() -> bool:
                return not await trio.to_thread.run_sync(incomplete_uploads, bucket)

            await until(no_upload_left, "the dead attempt's upload is aborted", timeout=30)

            # A probe put during the cut may have landed with its answer lost; the next
            # probe deletes it. (A live probe's object exists for milliseconds: the wait
            # sees a moment without one.)
            async def no_probe_left() -> bool:
                keys = await trio.to_thread.run_sync(object_keys, bucket)
                return not any(k.startswith(".probe/") for k in keys)

            await until(no_probe_left, "the probe objects of the outage are deleted")
            keys = await trio.to_thread.run_sync(object_keys, bucket)
            exports = [k.split("/")[1] for k in keys if k.startswith("exports/")]
            assert sorted(exports) == sorted([small, big]), keys
            assert (await c.get(API)).json()["data"]["waiting"] is None
            download = await c.get(f"{API}/{small}/download")
            assert download.status_code == 200 and download.content[:2] == b"PK"
