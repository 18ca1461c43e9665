"""Table tests of the Provider contract (actors/core/provider/contract.py): what the File
Service sends, what a Provider answers, and the rules across batches.
Both sides of the contract are exercised against each other: what one builds, the other
reads back."""

from __future__ import annotations

from typing import Any

import pytest

from actors.core.batch import ColumnDef, ColumnType
from actors.core.errors import (
    LimitExceededError,
    ParameterError,
    ProviderContractError,
)
from actors.core.principal import AppCode
from actors.core.provider.columns import column_json
from actors.core.provider.contract import (
    MAX_BATCH_LIMIT,
    SUCCESS_CODE,
    batch_data,
    batches_path,
    parse_envelope,
    response_envelope,
)
from actors.core.provider.request import (
    BatchRequest,
    request_app_code,
    request_id,
    request_limit,
    request_parameters,
    request_snapshot_token,
)

COLUMNS = (
    ColumnDef("id", "ID", ColumnType.INTEGER, 12),
    ColumnDef("name", "Name", ColumnType.STRING),
)


def _tenant_id(body: dict[str, Any]) -> int:
    return request_id(body, "tenantId")


def test_batches_path() -> None:
    assert batches_path("CUSTOMER_LIST") == "/internal/exports/v1/CUSTOMER_LIST/batches"


@pytest.mark.parametrize(
    ("cursor", "token", "parameters"),
    [
        (None, None, {}),
        ("1000", "v1.5000.abc", {"status": "ACTIVE", "keyword": "远航"}),
    ],
)
def test_request_round_trip(
    cursor: str | None, token: str | None, parameters: dict[str, Any]
) -> None:
    request = BatchRequest(
        task_id=2**63 - 1,
        tenant_id=0,
        app_code="PLATFORM",
        requested_by=7,
        dispatch_version=3,
        parameters=parameters,
        cursor=cursor,
        snapshot_token=token,
        limit=500,
    )
    body = request.to_json()
    assert body["taskId"] == str(2**63 - 1)  # 64-bit ids travel as strings
    assert request_id(body, "tenantId") == 0
    assert request_id(body, "requestedBy") == 7
    assert request_app_code(body) == AppCode.PLATFORM
    assert request_limit(body) == 500
    assert request_parameters(body) == parameters
    assert request_snapshot_token(body) == token
    assert body["cursor"] == cursor


@pytest.mark.parametrize(
    ("body", "read", "field", "message"),
    [
        ({}, lambda b: request_id(b, "tenantId"), "tenantId", "tenantId is required"),
        # A value that is there but wrong says what is wrong with it, not "required".
        (
            {"requestedBy": "-1"},
            lambda b: request_id(b, "requestedBy"),
            "requestedBy",
            "requestedBy must be 0 or a positive id, got '-1'",
        ),
        (
            {"tenantId": -5},
            lambda b: request_id(b, "tenantId"),
            "tenantId",
            "tenantId must be 0 or a positive id, got '-5'",
        ),
        (
            {"tenantId": "1" * 20},  # longer than any 64-bit id
            lambda b: request_id(b, "tenantId"),
            "tenantId",
            "tenantId is out of range: 20 digits, the largest 64-bit id is 9223372036854775807",
        ),
        (
            {"tenantId": str(2**63)},  # 19 digits, one past the largest
            lambda b: request_id(b, "tenantId"),
            "tenantId",
            "tenantId is out of range: 19 digits, the largest 64-bit id is 9223372036854775807",
        ),
        (
            {"tenantId": "9" * 5000},  # never converted whole
            lambda b: request_id(b, "tenantId"),
            "tenantId",
            "tenantId is out of range: 5000 digits",
        ),
        (
            {"tenantId": True},
            lambda b: request_id(b, "tenantId"),
            "tenantId",
            "tenantId must be a string of digits, got bool True",
        ),
        (
            {"tenantId": ""},
            lambda b: request_id(b, "tenantId"),
            "tenantId",
            "tenantId must be a string of digits, got ''",
        ),
        (
            {"tenantId": "\uff11"},  # a fullwidth digit is not an ASCII digit
            lambda b: request_id(b, "tenantId"),
            "tenantId",
            "tenantId must be a string of digits, got",
        ),
        (
            {"tenantId": "-"},
            lambda b: request_id(b, "tenantId"),
            "tenantId",
            "tenantId must be a string of digits, got '-'",
        ),
        ({}, request_app_code, "appCode", "appCode is required"),
        (
            {"appCode": "OTHER"},
            request_app_code,
            "appCode",
            "appCode must be one of PLATFORM, MERCHANT",
        ),
        ({}, request_limit, "limit", f"limit must be an integer in 1..{MAX_BATCH_LIMIT}"),
        ({"limit": 0}, request_limit, "limit", "limit must be an integer in 1..1000"),
        ({"limit": 1001}, request_limit, "limit", "limit must be an integer in 1..1000"),
        ({"limit": "5"}, request_limit, "limit", "limit must be an integer in 1..1000"),
        ({"parameters": [1]}, request_parameters, "parameters", "parameters must be an object"),
        (
            {"snapshotToken": 5},
            request_snapshot_token,
            "snapshotToken",
            "snapshotToken must be a string",
        ),
    ],
)
def test_requests_outside_the_contract(
    body: dict[str, Any], read: Any, field: str, message: str
) -> None:
    with pytest.raises(ParameterError) as caught:
        read(body)
    assert caught.value.field == field
    assert caught.value.message.startswith(message), caught.value.message


@pytest.mark.parametrize(
    ("body", "value"),
    [
        ({"tenantId": 5}, 5),  # a bare number is accepted too
        ({"tenantId": "0"}, 0),
        ({"tenantId": str(2**63 - 1)}, 2**63 - 1),
        ({"tenantId": "007"}, 7),
    ],
)
def test_request_ids(body: dict[str, Any], value: int) -> None:
    assert request_id(body, "tenantId") == value


def _answer(**overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = dict(
        schema_hash="sha256:abc",
        snapshot_token="v1.2.sig",
        rows=[{"id": 1, "name": "a"}, {"id": 2, "name": None}],
        next_cursor="2",
        has_more=False,
        total_rows=2,
        columns=[column_json(c) for c in COLUMNS],
    )
    fields.update(overrides)
    return response_envelope(SUCCESS_CODE, "success", batch_data(**fields))


def test_answer_round_trip() -> None:
    batch = parse_envelope(_answer(), "svc", limit=2, max_columns=100)
    assert batch.columns == COLUMNS
    assert (batch.schema_hash, batch.snapshot_token, batch.next_cursor) == (
        "sha256:abc",
        "v1.2.sig",
        "2",
    )
    assert (batch.has_more, batch.total_rows, batch.row_count) == (False, 2, 2)


def test_later_batches_may_omit_columns() -> None:
    assert "columns" not in batch_data(
        schema_hash="h",
        snapshot_token=None,
        rows=[],
        next_cursor=None,
        has_more=False,
        total_rows=None,
        columns=None,
    )
    batch = parse_envelope(_answer(columns=None), "svc", limit=2, max_columns=100)
    assert batch.columns is None


@pytest.mark.parametrize(
    ("envelope", "error", "message"),
    [
        ([], ProviderContractError, "provider svc answered JSON that is not an object"),
        ({"message": "x"}, ProviderContractError, "provider svc envelope has no code"),
        (
            response_envelope("409", "snapshot token invalid or expired", None),
            ProviderContractError,
            "provider svc answered code 409: snapshot token invalid or expired",
        ),
        (
            response_envelope(SUCCESS_CODE, "success", None),
            ProviderContractError,
            "provider svc envelope data is not an object",
        ),
        (
            _answer(rows=[{"id": 1}] * 3),
            ProviderContractError,
            "provider svc: batch has 3 rows; the batch-size limit is 2 rows",
        ),
        (
            _answer(columns=[column_json(COLUMNS[0])] * 2),
            ProviderContractError,
            "provider svc: columns[1].key 'id' is duplicated",
        ),
        (
            _answer(
                columns=[column_json(ColumnDef(f"c{i}", "t", ColumnType.STRING)) for i in range(3)]
            ),
            LimitExceededError,
            "provider declared 3 columns; the limit is 2 columns",
        ),
        (
            _answer(total_rows=-1),
            ProviderContractError,
            "provider svc: totalRows -1 is not a non-negative integer",
        ),
        (
            _answer(snapshot_token="x" * 513),
            ProviderContractError,
            "provider svc: snapshotToken has 513 characters; the limit is 512",
        ),
    ],
)
def test_answers_outside_the_contract(envelope: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as caught:
        parse_envelope(envelope, "svc", limit=2, max_columns=2)
    assert str(caught.value) == message


def _columns(**number: Any) -> list[dict[str, Any]]:
    column = {"key": "amount", "title": "Amount", "type": "DECIMAL", **number}
    return [column]


@pytest.mark.parametrize(
    "code",
    ["0.00", "#,##0.00", "[$¥-804]#,##0.00", '#,##0.00 "元"', "0%", "0.00E+00", "0.00;-0.00;0"],
)
def test_a_number_format_is_carried_into_the_column(code: str) -> None:
    batch = parse_envelope(_answer(columns=_columns(format=code)), "svc", limit=2, max_columns=9)
    assert batch.columns is not None and batch.columns[0].number_format == code
    assert column_json(batch.columns[0])["format"] == code  # and round-trips


@pytest.mark.parametrize(
    ("column", "message"),
    [
        (_columns(format="General"), "columns[0].format 'General' is not a number format"),
        (_columns(format="[Red]0.00"), "is not a number format this service writes"),
        (_columns(format='"x"'), "has no digit placeholder 0, # or ?"),
        (_columns(format=""), "must be a string of 1..64 characters"),
        (_columns(format=2), "must be a string of 1..64 characters"),
        (_columns(format="0" * 65), "must be a string of 1..64 characters"),
        (_columns(format="0.00;0;0;0;0"), "is not a number format"),
        (
            [{"key": "k", "title": "K", "type": "STRING", "format": "0.00"}],
            "columns[0].format is only for INTEGER and DECIMAL columns, not STRING",
        ),
    ],
)
def test_a_number_format_outside_the_subset_is_a_contract_error(
    column: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(ProviderContractError, match=message.replace("[", r"\[")):
        parse_envelope(_answer(columns=column), "svc", limit=2, max_columns=9)
