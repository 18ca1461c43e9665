"""Manual retry over the API (§9.3): only FAILED, re-checks identity, tenant, permission and
``enabled``; new version, new outbox row, previous attempt's file deleted."""

from __future__ import annotations

import dataclasses

import pytest

from actors.core.definitions import Registry
from actors.core.models import TaskStatus
from actors.storage.keys import new_object_key
from actors.storage.local import LocalDirectoryStorage
from db.store import ExportStore
from tests.helpers import API, claim, create
from tests.servers import DEFINITION, api_app, headers


@pytest.fixture
def app_and_registry(store: ExportStore, storage: LocalDirectoryStorage):  # type: ignore[no-untyped-def]
    app, services = api_app(store, storage)
    return app, services.registry


async def failed_task(store: ExportStore, storage: LocalDirectoryStorage) -> tuple[int, str]:
    task = await create(store)
    running = await claim(store, task)
    key = new_object_key(task.id)
    assert await store.record_object_key(running, "owner-a", key)
    (await storage.create(key)).close()
    assert await store.fail_task(running, "owner-a", "bad data")
    # FAIL_TASK clears object_key; put the leftover back as a crashed cleanup would leave it
    async with store.db.transaction() as tx:
        await tx.execute(
            store.db.dialect.render("UPDATE file_export_task SET object_key = :k WHERE id = :id"),
            {"k": key, "id": task.id},
        )
    return task.id, key


async def test_retry_of_a_failed_task_makes_a_new_version_and_deletes_the_old_file(
    store: ExportStore, storage: LocalDirectoryStorage, app_and_registry
) -> None:  # type: ignore[no-untyped-def]
    """§19.1 人工重试：只允许 FAILED、递增版本、清空上次现场."""
    app, _ = app_and_registry
    task_id, key = await failed_task(store, storage)
    body = await (
        await app.test_client().post(f"{API}/{task_id}/retry", headers=headers())
    ).get_json()
    assert body["code"] == "200", body
    assert body["data"]["status"] == "PENDING" and body["data"]["dispatchVersion"] == 2
    assert body["data"]["attemptCount"] == 0 and body["data"]["failureMessage"] is None
    assert await storage.size(key) is None
    again = await (
        await app.test_client().post(f"{API}/{task_id}/retry", headers=headers())
    ).get_json()
    assert again["code"] == "409"  # no longer FAILED


async def test_retry_of_a_disabled_type_is_refused(
    store: ExportStore, storage: LocalDirectoryStorage, app_and_registry
) -> None:  # type: ignore[no-untyped-def]
    """§19.1 人工重试：停用类型拒绝."""
    app, registry = app_and_registry
    task_id, _ = await failed_task(store, storage)
    registry.replace(Registry({"CUSTOMER_LIST": dataclasses.replace(DEFINITION, enabled=False)}))
    body = await (
        await app.test_client().post(f"{API}/{task_id}/retry", headers=headers())
    ).get_json()
    assert body["code"] == "403" and "disabled" in body["message"]
    assert (await store.get_task(task_id)).status == TaskStatus.FAILED


async def test_retry_rechecks_permission_and_ownership(
    store: ExportStore, storage: LocalDirectoryStorage, app_and_registry
) -> None:  # type: ignore[no-untyped-def]
    app, _ = app_and_registry
    task_id, _ = await failed_task(store, storage)
    no_perm = await (
        await app.test_client().post(f"{API}/{task_id}/retry", headers=headers(perms=()))
    ).get_json()
    assert no_perm["code"] == "403"
    stranger = await (
        await app.test_client().post(f"{API}/{task_id}/retry", headers=headers(user=8))
    ).get_json()
    assert stranger["code"] == "404"
    assert (await store.get_task(task_id)).dispatch_version == 1
