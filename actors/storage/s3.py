"""Export file storage in an S3-compatible bucket (``FILE_EXPORT_STORAGE=s3``): what
several instances on several hosts share.

The same port as the local directory (:class:`~actors.core.ports.storage.ExportStorage`)
and the same service-generated keys (:mod:`actors.core.object_keys`), validated before
any request. Writing is the export worker's: :meth:`S3Storage.create` only hands it the
:class:`~actors.core.ports.storage.RemoteUpload`, and the worker uploads while it writes
(:mod:`actors.storage.multipart_output`). This side reads (with ranges), lists, deletes,
probes and presigns.

A delete leaves nothing of the key: it aborts the key's incomplete multipart uploads (a
worker killed mid-upload leaves one) and deletes the object; either missing is not an
error. The listing the reconciler's orphan scan walks includes incomplete uploads
(``complete`` False) so uploads no run holds any more are aborted too.

Calls are blocking botocore calls run in worker threads (``trio.to_thread``), so the
event loop keeps renewing leases and serving HTTP. A failure is a
:class:`~actors.core.errors.StorageUnavailableError` naming what went wrong
(:func:`actors.storage.s3_client.describe`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any, TypeVar

import trio

from actors.core.object_keys import (
    OBJECT_KEY_PATTERN,
    PROBE_PREFIX,
    XLSX_CONTENT_TYPE,
    is_probe_key,
    probe_key,
    validate_object_key,
    validate_stored_key,
)
from actors.core.ports.storage import ObjectStoreConfig, RemoteUpload, StorageProbe, StoredObject
from actors.core.text import content_disposition
from actors.storage.offload import Offload
from actors.storage.s3_client import (
    PROBE_READ_TIMEOUT,
    S3_ERRORS,
    describe,
    is_missing,
    open_client,
    storage_error,
)

_CHUNK = 256 * 1024
_PREFIX = "exports/"
_T = TypeVar("_T")


class S3Storage:
    """``ExportStorage`` in a bucket.

    Args:
        config: the bucket and how to reach it (``Settings.object_store``).
        offload: runs a blocking call off the event loop (``trio.to_thread.run_sync``).
        client: a botocore S3 client; default one made from ``config``.
    """

    def __init__(
        self,
        config: ObjectStoreConfig,
        offload: Offload = trio.to_thread.run_sync,
        client: Any = None,
    ) -> None:
        self.config = config
        self._bucket = config.bucket
        self._client = client if client is not None else open_client(config)
        # The probe answers within seconds even when the store hangs (one try, short reads).
        self._probe_client = (
            client
            if client is not None
            else open_client(config, read_timeout=PROBE_READ_TIMEOUT, attempts=1)
        )
        # Presigning is local arithmetic, but the URL's host is signed: browsers must be
        # given the address they reach the store by.
        self._signer = (
            open_client(replace(config, endpoint=config.public_endpoint))
            if config.public_endpoint
            else self._client
        )
        self._offload = offload
        # Probe keys whose put may have landed but whose delete did not happen (an answer
        # lost with the connection): deleted by the next probe, before its own put.
        self._unsure_probe_keys: set[str] = set()

    async def _call(
        self, op: str, key: str, fn: Callable[..., _T], *, missing_ok: bool = False, **kwargs: Any
    ) -> _T | None:
        """``fn(Bucket=…, **kwargs)`` off the event loop; ``None`` when ``missing_ok`` and
        the object or upload does not exist.

        Raises:
            StorageUnavailableError: any other failure, in words.
        """
        try:
            return await self._offload(lambda: fn(Bucket=self._bucket, **kwargs))
        except S3_ERRORS as exc:
            if missing_ok and is_missing(exc):
                return None
            raise storage_error(op, key, exc, self._bucket) from exc

    async def create(self, key: str) -> RemoteUpload:
        """The upload the export worker carries out; nothing is sent yet."""
        return RemoteUpload(self.config, validate_object_key(key), XLSX_CONTENT_TYPE)

    async def size(self, key: str) -> int | None:
        validate_object_key(key)
        head = await self._call("size", key, self._client.head_object, missing_ok=True, Key=key)
        return None if head is None else int(head["ContentLength"])

    async def load(
        self, key: str, start: int = 0, length: int | None = None
    ) -> AsyncIterator[bytes]:
        validate_object_key(key)
        if length == 0:
            return
        end = "" if length is None else str(start + length - 1)
        answer = await self._call(
            "read",
            key,
            self._client.get_object,
            missing_ok=True,
            Key=key,
            Range=f"bytes={start}-{end}",
        )
        if answer is None:
            raise FileNotFoundError(key)
        body = answer["Body"]
        try:
            while chunk := await self._offload(body.read, _CHUNK):
                yield chunk
        except S3_ERRORS as exc:
            raise storage_error("read", key, exc, self._bucket) from exc
        finally:
            body.close()

    async def delete(self, key: str) -> bool:
        """Abort the key's incomplete uploads, then delete the object; True if the object
        existed. Missing either is not an error. A probe's object may be deleted too."""
        validate_stored_key(key)
        uploads = await self._call("delete", key, self._client.list_multipart_uploads, Prefix=key)
        for upload in (uploads or {}).get("Uploads", []):
            if upload["Key"] == key:  # aborted meanwhile (missing) is fine
                await self._call(
                    "delete",
                    key,
                    self._client.abort_multipart_upload,
                    missing_ok=True,
                    Key=key,
                    UploadId=upload["UploadId"],
                )
        existed = await self.size(key) is not None
        await self._call("delete", key, self._client.delete_object, Key=key)
        return existed

    async def list_objects(self) -> list[StoredObject]:
        """Every object under ``exports/`` with a service key, then every incomplete
        upload under it (``complete`` False, size 0, the time it started), then the probe
        objects under ``.probe/`` (a killed probe's leftovers, for the orphan scan)."""
        found: list[StoredObject] = []

        def _walk() -> None:
            pages = self._client.get_paginator("list_objects_v2")
            for prefix in (_PREFIX, PROBE_PREFIX):
                for page in pages.paginate(Bucket=self._bucket, Prefix=prefix):
                    for item in page.get("Contents", []):
                        found.append(
                            StoredObject(
                                item["Key"], int(item["Size"]), item["LastModified"].timestamp()
                            )
                        )
            uploads = self._client.get_paginator("list_multipart_uploads")
            for page in uploads.paginate(Bucket=self._bucket, Prefix=_PREFIX):
                for item in page.get("Uploads", []):
                    found.append(StoredObject(item["Key"], 0, item["Initiated"].timestamp(), False))

        try:
            await self._offload(_walk)
        except S3_ERRORS as exc:
            raise storage_error("list", _PREFIX, exc, self._bucket) from exc
        return [
            obj for obj in found if OBJECT_KEY_PATTERN.fullmatch(obj.key) or is_probe_key(obj.key)
        ]

    async def download_url(self, key: str, file_name: str, seconds: int) -> str:
        """A presigned GET URL valid ``seconds``, whose answer names the file
        ``file_name`` (``response-content-disposition``). Signing is local: no request."""
        validate_object_key(key)
        params = {
            "Bucket": self._bucket,
            "Key": key,
            "ResponseContentDisposition": content_disposition(file_name),
            "ResponseContentType": XLSX_CONTENT_TYPE,
        }
        url: str = self._signer.generate_presigned_url(
            "get_object", Params=params, ExpiresIn=seconds
        )
        return url

    async def probe(self) -> StorageProbe:
        """Put, read back and delete a small object under ``.probe/`` (a name of this
        process's own). Never raises; ``free_bytes`` is ``None``: a bucket has no free
        space to tell (``export_storage_free_bytes`` is meaningless here).

        A put whose answer is lost may still have landed, so a probe that could not
        delete its object remembers the key and the next probe deletes it first (deleting
        a missing key is not an error in S3). The orphan scan sweeps what a killed
        process left (``actors/core/orphans.py``)."""
        key = probe_key(os.getpid(), uuid.uuid4().hex)
        payload = uuid.uuid4().bytes
        unsure = self._unsure_probe_keys

        def _probe() -> StorageProbe:
            client = self._probe_client
            try:
                for left in sorted(unsure):
                    client.delete_object(Bucket=self._bucket, Key=left)
                    unsure.discard(left)
                unsure.add(key)
                client.put_object(Bucket=self._bucket, Key=key, Body=payload)
                try:
                    got = client.get_object(Bucket=self._bucket, Key=key)["Body"].read()
                finally:
                    client.delete_object(Bucket=self._bucket, Key=key)
                    unsure.discard(key)
            except S3_ERRORS as exc:
                return StorageProbe(False, None, describe(exc, self._bucket))
            if got != payload:
                return StorageProbe(False, None, "the probe object read back differently")
            return StorageProbe(True, None)

        try:
            return await self._offload(_probe)
        except Exception as exc:  # a bug or an unexpected error: the answer, not a raise
            return StorageProbe(False, None, f"{type(exc).__name__}: {exc}")
