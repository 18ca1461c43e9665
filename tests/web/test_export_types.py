"""``GET /api/platform/v1/files/export-types`` over real HTTP (web/export_types.py): the
types the caller may request, from the registry in force, with their hints."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import yaml

from actors.core.definitions import ExportDefinition, ParameterHint, Registry
from actors.core.principal import AppCode
from actors.core.registry import parse_registry
from actors.plumbing.registry_source import default_registry_path
from actors.storage.local import LocalDirectoryStorage
from db.store import ExportStore
from tests.servers import API_SECRET, api_app, headers, served
from web.auth import issue_token

TYPES = "/api/platform/v1/files/export-types"


def definition(export_type: str, permission: str, **kw: object) -> ExportDefinition:
    return ExportDefinition(
        export_type,
        "demo-service",
        f"/internal/exports/v1/{export_type}/batches",
        permission,
        AppCode.PLATFORM,
        **kw,  # type: ignore[arg-type]
    )


ORDERS = definition(
    "ORDER_LIST",
    "platform:order:export",
    max_rows=5000,
    display_name="Orders",
    description="Every order.",
    parameters=(ParameterHint("from", "date", True, "first day"),),
)


@pytest.fixture
async def served_app(store: ExportStore, storage: LocalDirectoryStorage):  # type: ignore[no-untyped-def]
    app, services = api_app(store, storage)
    async with served(app) as url:
        yield url, services


async def test_the_caller_sees_the_types_it_may_request(served_app) -> None:  # type: ignore[no-untyped-def]
    url, services = served_app
    services.registry.replace(
        Registry(
            {
                "CUSTOMER_LIST": definition("CUSTOMER_LIST", "platform:customer:export"),
                "ORDER_LIST": ORDERS,
                "OLD_LIST": definition("OLD_LIST", "platform:customer:export", enabled=False),
            }
        )
    )
    async with httpx.AsyncClient(base_url=url, timeout=10) as c:
        both = await c.get(
            TYPES, headers=headers(perms=("platform:customer:export", "platform:order:export"))
        )
        assert both.status_code == 200
        assert both.json() == {
            "code": "200",
            "message": "success",
            "data": [
                {
                    "exportType": "CUSTOMER_LIST",
                    "displayName": "CUSTOMER_LIST",  # no display-name in the registry
                    "description": "",
                    "formats": ["XLSX"],
                    "maxRows": 200000,
                    "parameters": [],
                    "translations": {},
                },
                {
                    "exportType": "ORDER_LIST",
                    "displayName": "Orders",
                    "description": "Every order.",
                    "formats": ["XLSX"],
                    "maxRows": 5000,
                    "parameters": [
                        {
                            "name": "from",
                            "type": "date",
                            "required": True,
                            "label": "from",  # no label in the registry: the name
                            "description": "first day",
                            "values": [],
                            "minimum": None,
                            "maximum": None,
                            "translations": {},
                        }
                    ],
                    "translations": {},
                },
            ],
        }
        only_orders = await c.get(TYPES, headers=headers(perms=("platform:order:export",)))
        assert [t["exportType"] for t in only_orders.json()["data"]] == ["ORDER_LIST"]
        nothing = await c.get(TYPES, headers=headers(perms=()))
        assert nothing.json()["data"] == []

        # A registry reload applies to the next request.
        services.registry.replace(Registry({"ORDER_LIST": ORDERS}))
        after = await c.get(
            TYPES, headers=headers(perms=("platform:customer:export", "platform:order:export"))
        )
        assert [t["exportType"] for t in after.json()["data"]] == ["ORDER_LIST"]


async def test_the_shipped_demo_type_carries_its_hints(served_app) -> None:  # type: ignore[no-untyped-def]
    url, services = served_app
    shipped = yaml.safe_load(Path(default_registry_path()).read_text(encoding="utf-8"))
    services.registry.replace(parse_registry(shipped, {"demo-service"}))
    async with httpx.AsyncClient(base_url=url, timeout=10) as c:
        (customer_list,) = (await c.get(TYPES, headers=headers())).json()["data"]
    assert customer_list["displayName"] == "Customer list"
    assert [p["name"] for p in customer_list["parameters"]] == ["status", "keyword", "rowCount"]


async def test_a_session_cookie_works_and_no_credential_is_401(served_app) -> None:  # type: ignore[no-untyped-def]
    url, _ = served_app
    async with httpx.AsyncClient(base_url=url, timeout=10) as c:
        refused = await c.get(TYPES)
        assert refused.status_code == 401 and refused.json()["code"] == "401"
        token = issue_token(
            API_SECRET,
            user_id=7,
            tenant_id=0,
            app_code=AppCode.PLATFORM,
            perms=("platform:customer:export",),
        )
        await c.post("/api/platform/v1/session", json={"token": token})
        listed = (await c.get(TYPES)).json()
        assert [t["exportType"] for t in listed["data"]] == ["CUSTOMER_LIST"]


async def test_a_create_is_held_to_the_parameters_its_type_declares(served_app) -> None:  # type: ignore[no-untyped-def]
    url, services = served_app
    services.registry.replace(Registry({"ORDER_LIST": ORDERS}))
    perms = headers(perms=("platform:order:export",))
    tasks = "/api/platform/v1/files/export-tasks"
    async with httpx.AsyncClient(base_url=url, timeout=10) as c:
        missing = await c.post(tasks, json={"exportType": "ORDER_LIST"}, headers=perms)
        wrong = await c.post(
            tasks,
            json={"exportType": "ORDER_LIST", "parameters": {"from": 20261201}},
            headers=perms,
        )
        right = await c.post(
            tasks,
            json={"exportType": "ORDER_LIST", "parameters": {"from": "2026-12-01", "x": 1}},
            headers=perms,
        )
        listed = (await c.get(tasks, headers=perms)).json()["data"]
    # Refusals are business outcomes: HTTP 200, the code in the envelope.
    assert missing.json()["code"] == "400"
    assert missing.json()["message"] == "parameters.from is required by this export type"
    assert wrong.json()["code"] == "400"
    assert wrong.json()["message"] == "parameters.from must be a date as YYYY-MM-DD, not a number"
    assert right.json()["code"] == "200" and right.json()["data"]["status"] == "PENDING"
    # Refused creates made no task: only the valid one is listed.
    assert [t["id"] for t in listed["items"]] == [right.json()["data"]["id"]]
