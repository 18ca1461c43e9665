"""``/metrics`` behind a scrape token (issue 24): with ``FILE_EXPORT_METRICS_TOKEN`` set, a
scrape must send it as a bearer token; unset, the metrics stay open (for a private
network), as Prometheus exporters usually are."""

from __future__ import annotations

import pytest

from actors.core.http.scrape import scrape_allowed
from actors.storage.local import LocalDirectoryStorage
from db.store import ExportStore
from tests.servers import api_app

TOKEN = "scrape-token-of-the-test"


@pytest.mark.parametrize(
    ("token", "authorization", "allowed"),
    [
        (None, None, True),
        (None, "Bearer anything", True),
        (TOKEN, None, False),
        (TOKEN, "", False),
        (TOKEN, f"Bearer {TOKEN}", True),
        (TOKEN, f"bearer {TOKEN}", True),
        (TOKEN, f"Bearer {TOKEN}x", False),
        (TOKEN, f"Basic {TOKEN}", False),
        (TOKEN, TOKEN, False),
        (TOKEN, "Bearer ", False),
    ],
)
def test_the_scrape_rule(token: str | None, authorization: str | None, allowed: bool) -> None:
    assert scrape_allowed(token, authorization) is allowed


async def test_metrics_need_the_token_once_one_is_set(
    store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    app, services = api_app(store, storage)
    client = app.test_client()
    assert (await client.get("/metrics")).status_code == 200  # no token configured: open
    services.metrics_token = TOKEN
    refused = await client.get("/metrics")
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert "FILE_EXPORT_METRICS_TOKEN" in await refused.get_data(as_text=True)
    wrong = await client.get("/metrics", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    scraped = await client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert scraped.status_code == 200
    assert "# TYPE export_task_created_total counter" in await scraped.get_data(as_text=True)


async def test_health_details_need_the_token_once_one_is_set(
    store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    """Issue 35 item 8: ``/healthz/details`` names internal addresses (the bucket, the
    broker): behind the scrape token once one is set. ``/healthz``, the load balancer's
    question, stays open."""
    app, deps = api_app(store, storage)
    client = app.test_client()
    assert (await client.get("/healthz/details")).status_code == 200  # no token: open
    deps.metrics_token = TOKEN
    refused = await client.get("/healthz/details")
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"] == 'Bearer realm="metrics"'
    read = await client.get("/healthz/details", headers={"Authorization": f"Bearer {TOKEN}"})
    assert read.status_code == 200 and "components" in await read.get_json()
    assert (await client.get("/healthz")).status_code == 200
