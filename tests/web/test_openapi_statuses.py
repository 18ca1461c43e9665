"""``/openapi.json`` declares what the wire carries (issue 26 item 8): for every operation of
the API, the real HTTP statuses it declares and the envelope codes it declares under its
HTTP 200 answer (``x-envelope-codes``) are exactly those a request can get from it.

Each case below makes the route answer one (HTTP status, envelope code) pair, the way a
client would meet it; the test then compares the pairs seen with the document, both ways:
a declared answer no case reaches, or an answer the document does not declare, fails.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import trio
import trio.testing

from actors.core.db_retry import DbRetryPolicy
from actors.core.definitions import Registry
from actors.storage.keys import new_object_key
from actors.storage.local import LocalDirectoryStorage
from db.store import ExportStore
from tests.faults import FaultyDatabase
from tests.helpers import API, TOPIC, claim, complete, create
from tests.servers import DEFINITION, api_app, headers, served
from web.app import MAX_BODY_BYTES
from web.auth import CSRF_COOKIE
from web.openapi import HTTP_STATUSES

SESSION = "/api/platform/v1/session"
TYPES = "/api/platform/v1/files/export-types"
PROGRESS = "/api/platform/v1/files/progress"
Seen = set[tuple[str, int, str]]
JSON = {"Content-Type": "application/json"}


def operations(doc: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """operationId -> (method, path) of the API's operations."""
    return {
        operation["operationId"]: (method.upper(), path)
        for path, item in doc["paths"].items()
        if path.startswith("/api/")
        for method, operation in item.items()
    }


def declared(doc: dict[str, Any]) -> Seen:
    """(operationId, HTTP status, envelope code) the document promises: each HTTP 200
    envelope code, and each other status (its code: the status, or "" for no envelope)."""
    found: Seen = set()
    for path, item in doc["paths"].items():
        if not path.startswith("/api/"):
            continue
        for operation in item.values():
            name = operation["operationId"]
            for status, answer in operation["responses"].items():
                if int(status) == 200:
                    # A success that is not JSON (a file, an event stream) has no code.
                    plain = set(answer.get("content", {})) - {"application/json"}
                    for code in answer.get("x-envelope-codes", {"200": "success"}):
                        found.add((name, 200, "" if code == "200" and plain else code))
                else:
                    json_answer = "application/json" in answer.get("content", {})
                    found.add((name, int(status), status if json_answer else ""))
    return found


def answer(response: httpx.Response) -> tuple[int, str]:
    """(HTTP status, envelope code, or "" when the body is not the envelope)."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.status_code, str(response.json()["code"])
    return response.status_code, ""


async def seen_by_requests(store: ExportStore, storage: LocalDirectoryStorage) -> Seen:
    """Every (operation, status, code) the cases reach over real HTTP."""
    app, services = api_app(store, storage)
    seen: Seen = set()
    h = headers()
    token = h["Authorization"].removeprefix("Bearer ")
    body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 1}}
    huge = "x" * (MAX_BODY_BYTES + 1)
    # --- one task in each state the routes tell apart ---------------------------------------
    pending = await create(store, user_id=7, params={"n": 1})
    failed = await claim(store, await create(store, user_id=7, params={"n": 2}))
    assert await store.fail_task(failed, "owner-a", "bad", "ProviderContractError")
    ready = await claim(store, await create(store, user_id=7, params={"n": 3}))
    key = new_object_key(ready.id)
    with await storage.create(key) as f:
        f.write(b"x" * 1000)
    assert await complete(store, ready, object_key=key, size_bytes=1000)
    gone = await claim(store, await create(store, user_id=7, params={"n": 4}))
    assert await complete(store, gone, retention_seconds=0)
    assert await store.mark_expired(gone.id)  # expires_at is now: due at once
    task, file = f"{API}/{pending.id}", f"{API}/{ready.id}/download"
    cases: list[tuple[str, str, str, dict[str, Any]]] = [
        ("listTasks", "GET", API, {"headers": h}),
        ("listTasks", "GET", API + "?status=DONE", {"headers": h}),
        ("listTasks", "GET", API, {}),
        ("getTask", "GET", task, {"headers": h}),
        ("getTask", "GET", f"{API}/999999", {"headers": h}),
        ("getTask", "GET", task, {}),
        ("listTaskEvents", "GET", task + "/events", {"headers": h}),
        ("listTaskEvents", "GET", f"{API}/999999/events", {"headers": h}),
        ("listTaskEvents", "GET", task + "/events", {}),
        *(
            (name, method, f"{API}/abc{tail}", {"headers": h})  # not an id
            for name, method, tail in (
                ("getTask", "GET", ""),
                ("listTaskEvents", "GET", "/events"),
                ("downloadTaskFile", "GET", "/download"),
                ("cancelTask", "POST", "/cancel"),
                ("retryTask", "POST", "/retry"),
            )
        ),
        ("downloadTaskFile", "GET", file, {"headers": h}),
        ("downloadTaskFile", "GET", file, {"headers": {**h, "Range": "bytes=0-9"}}),
        ("downloadTaskFile", "GET", file, {"headers": {**h, "Range": "bytes=5000-"}}),
        ("downloadTaskFile", "GET", f"{API}/999999/download", {"headers": h}),
        ("downloadTaskFile", "GET", task + "/download", {"headers": h}),  # no file yet
        ("downloadTaskFile", "GET", f"{API}/{gone.id}/download", {"headers": h}),
        ("downloadTaskFile", "GET", file, {}),
        ("cancelTask", "POST", f"{API}/999999/cancel", {"headers": h}),
        ("cancelTask", "POST", f"{API}/{failed.id}/cancel", {"headers": h}),
        ("cancelTask", "POST", task + "/cancel", {}),
        ("retryTask", "POST", f"{API}/999999/retry", {"headers": h}),
        ("retryTask", "POST", f"{API}/{ready.id}/retry", {"headers": h}),
        ("retryTask", "POST", f"{API}/{failed.id}/retry", {}),
        ("createTask", "POST", API, {"headers": h, "json": {"parameters": {}}}),
        ("createTask", "POST", API, {"headers": headers(perms=()), "json": body}),
        ("createTask", "POST", API, {"json": body}),
        ("createTask", "POST", API, {"headers": h, "content": huge}),
        ("listExportTypes", "GET", TYPES, {"headers": h}),
        ("listExportTypes", "GET", TYPES, {}),
        ("streamProgress", "GET", PROGRESS, {}),
        ("signIn", "POST", SESSION, {"json": {}}),
        ("signIn", "POST", SESSION, {"json": {"token": "not-a-jwt"}}),
        ("signIn", "POST", SESSION, {"content": huge, "headers": JSON}),
        ("getSession", "GET", SESSION, {"headers": h}),
        ("getSession", "GET", SESSION, {}),
        ("signOut", "DELETE", SESSION, {"headers": h}),
    ]
    async with served(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as c:

        async def see(name: str, method: str, path: str, **options: Any) -> None:
            seen.add((name, *answer(await c.request(method, path, **options))))

        for name, method, path, options in cases:
            await see(name, method, path, **options)
        # A live stream answers its events; at the caller's cap, the envelope's 429.
        async with c.stream("GET", PROGRESS, headers=h) as stream:
            seen.add(("streamProgress", *answer(stream)))
            services.progress_feed.limits = dataclasses.replace(
                services.progress_feed.limits, per_user=1
            )
            await see("streamProgress", "GET", PROGRESS, headers=h)
        # A disabled type refuses a retry (403); the user's limit of three active tasks
        # refuses a create and a retry (429); a cancel frees a place for the retry.
        registry = services.registry.current
        services.registry.replace(
            Registry({"CUSTOMER_LIST": dataclasses.replace(DEFINITION, enabled=False)})
        )
        await see("retryTask", "POST", f"{API}/{failed.id}/retry", headers=h)
        services.registry.replace(registry)
        for n in (2, 3):  # with the pending one, three active
            more = {**body, "parameters": {"rowCount": n}}
            await see("createTask", "POST", API, headers=h, json=more)
        await see("createTask", "POST", API, headers=h, json={**body, "parameters": {"x": 9}})
        await see("retryTask", "POST", f"{API}/{failed.id}/retry", headers=h)
        await see("cancelTask", "POST", task + "/cancel", headers=h)
        await see("retryTask", "POST", f"{API}/{failed.id}/retry", headers=h)
        # The session cookie: it reads, but writes only with X-CSRF-Token (403 without).
        await see("signIn", "POST", SESSION, json={"token": token})
        assert c.cookies.get(CSRF_COOKIE)
        await see("createTask", "POST", API, json=body)
        await see("cancelTask", "POST", task + "/cancel")
        await see("retryTask", "POST", f"{API}/{failed.id}/retry")
        await see("signOut", "DELETE", SESSION)
    return seen


async def seen_without_database(store: ExportStore, storage: LocalDirectoryStorage) -> Seen:
    """Every operation that declares 503, called while the database is down."""
    faulty = FaultyDatabase(store.db)
    fs = ExportStore(faulty, store.ids, topic=TOPIC, retry_policy=DbRetryPolicy())  # type: ignore[arg-type]
    app, _ = api_app(fs, storage)
    client = app.test_client()
    faulty.down = True
    calls: dict[str, Callable[[], Awaitable[Any]]] = {
        "listTasks": lambda: client.get(API, headers=headers()),
        "getTask": lambda: client.get(f"{API}/1", headers=headers()),
        "listTaskEvents": lambda: client.get(f"{API}/1/events", headers=headers()),
        "downloadTaskFile": lambda: client.get(f"{API}/1/download", headers=headers()),
        "cancelTask": lambda: client.post(f"{API}/1/cancel", headers=headers()),
        "retryTask": lambda: client.post(f"{API}/1/retry", headers=headers()),
        "createTask": lambda: client.post(
            API, json={"exportType": "CUSTOMER_LIST"}, headers=headers()
        ),
    }
    seen: Seen = set()
    for name, call in calls.items():
        response = await call()
        seen.add((name, response.status_code, str((await response.get_json())["code"])))
    return seen


async def test_every_declared_answer_is_one_the_route_gives_and_no_other(
    store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    app, _ = api_app(store, storage)
    doc = await (await app.test_client().get("/openapi.json")).get_json()
    seen = await seen_by_requests(store, storage)
    promised = {answer for answer in declared(doc) if answer[1] != 503}
    assert {name for name, _, _ in seen} == set(operations(doc))  # every one was called
    assert promised - seen == set(), "declared but never answered"
    assert seen - promised == set(), "answered but not declared"


async def test_the_database_down_answer_is_declared_where_it_is_given(
    autojump_clock: trio.testing.MockClock, store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    """HTTP 503 with the envelope, on the mock clock (each call spends its retry budget)."""
    app, _ = api_app(store, storage)
    doc = await (await app.test_client().get("/openapi.json")).get_json()
    promised = {answer for answer in declared(doc) if answer[1] == 503}
    assert await seen_without_database(store, storage) == promised


def test_no_business_outcome_is_declared_as_an_http_status() -> None:
    """The issue's finding: 400, 403 (but CSRF), 404, 409, 429 were declared as HTTP
    statuses the service never answers; they are envelope codes of an HTTP 200."""
    assert set(HTTP_STATUSES) == {401, 403, 413, 503}
