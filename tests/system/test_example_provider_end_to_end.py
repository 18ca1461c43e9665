"""The example Provider of docs/provider-guide.md against the real service: the example
runs as its own process, the service (``python -m actors``, another process) finds it
through a registry file and ``FILE_EXPORT_PROVIDER_URLS``, and the file that comes back
holds exactly the example's rows for the caller's tenant."""

from __future__ import annotations

import io
import json
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import httpx
import openpyxl

from actors.core.principal import AppCode
from tests.helpers import API, wait_for_status
from tests.processes import (
    PROCESS_SECRET,
    ServeProcess,
    example_provider_process,
    load_example_provider,
)
from web.auth import issue_token

TOKEN = "example-provider-token"
TENANT = 42
REGISTRY = """\
definitions:
  ORDER_LIST:
    provider-service: order-service
    provider-path: /internal/exports/v1/ORDER_LIST/batches
    required-permission: platform:order:export
    app-scope: PLATFORM
    max-rows: 1000
    batch-size: 100
"""


async def test_the_example_provider_exports_its_rows_through_the_real_service(
    tmp_path: Path, processes: list[ServeProcess]
) -> None:
    example = load_example_provider()
    registry = tmp_path / "registry.yaml"
    registry.write_text(REGISTRY)
    with example_provider_process(TOKEN, tmp_path / "provider.log") as provider_url:
        service = ServeProcess(
            tmp_path / "data",
            tmp_path / "service.log",
            FILE_EXPORT_REGISTRY=str(registry),
            FILE_EXPORT_PROVIDER_URLS=json.dumps({"order-service": provider_url}),
            FILE_EXPORT_DEMO_PROVIDER="false",
            INTERNAL_SERVICE_TOKEN=TOKEN,
            FILE_EXPORT_PUBLISHER_POLL_MS="200",
        )
        processes.append(service)
        url = await service.ready()
        token = issue_token(
            PROCESS_SECRET,
            user_id=5,
            tenant_id=TENANT,
            app_code=AppCode.PLATFORM,
            perms=["platform:order:export"],
        )
        async with httpx.AsyncClient(
            base_url=url, timeout=10, headers={"Authorization": f"Bearer {token}"}
        ) as client:
            created = (
                await client.post(API, json={"exportType": "ORDER_LIST", "format": "XLSX"})
            ).json()
            assert created["code"] == "200", created
            task_id = created["data"]["id"]
            task = await wait_for_status(client, task_id, "SUCCEEDED", "FAILED", timeout=60)
            assert task["status"] == "SUCCEEDED", task["failureMessage"]
            expected = example.orders(TENANT)
            assert task["processedRows"] == str(len(expected)) == "250"
            download = await client.get(f"{API}/{task_id}/download")
        assert download.status_code == 200
        # Three batches of 100, 100 and 50 rows: the cursor and the snapshot token went
        # round the loop; each call is one line of the example's request log.
        calls = (tmp_path / "provider.log").read_text().count("POST /internal/exports/v1/")
        assert calls == 3

    sheet = openpyxl.load_workbook(io.BytesIO(download.content), read_only=True).active
    assert sheet is not None
    header, *rows = [list(row) for row in sheet.iter_rows(values_only=True)]
    assert header == [c["title"] for c in example.COLUMNS]
    assert rows == [
        [
            row["orderId"],
            float(Decimal(row["amount"])),
            row["paid"],
            datetime.fromisoformat(row["placedAt"]).replace(tzinfo=None),
        ]
        for row in expected
    ]
    assert rows[0][0] == TENANT * 1000 + 1  # the tenant's own orders
