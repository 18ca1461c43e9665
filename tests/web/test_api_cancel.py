"""Cancel over the API: the owner or ``platform:download:all`` in the same tenant and app,
PENDING and RUNNING only, idempotent on CANCELLED, ``409`` otherwise; the cancel is counted
in ``export_task_completed_total{status="CANCELLED"}`` and wakes this process's run."""

from __future__ import annotations

import pytest

from actors.core.models import TaskStatus
from actors.storage.local import LocalDirectoryStorage
from db.store import ExportStore
from tests.helpers import API, claim, create
from tests.servers import WokenRuns, api_app, headers


@pytest.fixture
def app(store: ExportStore, storage: LocalDirectoryStorage):  # type: ignore[no-untyped-def]
    return api_app(store, storage, runs=WokenRuns())[0]


def cancelled_count(app) -> float:  # type: ignore[no-untyped-def]
    metrics = app.config["DEPENDENCIES"].metrics
    value = metrics.task_completed.labels("CUSTOMER_LIST", "CANCELLED")._value.get()
    return float(value)


async def post_cancel(app, task_id: int, **kw) -> dict:  # type: ignore[no-untyped-def]
    response = await app.test_client().post(f"{API}/{task_id}/cancel", headers=headers(**kw))
    assert response.status_code == 200
    return await response.get_json()  # type: ignore[no-any-return]


async def test_the_owner_cancels_a_pending_task_once(app, store: ExportStore) -> None:  # type: ignore[no-untyped-def]
    task = await create(store)
    body = await post_cancel(app, task.id)
    assert body["code"] == "200", body
    assert body["data"]["status"] == "CANCELLED"
    assert body["data"]["failureMessage"] == "cancelled by user 7"
    assert cancelled_count(app) == 1
    assert app.config["DEPENDENCIES"].runs.ids == [task.id]
    again = await post_cancel(app, task.id)  # idempotent: same answer, not counted again
    assert again["code"] == "200" and again["data"]["status"] == "CANCELLED"
    assert cancelled_count(app) == 1 and app.config["DEPENDENCIES"].runs.ids == [task.id]


async def test_a_running_task_is_cancelled_and_its_run_woken(app, store: ExportStore) -> None:  # type: ignore[no-untyped-def]
    task = await claim(store, await create(store))
    body = await post_cancel(app, task.id)
    assert body["code"] == "200" and body["data"]["status"] == "CANCELLED"
    assert app.config["DEPENDENCIES"].runs.ids == [task.id]


async def test_who_may_cancel(app, store: ExportStore) -> None:  # type: ignore[no-untyped-def]
    task = await create(store)
    stranger = await post_cancel(app, task.id, user=8)
    assert stranger["code"] == "404"  # as if it did not exist
    other_tenant = await post_cancel(
        app, task.id, user=9, perms=("platform:download:all",), tenant=1
    )
    assert other_tenant["code"] == "404"
    assert (await store.get_task(task.id)).status == TaskStatus.PENDING  # type: ignore[union-attr]
    admin = await post_cancel(app, task.id, user=9, perms=("platform:download:all",))
    assert admin["code"] == "200" and admin["data"]["failureMessage"] == "cancelled by user 9"


async def test_a_finished_task_is_not_cancellable(app, store: ExportStore) -> None:  # type: ignore[no-untyped-def]
    task = await claim(store, await create(store))
    assert await store.fail_task(task, "owner-a", "bad data")
    body = await post_cancel(app, task.id)
    assert body["code"] == "409"
    assert body["message"] == "only PENDING or RUNNING tasks can be cancelled; the task is FAILED"
    assert cancelled_count(app) == 0
    malformed = await post_cancel(app, "abc")  # type: ignore[arg-type]
    assert malformed["code"] == "400"


async def test_a_cancelled_task_can_be_retried(app, store: ExportStore) -> None:  # type: ignore[no-untyped-def]
    task = await create(store)
    await post_cancel(app, task.id)
    response = await app.test_client().post(f"{API}/{task.id}/retry", headers=headers())
    body = await response.get_json()
    assert body["code"] == "200", body
    assert body["data"]["status"] == "PENDING" and body["data"]["dispatchVersion"] == 2
