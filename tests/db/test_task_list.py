"""The task list's filters on both databases: statuses (one or several), export type,
requested-at range and requester, newest first by (requested_at, id) with stable pages;
and over HTTP, the refusals of ``actors/core/task_list.py`` in the envelope."""

from __future__ import annotations

from datetime import timedelta

from actors.core.admission import CreateLimits
from actors.core.data_warning import DataWarning, WarningKind
from actors.core.models import Task, TaskStatus
from actors.core.principal import DOWNLOAD_ALL_PERMISSION
from actors.core.task_list import TaskFilter
from actors.storage.local import LocalDirectoryStorage
from db.store import ExportStore
from tests.helpers import API, claim, complete, create, exec_sql, new_task, principal
from tests.servers import api_app, headers

MANY = CreateLimits(max_active_per_user=100, max_active_per_type=1000)


async def some_tasks(store: ExportStore) -> list[Task]:
    """Six tasks of user 7 and two of user 8, requested one minute apart (oldest first),
    in several statuses and two export types."""
    tasks = []
    for i in range(8):
        result = await store.create_task(
            new_task(
                7 if i < 6 else 8,
                params={"i": i},
                export_type="ORDERS" if i % 3 == 0 else "CUSTOMER_LIST",
            ),
            MANY,
        )
        assert result.task is not None
        tasks.append(result.task)
    now = await store.db_now()
    for i, task in enumerate(tasks):
        at = store.db.dialect.from_datetime(now - timedelta(minutes=60 - i))
        await exec_sql(
            store,
            "UPDATE file_export_task SET requested_at = :at WHERE id = :id",
            {"at": at, "id": task.id},
        )
    await claim(store, tasks[1])
    await claim(store, tasks[4])
    return [t for t in [await store.get_task(t.id) for t in tasks] if t is not None]


async def ids(store: ExportStore, *, admin: bool = False, **kw: object) -> list[int]:
    perms = ("platform:customer:export", DOWNLOAD_ALL_PERMISSION) if admin else ()
    page, total = await store.list_tasks(
        principal(7, perms=perms or ("platform:customer:export",)),
        all_users=admin,
        filters=TaskFilter(**kw),  # type: ignore[arg-type]
        limit=20,
        offset=0,
    )
    assert int(total) == len(page)
    return [t.id for t in page]


async def test_filters_and_order(store: ExportStore) -> None:
    tasks = await some_tasks(store)
    t = [task.id for task in tasks]
    assert tasks[1].status == TaskStatus.RUNNING
    mine_newest_first = t[5::-1]
    assert await ids(store) == mine_newest_first
    assert await ids(store, statuses=("RUNNING",)) == [t[4], t[1]]
    assert await ids(store, statuses=("PENDING", "RUNNING")) == mine_newest_first
    assert await ids(store, statuses=("FAILED", "SUCCEEDED")) == []
    assert await ids(store, export_type="ORDERS") == [t[3], t[0]]
    assert await ids(store, statuses=("PENDING", "RUNNING"), export_type="ORDERS") == [t[3], t[0]]
    middle = TaskFilter(requested_from=tasks[2].requested_at, requested_to=tasks[4].requested_at)
    assert await ids(store, requested_from=middle.requested_from) == t[5:1:-1]
    assert await ids(
        store, requested_from=middle.requested_from, requested_to=middle.requested_to
    ) == [t[3], t[2]]
    # an administrator sees the tenant and app, or one requester of it
    assert await ids(store, admin=True) == t[::-1]
    assert await ids(store, admin=True, requested_by=8) == [t[7], t[6]]
    assert await ids(store, admin=True, requested_by=8, statuses=("PENDING",)) == [t[7], t[6]]
    # a requester filter means nothing without the permission: still only one's own
    assert await ids(store, requested_by=8) == mine_newest_first


async def test_pages_are_stable_when_times_tie(store: ExportStore) -> None:
    """Same requested_at for every task: the id breaks the tie, so pages neither repeat
    nor skip a task, with one status and with several."""
    for i in range(7):
        assert (await store.create_task(new_task(params={"i": i}), MANY)).task is not None
    await exec_sql(store, "UPDATE file_export_task SET requested_at = {now}")
    for filters in (TaskFilter(), TaskFilter(("PENDING",)), TaskFilter(("PENDING", "RUNNING"))):
        seen: list[int] = []
        for offset in range(0, 7, 3):
            page, total = await store.list_tasks(
                principal(7), all_users=False, filters=filters, limit=3, offset=offset
            )
            assert total == 7
            seen += [task.id for task in page]
        assert seen == sorted(seen, reverse=True) and len(set(seen)) == 7, filters


async def test_the_api_filters_and_refuses_in_the_envelope(
    store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    await create(store)
    client = api_app(store, storage)[0].test_client()

    async def get(query: str, *perms: str) -> tuple[int, dict]:
        response = await client.get(
            f"{API}?{query}", headers=headers(7, ("platform:customer:export", *perms))
        )
        return response.status_code, await response.get_json()

    status, body = await get("status=PENDING,RUNNING&exportType=CUSTOMER_LIST")
    assert (status, body["code"], len(body["data"]["items"])) == (200, "200", 1)
    status, body = await get("page=1&page=2")
    assert (status, body["code"]) == (200, "400")
    assert body["message"] == "page may be given once (it was given 2 times)"
    status, body = await get("requestedFrom=soon")
    assert body["code"] == "400" and body["message"].startswith("requestedFrom must be")
    status, body = await get("requestedBy=8")
    assert body["code"] == "403" and "requestedBy" in body["message"]
    status, body = await get("requestedBy=8", DOWNLOAD_ALL_PERMISSION)
    assert body["code"] == "200" and body["data"]["items"] == []


async def test_the_final_commit_keeps_the_runs_data_warnings(store: ExportStore) -> None:
    """The warnings a run logs are stored with SUCCEEDED in the same fenced statement;
    a run without warnings stores none."""
    warned, clean = await create(store), await create(store, user_id=8)
    cut = (
        DataWarning(WarningKind.TRUNCATED_CELLS, "2 cells truncated to 32767 characters"),
        DataWarning(WarningKind.FEWER_ROWS, "provider announced totalRows 3 but …"),
    )
    for task, warnings in ((warned, cut), (clean, ())):
        running = await claim(store, task)
        assert await complete(store, running, warnings=warnings)
    done = await store.get_task(warned.id)
    assert done is not None and done.warnings == list(cut)
    other = await store.get_task(clean.id)
    assert other is not None and other.warnings_json is None and other.warnings == []
