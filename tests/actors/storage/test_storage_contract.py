"""One storage contract, two implementations: the local directory and an S3 bucket on the
real S3-compatible server the test command starts (S3Proxy; ``tests/s3_helpers.py``).

Create (as the export worker writes: a descriptor, or an upload in parts), size, load with
ranges, delete (idempotent), list, large files, concurrent writers, vanished keys, the
probe, presigned URLs, keys that are not the service's.
"""

from __future__ import annotations

import os
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from actors.core.ports.storage import ExportStorage, RemoteUpload
from actors.storage.keys import new_object_key
from actors.storage.local import LocalDirectoryStorage
from actors.storage.multipart_output import MultipartOutput
from actors.storage.s3 import S3Storage
from actors.storage.s3_client import S3PartUploader, open_client
from tests.s3_helpers import S3_TEST_URL, drop_bucket, incomplete_uploads, new_bucket, s3_config

MB = 1024 * 1024


@pytest.fixture(params=["local", "s3"])
async def storage(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ExportStorage]:
    if request.param == "local":
        yield LocalDirectoryStorage(tmp_path / "files")
        return
    bucket = await trio.to_thread.run_sync(new_bucket)
    try:
        yield S3Storage(s3_config(bucket))
    finally:
        await trio.to_thread.run_sync(drop_bucket, bucket)


def _write_sync(target: object, data: bytes, chunk: int) -> None:
    """What the export worker does with what ``create`` returned."""
    if isinstance(target, RemoteUpload):
        config = target.config
        out = MultipartOutput(
            S3PartUploader(open_client(config), config.bucket, target.key, target.content_type),
            config.part_size,
        )
        for i in range(0, len(data), chunk):
            out.write(data[i : i + chunk])
        out.commit()
        return
    f = target
    assert hasattr(f, "write")
    for i in range(0, len(data), chunk):
        f.write(data[i : i + chunk])  # type: ignore[attr-defined]
    f.flush()  # type: ignore[attr-defined]
    os.fsync(f.fileno())  # type: ignore[attr-defined]
    f.close()  # type: ignore[attr-defined]


async def put(storage: ExportStorage, key: str, data: bytes, chunk: int = 64 * 1024) -> None:
    target = await storage.create(key)
    await trio.to_thread.run_sync(_write_sync, target, data, chunk)


async def read(
    storage: ExportStorage, key: str, start: int = 0, length: int | None = None
) -> bytes:
    return b"".join([chunk async for chunk in storage.load(key, start, length)])


async def test_create_size_load_delete_round_trip(storage: ExportStorage) -> None:
    key = new_object_key(42)
    data = os.urandom(300_000)
    await put(storage, key, data)
    assert await storage.size(key) == len(data)
    assert await read(storage, key) == data
    assert await read(storage, key, 1000, 5000) == data[1000:6000]
    assert await read(storage, key, len(data) - 10) == data[-10:]
    assert await read(storage, key, 0, 0) == b""
    assert await storage.delete(key) is True
    assert await storage.size(key) is None
    assert await storage.delete(key) is False  # idempotent: a retried cleanup


async def test_a_file_of_many_parts_reads_back_whole_and_by_range(storage: ExportStorage) -> None:
    key = new_object_key(7)
    data = os.urandom(12 * MB + 12_345)  # three 5 MiB parts on S3, the last one short
    await put(storage, key, data, chunk=1 * MB + 17)
    assert await storage.size(key) == len(data)
    assert await read(storage, key) == data
    across = 5 * MB - 100  # a range over a part boundary
    assert await read(storage, key, across, 300) == data[across : across + 300]


async def test_the_listing_names_every_file_with_its_size(storage: ExportStorage) -> None:
    keys = [new_object_key(task) for task in (1, 1, 2)]
    for n, key in enumerate(keys):
        await put(storage, key, b"x" * (n + 1))
    listed = {obj.key: obj.size for obj in await storage.list_objects() if obj.complete}
    assert listed == {keys[0]: 1, keys[1]: 2, keys[2]: 3}


async def test_concurrent_writers_each_get_their_own_file(storage: ExportStorage) -> None:
    payloads = {new_object_key(task): os.urandom(200_000 + task) for task in range(8)}
    async with trio.open_nursery() as nursery:
        for key, data in payloads.items():
            nursery.start_soon(put, storage, key, data)
    for key, data in payloads.items():
        assert await read(storage, key) == data


async def test_a_vanished_key_has_no_size_and_cannot_be_loaded(storage: ExportStorage) -> None:
    key = new_object_key(9)
    assert await storage.size(key) is None
    with pytest.raises(FileNotFoundError):
        await read(storage, key)
    assert await storage.delete(key) is False


@pytest.mark.parametrize(
    "key", ["exports/1/../../etc/passwd", "other/1/a.xlsx", "exports/1/x.xlsx\n", ""]
)
async def test_a_key_that_is_not_the_services_is_refused_before_any_request(
    storage: ExportStorage, key: str
) -> None:
    with pytest.raises(ValueError, match="invalid object key"):
        await storage.size(key)
    with pytest.raises(ValueError, match="invalid object key"):
        await storage.delete(key)
    with pytest.raises(ValueError, match="invalid object key"):
        await storage.create(key)


async def test_the_probe_finds_the_storage_writable(storage: ExportStorage) -> None:
    probe = await storage.probe()
    assert probe.writable and probe.error is None
    if isinstance(storage, S3Storage):
        assert probe.free_bytes is None  # a bucket has no free space to tell
    else:
        assert probe.free_bytes is not None and probe.free_bytes > 0


async def test_a_download_url_names_the_file_where_the_storage_has_urls(
    storage: ExportStorage,
) -> None:
    key = new_object_key(5)
    data = os.urandom(50_000)
    await put(storage, key, data)
    url = await storage.download_url(key, "订单 2026.xlsx", 60)
    if isinstance(storage, LocalDirectoryStorage):
        assert url is None
        return
    assert url is not None

    def fetch() -> tuple[bytes, str]:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.read(), answer.headers["Content-Disposition"]

    body, disposition = await trio.to_thread.run_sync(fetch)
    assert body == data
    assert "filename*=UTF-8''%E8%AE%A2%E5%8D%95%202026.xlsx" in disposition


async def test_an_incomplete_upload_is_listed_and_a_delete_aborts_it(tmp_path: Path) -> None:
    bucket = await trio.to_thread.run_sync(new_bucket)
    try:
        storage = S3Storage(s3_config(bucket))
        key = new_object_key(11)
        target = await storage.create(key)
        assert isinstance(target, RemoteUpload)

        def start_and_die() -> None:  # a worker killed after its first part
            config = target.config
            uploader = S3PartUploader(open_client(config), bucket, key, target.content_type)
            uploader.upload(1, b"p" * config.part_size)

        await trio.to_thread.run_sync(start_and_die)
        listed = await storage.list_objects()
        assert [(obj.key, obj.complete) for obj in listed] == [(key, False)]
        assert await trio.to_thread.run_sync(incomplete_uploads, bucket) == [key]
        assert await storage.delete(key) is False  # no object, but the upload is gone
        assert await trio.to_thread.run_sync(incomplete_uploads, bucket) == []
    finally:
        await trio.to_thread.run_sync(drop_bucket, bucket)


async def test_a_public_endpoint_names_the_host_browsers_use_and_still_verifies() -> None:
    """The service reaches the store at 127.0.0.1; browsers by another name (here
    ``localhost``, the same server): the URL carries that host, signed for it."""
    bucket = await trio.to_thread.run_sync(new_bucket)
    try:
        public = S3_TEST_URL.replace("127.0.0.1", "localhost")
        assert public != S3_TEST_URL
        storage = S3Storage(s3_config(bucket, public_endpoint=public))
        key = new_object_key(12)
        await put(storage, key, b"hello")
        url = await storage.download_url(key, "a.xlsx", 60)
        assert url is not None and url.startswith(public + "/")

        def fetch() -> bytes:
            with urllib.request.urlopen(url, timeout=10) as answer:
                return bytes(answer.read())

        assert await trio.to_thread.run_sync(fetch) == b"hello"
    finally:
        await trio.to_thread.run_sync(drop_bucket, bucket)
