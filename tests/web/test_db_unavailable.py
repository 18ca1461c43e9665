"""The API while the database is down (issue 13 item 4): HTTP 503 with the envelope and a
``Retry-After``, never a 500; ``/healthz`` not ready, probing the database at most once
per second however often it is polled."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from actors.core.db_retry import DbRetryPolicy
from actors.storage.local import LocalDirectoryStorage
from db.store import ExportStore
from tests.faults import Fault, FaultyDatabase
from tests.helpers import API, TOPIC, create
from tests.servers import api_app, headers
from web.app import RETRY_AFTER_SECONDS

HEADERS = headers()


@pytest.fixture
def faulty_app(store: ExportStore, storage: LocalDirectoryStorage):  # type: ignore[no-untyped-def]
    faulty = FaultyDatabase(store.db)
    fs = ExportStore(faulty, store.ids, topic=TOPIC, retry_policy=DbRetryPolicy())  # type: ignore[arg-type]
    app, services = api_app(fs, storage)
    return app, services, faulty


async def test_a_dead_pooled_connection_is_replaced_without_an_error(
    store: ExportStore,
    faulty_app,  # type: ignore[no-untyped-def]
) -> None:
    """The reported 500: a GET whose pooled connection is dead. It is retried on a fresh
    connection and answers 200."""
    app, _, faulty = faulty_app
    task = await create(store)
    faulty.arm(Fault.BEFORE_BEGIN)
    r = await app.test_client().get(f"{API}/{task.id}", headers=HEADERS)
    assert r.status_code == 200 and (await r.get_json())["code"] == "200"
    assert faulty.plan == []


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", API + "/123", None),
        ("GET", API, None),
        ("POST", API, {"exportType": "CUSTOMER_LIST", "parameters": {"n": 1}}),
        ("POST", API + "/123/retry", None),
        ("GET", API + "/123/download", None),
    ],
)
async def test_every_route_answers_503_with_the_envelope_while_the_database_is_down(
    autojump_clock: trio.testing.MockClock,
    faulty_app,  # type: ignore[no-untyped-def]
    method: str,
    path: str,
    body: dict | None,
) -> None:
    app, _, faulty = faulty_app
    faulty.down = True
    started = trio.current_time()
    r = await app.test_client().open(path, method=method, headers=HEADERS, json=body)
    assert r.status_code == 503
    assert r.headers["Retry-After"] == str(RETRY_AFTER_SECONDS)
    payload = await r.get_json()
    assert payload["code"] == "503" and "database is unavailable" in payload["message"]
    assert payload["data"] is None
    assert trio.current_time() - started <= 5.5  # the request's retry budget, not 30 s


async def test_healthz_is_not_ready_while_the_database_is_down_and_probes_once_a_second(
    autojump_clock: trio.testing.MockClock,
    faulty_app,  # type: ignore[no-untyped-def]
) -> None:
    app, services, faulty = faulty_app
    client = app.test_client()
    assert (await client.get("/healthz")).status_code == 200
    faulty.down = True
    await trio.sleep(1.1)  # past the cached answer
    before = faulty.transactions
    for _ in range(20):  # a load balancer hammering it within one second
        r = await client.get("/healthz")
        assert r.status_code == 503
        assert (await r.get_json())["status"] == "database unavailable"
        await trio.sleep(0.04)
    assert services.db_probe.probes == 2  # the first, and this one
    assert faulty.transactions - before <= 3  # one probe: a try and a fresh-connection retry
    faulty.down = False
    await trio.sleep(1.1)
    assert (await client.get("/healthz")).status_code == 200
