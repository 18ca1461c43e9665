"""Object-store faults are outcomes, not crashes (issue 25 item 6): wrong credentials, a
missing bucket, an endpoint that is not there, a throttling or failing server.

The probe answers in words naming the setting to fix; a call that fails raises the
transient ``StorageUnavailableError`` (the attempt is retried); a service started against
a missing bucket runs, reports its storage degraded on ``/healthz/details`` and fails the
export's attempts with that precise message instead of crash-looping.
"""

from __future__ import annotations

import socket
import socketserver
import uuid
from collections.abc import AsyncIterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
import trio
from botocore.exceptions import ConnectionClosedError

from actors.core.errors import StorageUnavailableError, TransientExportError
from actors.storage.keys import new_object_key
from actors.storage.s3 import S3Storage
from actors.storage.s3_client import MAX_ATTEMPTS, S3PartUploader, open_client
from tests.helpers import (
    API,
    client_for,
    make_settings,
    metric_value,
    running_service,
    wait_for_status,
)
from tests.s3_helpers import (
    admin_client,
    drop_bucket,
    new_bucket,
    object_keys,
    s3_config,
    s3_settings,
)
from tests.servers import serving_in_thread


@pytest.fixture
async def bucket() -> AsyncIterator[str]:
    name = await trio.to_thread.run_sync(new_bucket)
    yield name
    await trio.to_thread.run_sync(drop_bucket, name)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"access_key_id": "nobody"}, "access key is unknown to the server"),
        ({"secret_access_key": "wrong-secret"}, "secret key is wrong"),
        ({"bucket": "no-such-bucket-here"}, "bucket does not exist (FILE_EXPORT_S3_BUCKET)"),
    ],
)
async def test_the_probe_names_the_wrong_setting(
    bucket: str, overrides: dict[str, str], says: str
) -> None:
    probe = await S3Storage(s3_config(**{"bucket": bucket, **overrides})).probe()
    assert not probe.writable and probe.free_bytes is None
    assert probe.error is not None and says in probe.error, probe.error


async def test_an_endpoint_that_is_not_there_is_unreachable_not_a_crash() -> None:
    storage = S3Storage(s3_config("any", endpoint=f"http://127.0.0.1:{free_port()}"))
    probe = await storage.probe()
    assert not probe.writable
    assert probe.error is not None and "unreachable" in probe.error, probe.error
    with pytest.raises(StorageUnavailableError, match="storage size failed .* unreachable"):
        await storage.size(new_object_key(1))


class AnswerLost:
    """A real S3 client whose next put lands but whose answer is lost with the connection,
    and whose calls then fail until :attr:`down` is cleared: the store went away between
    the probe's put and its delete (the store-outage test met exactly this)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.lose_next_put = True
        self.down = False

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._client, name)

        def call(**kwargs: Any) -> Any:
            if self.down:
                raise ConnectionClosedError(endpoint_url="http://store")
            answer = real(**kwargs)
            if name == "put_object" and self.lose_next_put:
                self.lose_next_put, self.down = False, True
                raise ConnectionClosedError(endpoint_url="http://store")
            return answer

        return call


async def test_a_probe_object_whose_answer_was_lost_is_deleted_by_the_next_probe(
    bucket: str,
) -> None:
    config = s3_config(bucket)
    client = AnswerLost(open_client(config))
    storage = S3Storage(config, client=client)
    assert not (await storage.probe()).writable
    left = await trio.to_thread.run_sync(object_keys, bucket)
    assert len(left) == 1 and left[0].startswith(".probe/"), left

    client.down = False  # the store is back
    assert (await storage.probe()).writable
    assert await trio.to_thread.run_sync(object_keys, bucket) == []


class _Throttling(BaseHTTPRequestHandler):
    """An S3 endpoint that answers every request with 503 SlowDown (or 500)."""

    status = 503
    code = "SlowDown"
    seen = 0

    def _answer(self) -> None:
        type(self).seen += 1
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        body = (
            f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{self.code}</Code>"
            f"<Message>Please reduce your request rate.</Message></Error>"
        ).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize(
    ("status", "code", "says"),
    [
        (503, "SlowDown", "throttling or unavailable [SlowDown, HTTP 503"),
        (500, "InternalError", "the object store failed [InternalError, HTTP 500"),
    ],
)
def test_a_throttling_or_failing_server_is_retried_then_a_transient_error(
    status: int, code: str, says: str
) -> None:
    handler = type("Handler", (_Throttling,), {"status": status, "code": code, "seen": 0})
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    with serving_in_thread(server) as url:
        config = s3_config("bucket", endpoint=url)
        uploader = S3PartUploader(open_client(config), "bucket", "exports/1/a.xlsx", "x")
        with pytest.raises(StorageUnavailableError) as caught:
            uploader.upload(1, b"part")
    assert isinstance(caught.value, TransientExportError)  # retried with backoff
    assert says in str(caught.value), caught.value
    assert str(caught.value).startswith("storage upload failed for exports/1/a.xlsx: ")
    assert 1 < handler.seen <= MAX_ATTEMPTS + 1  # botocore retried before giving up


async def test_a_service_on_a_missing_bucket_waits_says_why_and_runs_once_it_exists(
    tmp_path: Path,
) -> None:
    """Issue 35 item 3: a setting error of the store (here a bucket nobody made) does not
    burn the attempts of every export: the instance claims nothing while its probe fails,
    the task waits PENDING at attempt 0, the list says why, and the export runs by itself
    once the probe passes (the bucket is made)."""
    name = f"ec-test-late-{uuid.uuid4().hex[:16]}"
    settings = make_settings(
        tmp_path,
        **s3_settings(name),
        retry_backoff_seconds=[0.2],
        metrics_sample_seconds=0.2,
        consumer_concurrency=1,
        consumer_poll_ms=100,
    )
    try:
        async with running_service(settings) as rt, client_for(rt) as c:
            with trio.fail_after(20):
                while True:
                    details = (await c.get("/healthz/details")).json()
                    storage = details["components"].get("storage")
                    if storage is not None and storage["status"] == "down":
                        break
                    await trio.sleep(0.05)
            assert "bucket does not exist (FILE_EXPORT_S3_BUCKET)" in storage["detail"], storage
            assert (await c.get("/healthz")).status_code == 200  # serving, not crash-looping
            metrics = (await c.get("/metrics")).text
            assert "export_storage_writable 0.0" in metrics
            assert "export_storage_free_bytes NaN" in metrics  # the low-space alert is silent

            created = (
                await c.post(
                    API, json={"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 10}}
                )
            ).json()
            task_id = created["data"]["id"]
            # The slot saw the command and let it wait (its no-claim counter says why) ...
            waited = 'export_consumer_no_claim_total{reason="storage_unavailable"}'
            with trio.fail_after(20):
                while metric_value((await c.get("/metrics")).text, waited) < 1:
                    await trio.sleep(0.05)
            page = (await c.get(API)).json()["data"]
            task = (await c.get(f"{API}/{task_id}")).json()["data"]
            assert task["status"] == "PENDING" and task["attemptCount"] == 0, task
            assert page["waiting"]["reason"] == "storage-unavailable", page
            assert "file storage cannot be reached" in page["waiting"]["message"]

            # ... and runs it once the store works: nothing to do again by hand.
            await trio.to_thread.run_sync(lambda: admin_client().create_bucket(Bucket=name))
            task = await wait_for_status(c, task_id, "SUCCEEDED", "FAILED", timeout=30)
            assert task["status"] == "SUCCEEDED" and task["attemptCount"] == 1, task
            assert (await c.get(API)).json()["data"]["waiting"] is None
    finally:
        await trio.to_thread.run_sync(drop_bucket, name)


async def test_a_redirect_is_only_given_for_a_file_the_bucket_has(
    tmp_path: Path, bucket: str
) -> None:
    """Redirect mode answers 302 to a presigned URL; for an object gone from the bucket it
    answers the service's envelope (404, "missing from storage"), not a redirect to the
    bucket's XML error."""
    settings = make_settings(
        tmp_path,
        **s3_settings(bucket),
        download_mode="redirect",
        consumer_concurrency=1,
    )
    async with running_service(settings) as rt, client_for(rt) as c:
        created = (
            await c.post(API, json={"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 20}})
        ).json()
        task = await wait_for_status(c, created["data"]["id"], "SUCCEEDED")
        answer = await c.get(f"{API}/{task['id']}/download")
        assert answer.status_code == 302 and "X-Amz-Signature" in answer.headers["Location"]
        key = next(iter(await trio.to_thread.run_sync(object_keys, bucket)))
        await trio.to_thread.run_sync(lambda: admin_client().delete_object(Bucket=bucket, Key=key))
        gone = await c.get(f"{API}/{task['id']}/download")
        assert gone.status_code == 200 and "Location" not in gone.headers
        assert gone.json()["code"] == "404"
        assert gone.json()["message"] == "the export file is missing from storage"
