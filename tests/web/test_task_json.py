"""The task JSON (issue 10 item 3): who asked, in which tenant and app, with which
parameters, the data warnings of the last successful run, and the failure a waiting retry
follows (``lastError``); every earlier field kept."""

from __future__ import annotations

from actors.core.tracing import is_trace_id
from actors.storage.local import LocalDirectoryStorage
from db.store import ExportStore
from tests.helpers import API, claim, create
from tests.servers import api_app, headers


async def test_a_created_task_shows_requester_scope_and_parameters(
    store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    client = api_app(store, storage)[0].test_client()
    response = await client.post(
        API,
        headers=headers(42),
        json={"exportType": "CUSTOMER_LIST", "parameters": {"status": "ACTIVE", "rowCount": 5}},
    )
    body = await response.get_json()
    assert body["code"] == "200", body
    data = body["data"]
    assert data["requestedBy"] == "42" and data["tenantId"] == "0"
    assert data["appCode"] == "PLATFORM"
    assert data["parameters"] == {"rowCount": 5, "status": "ACTIVE"}
    assert data["warnings"] == [] and data["lastError"] is None
    again = await (await client.get(f"{API}/{data['id']}", headers=headers(42))).get_json()
    # The create's answer is the task as every route shows it, and whether it is an earlier one.
    assert {**again["data"], "duplicate": False} == data


async def test_last_error_is_the_failure_a_waiting_retry_follows(
    store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    client = api_app(store, storage)[0].test_client()
    task = await create(store)
    running = await claim(store, task)
    await store.schedule_retry(running, "owner-a", "provider timed out", backoff_seconds=60)
    data = (await (await client.get(f"{API}/{task.id}", headers=headers())).get_json())["data"]
    assert data["status"] == "PENDING"
    assert data["lastError"] == "provider timed out" == data["failureMessage"]
    assert data["nextRetryAt"] is not None


async def test_trace_id_is_the_create_requests_trace(
    store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    """A user quotes ``traceId`` when reporting a problem: the create request's
    ``traceparent`` trace (or a new one), the same on every read of the task."""
    client = api_app(store, storage)[0].test_client()
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    response = await client.post(
        API,
        headers={**headers(42), "traceparent": f"00-{trace}-00f067aa0ba902b7-01"},
        json={"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 5}},
    )
    data = (await response.get_json())["data"]
    assert data["traceId"] == trace
    again = await (await client.get(f"{API}/{data['id']}", headers=headers(42))).get_json()
    assert again["data"]["traceId"] == trace
    fresh = await client.post(
        API, headers=headers(43), json={"exportType": "CUSTOMER_LIST", "parameters": {}}
    )
    drawn = (await fresh.get_json())["data"]["traceId"]
    assert is_trace_id(drawn) and drawn != trace
