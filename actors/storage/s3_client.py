"""The S3 client both sides use: the export worker uploading a run's file, the service
(:mod:`actors.storage.s3`) reading, listing, deleting and presigning.

boto3 (botocore) is the client: it uploads parts by explicit number, lists and aborts
incomplete uploads and presigns URLs, all public API (docs/operations.md, "Object
storage", tells how it was chosen). It is blocking: the worker calls it from its one
thread, the service from worker threads (``trio.to_thread``). It is imported only when S3
is configured.

Every failure of a call becomes a :class:`~actors.core.errors.StorageUnavailableError`:
transient, so the attempt is retried with backoff like a full disk, with a message that
says what went wrong in words (unreachable, throttled, wrong credentials, no such bucket)
and the server's code. botocore itself retries throttling and 5xx answers a few times
first (its "standard" retry mode).
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    NoCredentialsError,
)
from botocore.exceptions import (
    ConnectionError as BotoConnectionError,
)

from actors.core.errors import StorageUnavailableError
from actors.core.ports.storage import ObjectStoreConfig

#: botocore's attempts per call (the first included), standard mode: throttling (503
#: SlowDown) and 5xx answers are retried with jittered backoff before we see them.
MAX_ATTEMPTS = 3
#: Seconds to connect; seconds a read may stall.
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 60.0
#: Seconds a probe's read may stall: a store that accepts connections and never answers
#: (a proxy or load balancer in front of one that is cut off) must read as down in
#: seconds, not after three reads of a minute each.
PROBE_READ_TIMEOUT = 5.0

#: The server's error codes that mean the settings are wrong, with what to do.
_SETTINGS_CODES = {
    "InvalidAccessKeyId": "the access key is unknown to the server (FILE_EXPORT_S3_ACCESS_KEY_ID)",
    "SignatureDoesNotMatch": "the secret key is wrong (FILE_EXPORT_S3_SECRET_ACCESS_KEY)",
    "AccessDenied": "access denied: the credentials may not use this bucket",
    "NoSuchBucket": "the bucket does not exist (FILE_EXPORT_S3_BUCKET)",
    "AuthorizationHeaderMalformed": "the signing region is wrong (FILE_EXPORT_S3_REGION)",
    "PermanentRedirect": "the bucket is in another region or needs another endpoint",
}


def open_client(
    config: ObjectStoreConfig, *, read_timeout: float = READ_TIMEOUT, attempts: int = MAX_ATTEMPTS
) -> Any:
    """A botocore S3 client for ``config`` (thread-safe; one per process is enough).

    Checksums are sent only where the API requires them: botocore's newer default (a
    CRC on every upload) is refused by several S3-compatible servers.

    Args:
        config: the bucket and how to reach it.
        read_timeout: seconds a read may stall.
        attempts: botocore's attempts per call, the first included.
    """
    session = boto3.session.Session()
    return session.client(
        "s3",
        endpoint_url=config.endpoint,
        region_name=config.region,
        aws_access_key_id=config.access_key_id,
        aws_secret_access_key=config.secret_access_key,
        verify=config.ca_bundle if config.ca_bundle else True,
        config=Config(
            signature_version="s3v4",
            s3={"addressing_style": config.addressing},
            retries={"mode": "standard", "max_attempts": attempts},
            connect_timeout=CONNECT_TIMEOUT,
            read_timeout=read_timeout,
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
            max_pool_connections=32,
        ),
    )


def error_code(exc: BaseException) -> str | None:
    """The S3 error code of a client error (``NoSuchKey``, ``404``, ``SlowDown`` …)."""
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code")
        return str(code) if code else None
    return None


def is_missing(exc: BaseException) -> bool:
    """Whether ``exc`` says the object (not the bucket) does not exist."""
    return error_code(exc) in ("NoSuchKey", "404", "NotFound", "NoSuchUpload")


def describe(exc: BaseException, bucket: str) -> str:
    """What went wrong with an S3 call, in words, with the server's code."""
    if isinstance(exc, ClientError):
        code = error_code(exc) or "?"
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in _SETTINGS_CODES:
            what = _SETTINGS_CODES[code]
        elif code in ("403", "Forbidden"):
            what = "access denied: check the credentials and the bucket's policy"
        elif code in ("SlowDown", "503", "ServiceUnavailable", "RequestLimitExceeded"):
            what = "the object store is throttling or unavailable"
        elif status is not None and status >= 500:
            what = "the object store failed"
        else:
            what = exc.response.get("Error", {}).get("Message") or "refused"
        return f"{what} [{code}, HTTP {status}, bucket {bucket}]"
    if isinstance(exc, NoCredentialsError):
        return "no credentials: set FILE_EXPORT_S3_ACCESS_KEY_ID and _SECRET_ACCESS_KEY"
    if isinstance(exc, BotoConnectionError):
        return f"the object store is unreachable: {exc}"
    if isinstance(exc, BotoCoreError):
        return f"the object store call failed: {exc}"
    return f"{type(exc).__name__}: {exc}"


def storage_error(op: str, key: str, exc: BaseException, bucket: str) -> StorageUnavailableError:
    """The transient export error for a failed S3 call ``op`` on ``key``."""
    return StorageUnavailableError(f"storage {op} failed for {key}: {describe(exc, bucket)}")


#: What a failing S3 call may raise (besides programming errors).
S3_ERRORS: tuple[type[BaseException], ...] = (BotoCoreError, ClientError)


class S3PartUploader:
    """One object's upload, for :class:`~actors.storage.multipart_output.MultipartOutput`:
    a single PUT when the file fits one part, else a multipart upload whose parts may
    come in any order.

    Args:
        client: from :func:`open_client`.
        bucket, key, content_type: the object.

    Every method raises :class:`StorageUnavailableError` when the call fails.
    """

    def __init__(self, client: Any, bucket: str, key: str, content_type: str) -> None:
        self._client = client
        self._bucket = bucket
        self._key = key
        self._content_type = content_type
        self._upload_id: str | None = None
        self._etags: dict[int, str] = {}

    def _call(self, op: str, fn: Any, **kwargs: Any) -> Any:
        try:
            return fn(Bucket=self._bucket, Key=self._key, **kwargs)
        except S3_ERRORS as exc:
            raise storage_error(op, self._key, exc, self._bucket) from exc

    def put(self, data: bytes | bytearray) -> None:
        """Store the whole object in one request."""
        self._call("put", self._client.put_object, Body=bytes(data), ContentType=self._content_type)

    def upload(self, number: int, data: bytes | bytearray) -> None:
        """Upload part ``number`` (1-based), starting the multipart upload first if needed."""
        if self._upload_id is None:
            created = self._call(
                "upload", self._client.create_multipart_upload, ContentType=self._content_type
            )
            self._upload_id = str(created["UploadId"])
        answer = self._call(
            "upload",
            self._client.upload_part,
            UploadId=self._upload_id,
            PartNumber=number,
            Body=bytes(data),
        )
        self._etags[number] = str(answer["ETag"])

    def complete(self) -> None:
        """Complete the multipart upload with every part uploaded, in part order."""
        parts = [{"PartNumber": n, "ETag": self._etags[n]} for n in sorted(self._etags)]
        self._call(
            "complete",
            self._client.complete_multipart_upload,
            UploadId=self._upload_id,
            MultipartUpload={"Parts": parts},
        )
        self._upload_id = None

    def abort(self) -> None:
        """Abort the multipart upload, if one was started (its parts are dropped)."""
        if self._upload_id is None:
            return
        upload_id, self._upload_id = self._upload_id, None
        try:
            self._client.abort_multipart_upload(
                Bucket=self._bucket, Key=self._key, UploadId=upload_id
            )
        except S3_ERRORS as exc:
            if not is_missing(exc):
                raise storage_error("abort", self._key, exc, self._bucket) from exc
