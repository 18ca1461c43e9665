"""The S3-compatible server of the tests (S3Proxy, ``deploy/s3/server.sh``, started by the
test command): a fresh bucket per test, emptied and removed afterwards
(``deploy/bench/s3_bucket.py``), and what the tests look at in it.

Not optional: if the server is unreachable the S3 tests fail, as the MariaDB ones do.
"""

from __future__ import annotations

from typing import Any

from deploy.bench.s3_bucket import (
    S3_TEST_KEY,
    S3_TEST_SECRET,
    S3_TEST_URL,
    admin_client,
    drop_bucket,
    new_bucket,
    s3_config,
)

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
