"""What the export runner's tests share (``test_runner.py``, ``test_runner_s3.py``): the
export type they run, and one run of the runner over a fake Provider (a real HTTP server,
``tests/provider_server.py``) that answers each batch request by its number. The
database-blip test of progress writes (``tests/actors/test_db_blips.py``) runs the same
export type."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from actors.core.definitions import ExportDefinition, Registry
from actors.core.principal import AppCode
from actors.pipeline.attempt import RunContext
from actors.pipeline.provider.client import ProviderClient
from actors.pipeline.runner import ExportRunner
from actors.plumbing.config import Settings
from actors.plumbing.registry_source import RegistryHolder
from db.store import ExportStore
from tests.provider_server import serve_provider

SERVICE = "runner-provider"
ROWS_PER_BATCH = 50
DEFINITION = ExportDefinition(
    "CUSTOMER_LIST",
    SERVICE,
    "/internal/exports/v1/CUSTOMER_LIST/batches",
    "platform:customer:export",
    AppCode.PLATFORM,
    batch_size=ROWS_PER_BATCH,
)

#: a fake Provider: gets the batch number (0-based, from the cursor), answers a response
Answer = Callable[[int], Awaitable[httpx.Response]]


def ok(data: dict) -> httpx.Response:
    return httpx.Response(200, json={"code": "200", "message": "ok", "data": data})


async def run(
    store: ExportStore,
    settings: Settings,
    answer: Answer,
    ctx: RunContext,
    registry: Registry | None = None,
) -> Any:
    """Run the runner once over the fake Provider ``answer``; return its result."""

    async def provider(request: httpx.Request) -> httpx.Response:
        return await answer(int(json.loads(request.content).get("cursor") or 0))

    async with serve_provider(provider) as url:
        client = ProviderClient({SERVICE: url}, "token")
        runner = ExportRunner(
            store,
            client,
            RegistryHolder(registry or Registry({"CUSTOMER_LIST": DEFINITION})),
            settings,
        )
        return await runner(ctx)
