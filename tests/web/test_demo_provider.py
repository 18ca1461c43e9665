"""The built-in CUSTOMER_LIST demo Provider (§10.1, §10.2, §12) through Quart's test client."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from typing import Any

import pytest
from quart_trio import QuartTrio

from actors.core.batch import ColumnType
from actors.core.provider.contract import parse_batch_data
from web.demo_provider.app import create_demo_provider_blueprint
from web.demo_provider.data import (
    DEMO_COLUMNS,
    DEMO_SCHEMA_HASH,
    LONG_REMARK_CHARS,
    PROVIDER_PATH,
    customer_row,
    mint_snapshot_token,
)

TOKEN = "internal-token"
SECRET = b"snapshot-secret"
HEADERS = {"X-Internal-Service-Token": TOKEN}
#: Pinned: a change here means the demo's columns changed, which every stored export and
#: every running task would see as "schemaHash changed" (§10.1).
PINNED_SCHEMA_HASH = "sha256:9cbe702c58aa8299a49d685730bf62f81cda05b02b75c2d91a177c0217de184f"


def make_app(default_rows: int = 1000) -> QuartTrio:
    app = QuartTrio(__name__)
    app.register_blueprint(
        create_demo_provider_blueprint(
            service_token=TOKEN, snapshot_secret=SECRET, default_rows=default_rows
        )
    )
    return app


def body(**overrides: Any) -> dict[str, Any]:
    request: dict[str, Any] = {
        "taskId": "190000000000000001",
        "tenantId": "0",
        "appCode": "PLATFORM",
        "requestedBy": "1900000000000000009",
        "dispatchVersion": 1,
        "parameters": {},
        "cursor": None,
        "snapshotToken": None,
        "limit": 500,
    }
    request.update(overrides)
    return request


async def post(
    app: QuartTrio, payload: Any, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    client = app.test_client()
    response = await client.post(
        PROVIDER_PATH, json=payload, headers=HEADERS if headers is None else headers
    )
    return response.status_code, json.loads(await response.get_data())


async def ok_data(app: QuartTrio, payload: Any) -> dict[str, Any]:
    status, envelope = await post(app, payload)
    assert (status, envelope["code"], envelope["message"]) == (200, "200", "success")
    return envelope["data"]


# --- pure data -------------------------------------------------------------------------------


def test_customer_row_is_deterministic_and_covers_every_column() -> None:
    assert [customer_row(i) for i in range(1, 200)] == [customer_row(i) for i in range(1, 200)]
    row = customer_row(8)
    assert list(row) == [c.key for c in DEMO_COLUMNS]
    assert row["customerId"] == 8
    assert row["tenantCode"] == "TEN0000008"
    assert isinstance(row["creditLimit"], float)
    assert isinstance(row["active"], bool)
    assert date.fromisoformat(row["registeredOn"]).isoformat() == row["registeredOn"]
    assert datetime.fromisoformat(row["lastOrderAt"]).utcoffset() == timedelta(hours=8)
    assert row["lastOrderAt"].endswith("+08:00")
    assert customer_row(5)["lastOrderAt"] is None
    assert customer_row(11)["remark"] is None
    assert {c.type for c in DEMO_COLUMNS} == set(ColumnType)


def test_hostile_strings_are_in_customers_1_to_7() -> None:
    """Formula prefixes (§11: = + - @ Tab CR) and an over-long cell on every demo."""
    prefixes = ["=", "+", "-", "@", "\t", "\r"]
    for customer_id, prefix in enumerate(prefixes, start=1):
        row = customer_row(customer_id)
        assert row["tenantName"].startswith(prefix)
        assert row["remark"].startswith(prefix)
    assert customer_row(1)["tenantName"] == '=HYPERLINK("http://x")'
    assert len(customer_row(7, edge_cases=True)["remark"]) == LONG_REMARK_CHARS == 40_000
    assert customer_row(7)["remark"] == "演示客户 7"  # no warning on every demo export


def test_schema_hash_is_stable() -> None:
    assert DEMO_SCHEMA_HASH == PINNED_SCHEMA_HASH


# --- contract --------------------------------------------------------------------------------


async def test_first_batch_carries_columns_token_and_valid_contract_data() -> None:
    app = make_app()
    data = await ok_data(app, body(parameters={"rowCount": 1200}, limit=1000))

    batch = parse_batch_data(data, limit=1000, max_columns=100)
    assert batch.columns == DEMO_COLUMNS
    assert batch.schema_hash == DEMO_SCHEMA_HASH
    assert batch.snapshot_token is not None and batch.snapshot_token.startswith("v1.1200.")
    assert [r["customerId"] for r in batch.rows] == list(range(1, 1001))
    assert (batch.next_cursor, batch.has_more, batch.total_rows) == ("1000", True, 1200)


async def test_answers_are_deterministic() -> None:
    app = make_app()
    first = await ok_data(app, body(parameters={"rowCount": 50}))
    again = await ok_data(make_app(), body(parameters={"rowCount": 50}))
    assert first == again


async def test_later_batches_echo_token_omit_columns_and_end() -> None:
    app = make_app()
    first = await ok_data(app, body(parameters={"rowCount": 700}))
    second = await ok_data(
        app,
        body(
            parameters={"rowCount": 700},
            cursor=first["nextCursor"],
            snapshotToken=first["snapshotToken"],
        ),
    )
    assert "columns" not in second
    assert second["snapshotToken"] == first["snapshotToken"]
    assert second["schemaHash"] == DEMO_SCHEMA_HASH
    assert [r["customerId"] for r in second["rows"]] == list(range(501, 701))
    assert (second["nextCursor"], second["hasMore"]) == ("700", False)


async def test_snapshot_excludes_rows_added_after_first_batch() -> None:
    """§10.2: the signed max id caps later batches even when the table grew."""
    app = make_app()
    first = await ok_data(app, body(parameters={"rowCount": 10}, limit=5))
    grown = await ok_data(
        app,
        body(
            parameters={"rowCount": 20}, limit=5, cursor="5", snapshotToken=first["snapshotToken"]
        ),
    )
    assert [r["customerId"] for r in grown["rows"]] == [6, 7, 8, 9, 10]
    assert grown["hasMore"] is False


async def test_response_for_1000_rows_stays_far_under_4_mb() -> None:
    client = make_app().test_client()
    response = await client.post(
        PROVIDER_PATH, json=body(parameters={"rowCount": 5000}, limit=1000), headers=HEADERS
    )
    assert len(await response.get_data()) < 1024 * 1024


async def test_status_and_keyword_filter_rows() -> None:
    app = make_app()
    inactive = await ok_data(app, body(parameters={"rowCount": 100, "status": "INACTIVE"}))
    assert [r["customerId"] for r in inactive["rows"]] == list(range(7, 101, 7))
    assert all(r["active"] is False for r in inactive["rows"])
    assert inactive["totalRows"] == 14
    matching = await ok_data(app, body(parameters={"rowCount": 300, "keyword": "柏悦"}))
    assert matching["rows"]
    assert all("柏悦" in r["tenantName"] for r in matching["rows"])
    assert matching["hasMore"] is False


# --- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize("headers", [{}, {"X-Internal-Service-Token": "wrong"}])
async def test_wrong_service_token_is_401(headers: dict[str, str]) -> None:
    """§10.1: the Provider answers only the configured X-Internal-Service-Token."""
    status, envelope = await post(make_app(), body(), headers=headers)
    assert (status, envelope["code"], envelope["data"]) == (401, "401", None)


@pytest.mark.parametrize("field", ["tenantId", "appCode", "requestedBy"])
@pytest.mark.parametrize("value", [None, "", "MISSING"])
async def test_tenant_fields_are_required(field: str, value: Any) -> None:
    """§10.1: tenantId, appCode and requestedBy are required (§19.1 租户字段必填)."""
    payload = body()
    if value == "MISSING":
        del payload[field]
    else:
        payload[field] = value
    status, envelope = await post(make_app(), payload)
    assert (status, envelope["code"]) == (200, "400")
    assert field in envelope["message"]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        # Found by a newcomer: each of these used to answer a message that sent them
        # looking for the wrong problem ("required", "not digits").
        ({"tenantId": "-1"}, "tenantId must be 0 or a positive id, got '-1'"),
        ({"requestedBy": "-7"}, "requestedBy must be 0 or a positive id, got '-7'"),
        (
            {"tenantId": "1" * 30},
            "tenantId is out of range: 30 digits, the largest 64-bit id is 9223372036854775807",
        ),
        (
            {"cursor": "1" * 30, "snapshotToken": "any"},
            "cursor is out of range: 30 digits; this Provider's cursors are customer ids of at "
            "most 19 digits",
        ),
        ({"cursor": "abc"}, "cursor must be null or a string of digits, got 'abc'"),
        ({"cursor": 5}, "cursor must be null or a string of digits, got int"),
    ],
)
async def test_refusals_say_what_is_wrong_with_the_value(
    overrides: dict[str, Any], message: str
) -> None:
    status, envelope = await post(make_app(), body(**overrides))
    assert (status, envelope["code"]) == (200, "400")
    assert envelope["message"].startswith(message), envelope["message"]


async def test_a_body_of_spaces_is_not_json_rather_than_empty() -> None:
    client = make_app().test_client()
    response = await client.post(PROVIDER_PATH, data=b"    ", headers=HEADERS)
    envelope = json.loads(await response.get_data())
    assert envelope["code"] == "400"
    assert envelope["message"].startswith(
        "request body is not valid JSON: it holds only whitespace"
    )


async def test_merchant_app_code_is_refused_for_platform_export() -> None:
    status, envelope = await post(make_app(), body(appCode="MERCHANT"))
    assert (status, envelope["code"]) == (200, "403")


@pytest.mark.parametrize(
    "overrides",
    [
        {"limit": 0},
        {"limit": 1001},
        {"limit": "500"},
        {"parameters": {"rowCount": 0}},
        {"parameters": {"rowCount": 1_000_001}},
        {"parameters": {"status": "DELETED"}},
        {"parameters": []},
        {"cursor": 5},
        {"cursor": "5"},  # a later batch without its token
    ],
)
async def test_malformed_requests_are_400(overrides: dict[str, Any]) -> None:
    status, envelope = await post(make_app(), body(**overrides))
    assert (status, envelope["code"]) == (200, "400")


async def test_non_json_body_is_400() -> None:
    client = make_app().test_client()
    response = await client.post(PROVIDER_PATH, data=b"not json", headers=HEADERS)
    assert json.loads(await response.get_data())["code"] == "400"


async def test_tampered_snapshot_token_is_409() -> None:
    """§10.2: an invalid token is a permanent business error code."""
    app = make_app()
    first = await ok_data(app, body(parameters={"rowCount": 1000}))
    token = first["snapshotToken"]
    forged_max = token.replace("v1.1000.", "v1.9999.")
    flipped = token[:-1] + ("0" if token[-1] != "0" else "1")
    for bad in (forged_max, flipped, "garbage"):
        status, envelope = await post(
            app, body(parameters={"rowCount": 1000}, cursor="500", snapshotToken=bad)
        )
        assert (status, envelope["code"], envelope["message"]) == (
            200,
            "409",
            "snapshot token invalid or expired",
        )


async def test_snapshot_token_of_another_tenant_is_409() -> None:
    app = make_app()
    foreign = mint_snapshot_token(SECRET, 42, "PLATFORM", 1000)
    status, envelope = await post(
        app, body(parameters={"rowCount": 1000}, cursor="500", snapshotToken=foreign)
    )
    assert envelope["code"] == "409"


def test_blueprint_refuses_empty_token_or_secret() -> None:
    with pytest.raises(ValueError):
        create_demo_provider_blueprint(service_token="", snapshot_secret=SECRET)
    with pytest.raises(ValueError):
        create_demo_provider_blueprint(service_token=TOKEN, snapshot_secret=b"")
