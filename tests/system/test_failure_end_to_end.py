"""Failure paths through the real service and a real (flaky) Provider over HTTP (§9.1, §9.2)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import httpx
import pytest
import trio
from hypercorn.config import Config
from hypercorn.trio import serve as hypercorn_serve
from quart import jsonify
from quart_trio import QuartTrio

from actors.runtime import Runtime
from tests.helpers import API, client_for, make_settings, running_service, wait_for_status
from web.demo_provider.app import create_demo_provider_blueprint
from web.demo_provider.data import demo_registry_yaml

TOKEN = "provider-token-for-tests"
REGISTRY = demo_registry_yaml(batch_size=100, service="flaky-service")


@dataclass
class FlakyProvider:
    """The demo Provider behind a switch that answers 503 to the first ``failures`` calls."""

    url: str
    failures: int
    calls: int = 0


@pytest.fixture
async def flaky(request: pytest.FixtureRequest) -> AsyncIterator[FlakyProvider]:
    app = QuartTrio("flaky-provider")
    app.register_blueprint(
        create_demo_provider_blueprint(service_token=TOKEN, snapshot_secret=b"s" * 32)
    )
    state = FlakyProvider("", request.param)

    @app.before_request
    async def maybe_fail():  # type: ignore[no-untyped-def]
        state.calls += 1
        if state.calls <= state.failures:
            return jsonify({"code": "503", "message": "busy"}), 503
        return None

    cfg = Config()
    cfg.bind = ["127.0.0.1:0"]
    cfg.accesslog = None
    stop = trio.Event()
    async with trio.open_nursery() as n:
        [state.url] = await n.start(partial(hypercorn_serve, app, cfg, shutdown_trigger=stop.wait))
        yield state
        stop.set()


@pytest.fixture
async def service(tmp_path: Path, flaky: FlakyProvider) -> AsyncIterator[Runtime]:
    registry = tmp_path / "registry.yaml"
    registry.write_text(REGISTRY)
    settings = make_settings(
        tmp_path,
        registry=registry,
        demo_provider=False,
        internal_service_token=TOKEN,
        provider_urls={"flaky-service": flaky.url},
        retry_backoff_seconds=(0.2,),
        publisher_poll_ms=100,
        reconciler_poll_ms=200,
        shutdown_grace_seconds=5,
    )
    async with running_service(settings) as rt:
        yield rt


@pytest.mark.parametrize("flaky", [2], indirect=True)
async def test_provider_503_twice_then_success(service: Runtime, flaky: FlakyProvider) -> None:
    """§19.2 Provider 503 两次后成功: SUCCEEDED at attempt 3, version 3, exactly one file."""
    async with client_for(service) as client:
        created = (
            await client.post(
                API, json={"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 250}}
            )
        ).json()
        task = await wait_for_status(client, created["data"]["id"], "SUCCEEDED", "FAILED")
    assert task["status"] == "SUCCEEDED", task["failureMessage"]
    assert task["attemptCount"] == 3 and task["dispatchVersion"] == 3
    assert task["processedRows"] == "250"
    files = await service.storage.list_objects()
    assert len(files) == 1 and files[0].key.startswith(f"exports/{task['id']}/")
    outbox = await service.store.list_outbox(int(task["id"]))
    assert [r.dispatch_version for r in outbox] == [1, 2, 3]


@pytest.mark.parametrize("flaky", [10**9], indirect=True)
async def test_provider_always_503_fails_after_max_attempts_without_dlq(
    service: Runtime, flaky: FlakyProvider
) -> None:
    """§19.2 Provider 持续 503 至 max_attempts: FAILED, completed{FAILED} grows, DLQ empty."""
    async with client_for(service) as client:
        created = (
            await client.post(
                API, json={"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 10}}
            )
        ).json()
        task = await wait_for_status(client, created["data"]["id"], "SUCCEEDED", "FAILED")
        metrics = (await client.get("/metrics")).text
    assert task["status"] == "FAILED" and task["attemptCount"] == 3
    assert "503" in task["failureMessage"]
    assert flaky.calls == 3
    assert service.transport.dead_lettered == 0
    assert service.metrics.dlq_messages._value.get() == 0
    assert 'export_task_completed_total{status="FAILED",type="CUSTOMER_LIST"} 1.0' in metrics
    assert await service.storage.list_objects() == []
    async with httpx.AsyncClient(base_url=service.base_url) as anon:
        assert (await anon.get("/healthz")).status_code == 200
