"""A Provider moves while the service runs (issue 22 item 4): the real service with
``FILE_EXPORT_PROVIDER_MAP`` and two demo Providers over real HTTP, each answering only its
own service token.

In one service's life: a task runs at the first address; the map file moves the service to
the second one and the next task created runs there; a task whose first attempt fails at
the first address (which moves the map as it fails) is retried at the second; a broken map
file is rejected once (ERROR, ``export_provider_map_reload_failures_total``) and the next
task still runs at the address in force; a broken registry is counted in
``export_registry_reload_failures_total``. Every wait is a condition (a task's status, a
scraped counter), bounded.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from quart import jsonify
from quart_trio import QuartTrio

from tests.helpers import API, client_for, make_settings, running_service, wait_for_status
from tests.servers import served
from web.demo_provider.app import create_demo_provider_blueprint
from web.demo_provider.data import demo_registry_yaml

SERVICE = "moving-service"
DEFAULT_TOKEN = "default-token-neither-provider-accepts"


@dataclass
class Provider:
    """A demo Provider that counts the batch requests it received; while ``failing`` it
    answers 503, after calling ``on_failure`` (a Provider being moved away)."""

    token: str
    url: str = ""
    calls: int = 0
    failing: bool = False
    on_failure: Callable[[], None] | None = None


@asynccontextmanager
async def demo_provider(token: str) -> AsyncIterator[Provider]:
    state = Provider(token)
    app = QuartTrio(f"provider-{token}")
    app.register_blueprint(
        create_demo_provider_blueprint(service_token=token, snapshot_secret=b"s" * 32)
    )

    @app.before_request
    async def count():  # type: ignore[no-untyped-def]
        state.calls += 1
        if state.failing:
            if state.on_failure is not None:
                state.on_failure()
                state.on_failure = None
            return jsonify({"code": "503", "message": "moving"}), 503
        return None

    async with served(app) as url:
        state.url = url
        yield state


def write_map(path: Path, provider: Provider | None, *, raw: str | None = None) -> None:
    """Point the service at ``provider`` (with its token), atomically (temp + rename)."""
    text = raw
    if provider is not None:
        text = f"providers:\n  {SERVICE}:\n    url: {provider.url}\n    token: {provider.token}\n"
    assert text is not None
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


async def export(client: httpx.AsyncClient, rows: int) -> dict[str, Any]:
    created = (
        await client.post(
            API, json={"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": rows}}
        )
    ).json()
    assert created["code"] == "200", created
    return await wait_for_status(client, created["data"]["id"], "SUCCEEDED", "FAILED")


async def test_a_moved_provider_is_used_by_new_and_retried_tasks_and_a_bad_map_is_kept_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="actors.plumbing.provider_map_source")
    registry = tmp_path / "registry.yaml"
    registry.write_text(demo_registry_yaml(batch_size=100, service=SERVICE))
    map_file = tmp_path / "providers.yaml"
    async with demo_provider("token-of-a") as a, demo_provider("token-of-b") as b:
        write_map(map_file, a)
        settings = make_settings(
            tmp_path,
            registry=registry,
            provider_map=map_file,
            demo_provider=False,
            internal_service_token=DEFAULT_TOKEN,
            retry_backoff_seconds=(0.2,),
            publisher_poll_ms=100,
            reconciler_poll_ms=200,
            shutdown_grace_seconds=5,
        )
        async with running_service(settings) as rt, client_for(rt) as client:
            # 1. At the address read at start, with that Provider's own token.
            first = await export(client, 150)
            assert first["status"] == "SUCCEEDED", first["failureMessage"]
            assert a.calls == 2 and b.calls == 0

            # 2. The service moves: a task created after the change runs at B only.
            write_map(map_file, b)
            moved = await export(client, 120)
            assert moved["status"] == "SUCCEEDED", moved["failureMessage"]
            assert moved["attemptCount"] == 1
            assert a.calls == 2 and b.calls == 2

            # 3. A retried task: its first attempt fails at A, which moves the map to B as
            # it fails; the retry runs at B.
            write_map(map_file, a)
            a.failing = True
            a.on_failure = lambda: write_map(map_file, b)
            retried = await export(client, 90)
            assert retried["status"] == "SUCCEEDED", retried["failureMessage"]
            assert retried["attemptCount"] == 2
            assert a.calls == 3 and b.calls == 3

            # 4. A broken map (a non-http address) is rejected; B stays in force.
            write_map(map_file, None, raw=f"providers:\n  {SERVICE}:\n    url: ftp://b\n")
            kept = await export(client, 80)
            again = await export(client, 70)
            metrics = (await client.get("/metrics")).text

            # 5. The registry's rejected reloads are counted on /metrics too (the signal
            # ExportRegistryReloadRejected watches): its watcher polls every 2 s.
            registry.write_text(demo_registry_yaml(batch_size=100, service="unknown-service"))
            registry_failures = await scraped(client, "export_registry_reload_failures_total")

    assert kept["status"] == "SUCCEEDED" and again["status"] == "SUCCEEDED"
    assert a.calls == 3 and b.calls == 5
    assert "export_provider_map_reload_failures_total 1.0" in metrics
    errors = [
        r.getMessage()
        for r in caplog.records
        if r.name == "actors.plumbing.provider_map_source" and r.levelno == logging.ERROR
    ]
    assert len(errors) == 1 and f"providers.{SERVICE}.url" in errors[0]
    assert registry_failures == 1


async def scraped(client: httpx.AsyncClient, name: str, timeout: float = 15) -> float:
    """The first non-zero value of an unlabelled counter on ``/metrics`` (a condition wait,
    bounded)."""
    with trio.fail_after(timeout):
        while True:
            for line in (await client.get("/metrics")).text.splitlines():
                if line.startswith(name + " ") and float(line.split()[1]) > 0:
                    return float(line.split()[1])
            await trio.sleep(0.1)
