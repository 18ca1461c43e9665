"""The partition checker (tests/hosts/checker.py) is not vacuous: each invariant, broken on
purpose in MariaDB and in a real bucket, is reported; a clean history passes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio

from actors.storage.keys import new_object_key
from db.store import ExportStore
from tests.helpers import claim, complete, create, exec_sql
from tests.hosts.checker import check
from tests.s3_helpers import admin_client, drop_bucket, new_bucket


@pytest.fixture
async def bucket() -> AsyncIterator[str]:
    name = await trio.to_thread.run_sync(new_bucket)
    yield name
    await trio.to_thread.run_sync(drop_bucket, name)


def put(bucket: str, key: str) -> None:
    admin_client().put_object(Bucket=bucket, Key=key, Body=b"PK")


async def succeeded(store: ExportStore, bucket: str, user: int) -> tuple[int, str]:
    """A task run to SUCCEEDED with its object in the bucket: the clean case."""
    task = await create(store, user_id=user)
    running = await claim(store, task)
    key = new_object_key(task.id)
    await trio.to_thread.run_sync(put, bucket, key)
    assert await complete(store, running, object_key=key)
    return task.id, key


async def test_a_clean_history_passes(mysql_store: ExportStore, bucket: str) -> None:
    await succeeded(mysql_store, bucket, 1)
    report = await check(mysql_store, bucket)
    assert report.violations == [] and report.statuses == {"SUCCEEDED": 1}


async def test_each_broken_invariant_is_reported(mysql_store: ExportStore, bucket: str) -> None:
    store = mysql_store
    done, key = await succeeded(store, bucket, 1)
    stuck = await create(store, user_id=2)  # 1. never finished
    twice, _ = await succeeded(store, bucket, 3)  # 2. two SUCCEEDED runs in its history
    await exec_sql(
        store,
        "INSERT INTO file_export_task_event (task_id, kind, detail_json, created_at)"
        " VALUES (:id, 'succeeded', '{}', {now})",
        {"id": twice},
    )
    missing = await create(store, user_id=4)  # 3. SUCCEEDED without its object
    running = await claim(store, missing)
    assert await complete(store, running, object_key=new_object_key(missing.id))
    await trio.to_thread.run_sync(put, bucket, new_object_key(stuck.id))  # 3. an unheld object
    upload = new_object_key(done)  # 4. an incomplete upload
    await trio.to_thread.run_sync(
        lambda: admin_client().create_multipart_upload(Bucket=bucket, Key=upload)
    )
    # 5. a command queued (due) after its task finished, then dispatched
    await exec_sql(
        store,
        "UPDATE file_export_outbox SET due_at = {now} WHERE task_id = :id",
        {"id": done},
    )
    await exec_sql(
        store,
        "INSERT INTO file_export_task_event (task_id, kind, detail_json, created_at)"
        " VALUES (:id, 'dispatched', '{\"version\": 1}', {now})",
        {"id": done},
    )
    report = await check(store, bucket)
    found = "\n".join(report.violations)
    assert f"task {stuck.id} is PENDING, not terminal" in found
    assert f"task {twice} succeeded 2 times" in found
    assert f"task {missing.id} SUCCEEDED with" in found and "but the bucket holds []" in found
    assert f"task {stuck.id} is PENDING but the bucket holds" in found
    assert f"incomplete upload left: {upload}" in found
    assert f"task {done}: a command (version 1) was queued after it finished" in found
    assert len(report.violations) == 6, found
