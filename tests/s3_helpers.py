"""The S3-compatible server of the tests and benchmarks (S3Proxy, ``deploy/s3/server.sh``,
started by the test command): its address and credentials, a fresh bucket per test, emptied
and removed afterwards, and what the tests look at in it.

Not optional: if the server is unreachable the S3 tests fail, as the MariaDB ones do.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from actors.core.ports.storage import ObjectStoreConfig
from actors.storage.multipart_output import MIN_PART_SIZE

#: The server ``deploy/services.sh`` starts; override to use another.
S3_TEST_URL = os.environ.get("EXPORT_CENTER_TEST_S3_URL", "http://127.0.0.1:9380")
S3_TEST_KEY = os.environ.get("EXPORT_CENTER_TEST_S3_KEY", "export-center")
S3_TEST_SECRET = os.environ.get("EXPORT_CENTER_TEST_S3_SECRET", "export-center-secret")


def s3_config(bucket: str, **overrides: Any) -> ObjectStoreConfig:
    """The server's bucket ``bucket``, with the smallest parts S3 allows."""
    base: dict[str, Any] = {
        "bucket": bucket,
        "endpoint": S3_TEST_URL,
        "access_key_id": S3_TEST_KEY,
        "secret_access_key": S3_TEST_SECRET,
        "part_size": MIN_PART_SIZE,
    }
    return ObjectStoreConfig(**{**base, **overrides})


def admin_client() -> Any:
    """A client of the server for set-up and checks."""
    from actors.storage.s3_client import open_client

    return open_client(s3_config("unused"))


def new_bucket() -> str:
    """Create a bucket with a name of its own; return the name."""
    name = f"ec-test-{uuid.uuid4().hex[:20]}"
    admin_client().create_bucket(Bucket=name)
    return name


def drop_bucket(name: str) -> None:
    """Abort the bucket's uploads, delete its objects, then the bucket (best effort)."""
    client = admin_client()
    try:
        for upload in client.list_multipart_uploads(Bucket=name).get("Uploads", []):
            client.abort_multipart_upload(
                Bucket=name, Key=upload["Key"], UploadId=upload["UploadId"]
            )
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=name)
        for page in pages:
            for item in page.get("Contents", []):
                client.delete_object(Bucket=name, Key=item["Key"])
        client.delete_bucket(Bucket=name)
    except Exception:
        pass


__all__ = [
    "S3_TEST_KEY",
    "S3_TEST_SECRET",
    "S3_TEST_URL",
    "admin_client",
    "drop_bucket",
    "incomplete_uploads",
    "new_bucket",
    "object_keys",
    "s3_config",
    "s3_settings",
]


def s3_settings(bucket: str) -> dict[str, Any]:
    """Settings overrides (field names) for a service storing files in ``bucket``."""
    return {
        "storage": "s3",
        "s3_endpoint": S3_TEST_URL,
        "s3_bucket": bucket,
        "s3_access_key_id": S3_TEST_KEY,
        "s3_secret_access_key": S3_TEST_SECRET,
        "s3_part_size_mb": 5,
    }


def incomplete_uploads(bucket: str) -> list[str]:
    """Keys of the bucket's multipart uploads neither completed nor aborted."""
    answer = admin_client().list_multipart_uploads(Bucket=bucket)
    return [upload["Key"] for upload in answer.get("Uploads", [])]


def object_keys(bucket: str) -> list[str]:
    """Keys of the bucket's objects."""
    answer = admin_client().list_objects_v2(Bucket=bucket)
    return [item["Key"] for item in answer.get("Contents", [])]
