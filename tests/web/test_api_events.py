"""``GET .../export-tasks/{id}/events``: the task's history, oldest first, for whoever may
see the task; a download is recorded with who downloaded it."""

from __future__ import annotations

import pytest

import web.api
from actors.storage.keys import new_object_key
from actors.storage.local import LocalDirectoryStorage
from db.store import ExportStore
from tests.helpers import API, claim, complete, create
from tests.servers import WokenRuns, api_app, headers


@pytest.fixture
def app(store: ExportStore, storage: LocalDirectoryStorage):  # type: ignore[no-untyped-def]
    return api_app(store, storage, runs=WokenRuns())[0]


async def get_events(app, task_id: int, **kw) -> dict:  # type: ignore[no-untyped-def]
    response = await app.test_client().get(f"{API}/{task_id}/events", headers=headers(**kw))
    assert response.status_code == 200
    return await response.get_json()  # type: ignore[no-any-return]


async def test_history_over_the_api_with_the_ownership_rule(  # type: ignore[no-untyped-def]
    app, store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    task = await create(store)
    running = await claim(store, task, "instance-a")
    key = new_object_key(task.id)
    (await storage.create(key)).close()
    assert await store.complete_task(
        running,
        "instance-a",
        file_name="f.xlsx",
        object_key=key,
        content_type="application/x",
        size_bytes=0,
        rows=0,
        retention_seconds=3600,
    )
    # A HEAD asks about the file without taking it: not a download (no event).
    head = await app.test_client().head(
        f"{API}/{task.id}/download", headers=headers(user=9, perms=("platform:download:all",))
    )
    assert head.status_code == 200
    download = await app.test_client().get(
        f"{API}/{task.id}/download", headers=headers(user=9, perms=("platform:download:all",))
    )
    assert download.status_code == 200
    body = await get_events(app, task.id)
    assert body["code"] == "200", body
    items = body["data"]["items"]
    assert [e["kind"] for e in items] == ["created", "claimed", "succeeded", "downloaded"]
    # The owner is not shown which host and process ran it (issue 24): administrators are.
    assert items[1]["detail"] == {"version": 1, "attempt": 1}
    assert items[3]["detail"] == {"by": "9"}  # a user id: a string, like every id
    assert all(e["taskId"] == str(task.id) and e["at"].endswith("+00:00") for e in items)
    assert [int(e["id"]) for e in items] == sorted(int(e["id"]) for e in items)
    assert body["data"]["truncated"] is False
    assert (await get_events(app, task.id, user=8))["code"] == "404"
    admin = await get_events(app, task.id, user=9, perms=("platform:download:all",))
    assert admin["code"] == "200" and len(admin["data"]["items"]) == 4
    claimed = admin["data"]["items"][1]["detail"]
    assert claimed == {"instance": "instance-a", "version": 1, "attempt": 1}


async def test_a_long_history_keeps_its_newest_events_and_says_it_was_cut(  # type: ignore[no-untyped-def]
    app, store: ExportStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by hand: 275 retry/cancel rounds made 1,099 events and the answer held the
    oldest 1,000, contradicting the task's status. The newest are kept, oldest first."""
    monkeypatch.setattr(web.api, "MAX_TASK_EVENTS", 2)
    task = await create(store)
    await claim(store, task, "instance-a")
    assert await store.cancel_task(task.id, "cancelled by user 7", by=7) is not None
    body = await get_events(app, task.id)
    assert [e["kind"] for e in body["data"]["items"]] == ["claimed", "cancelled"]
    assert body["data"]["truncated"] is True


async def test_a_download_resumes_with_range_and_counts_once(  # type: ignore[no-untyped-def]
    app, store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    """A client that has the first part of the file asks for the rest (``Range`` with
    ``If-Range``): 206 with exactly those bytes; the whole file is one download event."""
    task = await create(store)
    running = await claim(store, task, "instance-a")
    key = new_object_key(task.id)
    content = bytes(range(256)) * 1000  # 256,000 bytes, every offset distinguishable
    with await storage.create(key) as f:
        f.write(content)
    assert await complete(store, running, "instance-a", object_key=key, size_bytes=len(content))
    url = f"{API}/{task.id}/download"
    client = app.test_client()
    first = await client.get(url, headers={**headers(), "Range": "bytes=0-99999"})
    assert first.status_code == 206
    assert first.headers["Content-Range"] == f"bytes 0-99999/{len(content)}"
    assert first.headers["Accept-Ranges"] == "bytes"
    assert await first.get_data() == content[:100_000]
    tag = first.headers["ETag"]
    rest = await client.get(url, headers={**headers(), "Range": "bytes=100000-", "If-Range": tag})
    assert rest.status_code == 206
    assert rest.headers["Content-Length"] == str(len(content) - 100_000)
    assert await first.get_data() + await rest.get_data() == content
    # a stale If-Range (another file) gets the whole current file, 200
    stale = await client.get(
        url, headers={**headers(), "Range": "bytes=100000-", "If-Range": '"other"'}
    )
    assert stale.status_code == 200 and await stale.get_data() == content
    past = await client.get(url, headers={**headers(), "Range": f"bytes={len(content)}-"})
    assert past.status_code == 416
    assert past.headers["Content-Range"] == f"bytes */{len(content)}"
    assert (await past.get_json())["code"] == "416"
    kinds = [e["kind"] for e in (await get_events(app, task.id))["data"]["items"]]
    # the first GET and the stale one started at byte 0: two downloads, not four
    assert kinds.count("downloaded") == 2
