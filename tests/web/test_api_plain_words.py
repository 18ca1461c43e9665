"""What the API tells a person about a task, from the service's catalogue
(``actors/core/messages.py``): a failure's code, its plain reason and what may help; a
duplicate create flagged by a field, not by its message; the catalogue the page loads."""

from __future__ import annotations

from actors.core.messages import LANGUAGES, catalogue_json
from db.store import ExportStore
from tests.helpers import API, claim, create
from tests.servers import api_app, headers


async def test_a_failed_task_carries_its_code_reason_and_remedy(
    store: ExportStore, storage
) -> None:  # type: ignore[no-untyped-def]
    app, _ = api_app(store, storage)
    running = await claim(store, await create(store))
    message = "provider demo-service answered code 400: rowCount must be an integer"
    assert await store.fail_task(running, "owner-a", message, "ProviderRefusedError")
    body = await (await app.test_client().get(f"{API}/{running.id}", headers=headers())).get_json()
    task = body["data"]
    assert task["failureCode"] == "provider-refused" and task["remedy"] == "edit"
    assert task["failureReason"] == catalogue_json("en")["failures"]["provider-refused"]
    assert task["failureMessage"] == message  # the technical text stays, for support


async def test_a_task_without_a_failure_has_none(store: ExportStore, storage) -> None:  # type: ignore[no-untyped-def]
    app, _ = api_app(store, storage)
    task = await create(store)
    body = await (await app.test_client().get(f"{API}/{task.id}", headers=headers())).get_json()
    data = body["data"]
    assert (data["failureCode"], data["failureReason"], data["remedy"]) == (None, None, None)
    assert data["dataWarnings"] == []


async def test_a_duplicate_create_is_flagged_by_a_field(store: ExportStore, storage) -> None:  # type: ignore[no-untyped-def]
    app, _ = api_app(store, storage)
    client = app.test_client()
    body = {"exportType": "CUSTOMER_LIST", "parameters": {"status": "ACTIVE"}}
    first = await (await client.post(API, json=body, headers=headers())).get_json()
    second = await (await client.post(API, json=body, headers=headers())).get_json()
    assert first["code"] == second["code"] == "200"
    assert first["data"]["duplicate"] is False and second["data"]["duplicate"] is True
    assert second["data"]["id"] == first["data"]["id"]


async def test_the_page_loads_the_catalogue_in_each_language(store: ExportStore, storage) -> None:  # type: ignore[no-untyped-def]
    app, _ = api_app(store, storage)
    client = app.test_client()
    for language in LANGUAGES:
        answer = await client.get(f"/i18n/{language}.json")
        assert answer.status_code == 200
        assert await answer.get_json() == catalogue_json(language)
        assert "default-src 'none'" in answer.headers["Content-Security-Policy"]
    assert (await client.get("/i18n/fr.json")).status_code == 404


async def test_the_requester_is_named_when_the_token_names_them(
    store: ExportStore, storage
) -> None:  # type: ignore[no-untyped-def]
    app, _ = api_app(store, storage)
    client = app.test_client()
    named = headers(8, name="李雷")
    body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 3}}
    task = (await (await client.post(API, json=body, headers=named)).get_json())["data"]
    other = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 4}}
    plain = (await (await client.post(API, json=other, headers=headers(9))).get_json())["data"]
    session = await (await client.get("/api/platform/v1/session", headers=named)).get_json()
    assert (task["requesterName"], task["requestedBy"]) == ("李雷", "8")
    assert plain["requesterName"] is None  # the page shows the id then
    assert session["data"]["name"] == "李雷"
