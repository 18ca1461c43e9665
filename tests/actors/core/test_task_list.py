"""The task list's query string (``actors/core/task_list.py``): filters, paging, and a
refusal naming the parameter for each wrong value."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from actors.core.errors import ParameterError, Refusal, Refused
from actors.core.limits import MAX_PAGE, MAX_PAGE_SIZE
from actors.core.task_list import ListQuery, TaskFilter, parse_list_query
from web.errors import envelope_code

STATUSES = "PENDING, RUNNING, SUCCEEDED, FAILED, EXPIRED, CANCELLED"
AT = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


def q(**args: str | list[str]) -> dict[str, list[str]]:
    return {k: v if isinstance(v, list) else [v] for k, v in args.items()}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({}, ListQuery(TaskFilter(), 1, 20)),
        (q(page="3", pageSize="100"), ListQuery(TaskFilter(), 3, 100)),
        (q(page=str(MAX_PAGE), pageSize="1"), ListQuery(TaskFilter(), MAX_PAGE, 1)),
        (q(status="FAILED"), ListQuery(TaskFilter(("FAILED",)), 1, 20)),
        (q(status=""), ListQuery(TaskFilter(), 1, 20)),
        (
            q(status=["RUNNING", "PENDING"]),
            ListQuery(TaskFilter(("PENDING", "RUNNING")), 1, 20),
        ),
        (
            q(status=["PENDING,RUNNING", "RUNNING", "FAILED,"]),
            ListQuery(TaskFilter(("FAILED", "PENDING", "RUNNING")), 1, 20),
        ),
        (q(exportType="CUSTOMER_LIST"), ListQuery(TaskFilter(export_type="CUSTOMER_LIST"), 1, 20)),
        (
            q(requestedFrom="2026-12-01T08:00:00Z", requestedTo="2026-12-01T09:00:00+01:00"),
            ListQuery(TaskFilter(requested_from=AT, requested_to=AT), 1, 20),
        ),
        (  # no offset: UTC
            q(requestedFrom="2026-12-01T08:00"),
            ListQuery(TaskFilter(requested_from=AT), 1, 20),
        ),
        (q(requestedBy="42"), ListQuery(TaskFilter(requested_by=42), 1, 20)),
        (q(requestedBy=""), ListQuery(TaskFilter(), 1, 20)),
        (q(unknown=["a", "b"]), ListQuery(TaskFilter(), 1, 20)),  # ignored
    ],
)
def test_a_valid_query(args: dict[str, list[str]], expected: ListQuery) -> None:
    query = parse_list_query(args, sees_all=True)
    assert query == expected
    assert query.offset == (expected.page - 1) * expected.page_size


@pytest.mark.parametrize(
    ("args", "field", "message"),
    [
        (q(status="DONE"), "status", f"status must be one of {STATUSES} (got 'DONE')"),
        (q(status="failed"), "status", f"status must be one of {STATUSES} (got 'failed')"),
        (
            q(status=["PENDING", "PENDING,NOPE"]),
            "status",
            f"status must be one of {STATUSES} (got 'NOPE')",
        ),
        (q(page=["1", "2"]), "page", "page may be given once (it was given 2 times)"),
        (q(pageSize=["5", "5"]), "pageSize", "pageSize may be given once (it was given 2 times)"),
        (
            q(exportType=["A", "B"]),
            "exportType",
            "exportType may be given once (it was given 2 times)",
        ),
        (
            q(requestedBy=["1", "1", "1"]),
            "requestedBy",
            "requestedBy may be given once (it was given 3 times)",
        ),
        (q(page="x"), "page", f"page must be an integer in 1..{MAX_PAGE}"),
        (q(page="0"), "page", f"page must be an integer in 1..{MAX_PAGE}"),
        (q(page="+1"), "page", f"page must be an integer in 1..{MAX_PAGE}"),
        (q(page="９"), "page", f"page must be an integer in 1..{MAX_PAGE}"),
        (q(page="1" * 5000), "page", f"page must be an integer in 1..{MAX_PAGE}"),
        (q(page=str(MAX_PAGE + 1)), "page", f"page must be an integer in 1..{MAX_PAGE}"),
        (q(pageSize=""), "pageSize", f"pageSize must be an integer in 1..{MAX_PAGE_SIZE}"),
        (
            q(pageSize=str(MAX_PAGE_SIZE + 1)),
            "pageSize",
            f"pageSize must be an integer in 1..{MAX_PAGE_SIZE}",
        ),
        (q(exportType=""), "exportType", "exportType must be 1..64 characters"),
        (q(exportType="T" * 65), "exportType", "exportType must be 1..64 characters"),
        (
            q(requestedFrom="yesterday"),
            "requestedFrom",
            "requestedFrom must be an ISO-8601 time such as 2026-12-01T08:00:00Z",
        ),
        (
            q(requestedTo="2026-13-01"),
            "requestedTo",
            "requestedTo must be an ISO-8601 time such as 2026-12-01T08:00:00Z",
        ),
        (
            q(requestedFrom="2026-12-02", requestedTo="2026-12-01"),
            "requestedFrom",
            "requestedFrom must not be after requestedTo",
        ),
        (
            q(requestedBy="-4"),
            "requestedBy",
            "requestedBy must be a user id (a positive integer)",
        ),
        (
            q(requestedBy="0"),
            "requestedBy",
            "requestedBy must be a user id (a positive integer)",
        ),
        (
            q(requestedBy=str(1 << 63)),
            "requestedBy",
            "requestedBy must be a user id (a positive integer)",
        ),
    ],
)
def test_a_wrong_value_is_refused_naming_the_parameter(
    args: dict[str, list[str]], field: str, message: str
) -> None:
    with pytest.raises(ParameterError) as caught:
        parse_list_query(args, sees_all=True)
    assert (caught.value.field, caught.value.message) == (field, message)
    assert envelope_code(caught.value) == "400"


def test_requested_by_needs_the_download_all_permission() -> None:
    with pytest.raises(Refused) as caught:
        parse_list_query(q(requestedBy="42"), sees_all=False)
    assert caught.value.reason == Refusal.MISSING_PERMISSION
    assert "requestedBy needs the platform:download:all permission" in caught.value.message
    assert envelope_code(caught.value) == "403"


def test_a_time_with_an_offset_is_compared_in_utc() -> None:
    query = parse_list_query(q(requestedFrom="2026-12-01T16:00:00+08:00"), sees_all=False)
    assert query.filter.requested_from == AT
    assert query.filter.requested_from.tzinfo == UTC
    assert AT.astimezone(timezone(timedelta(hours=8))) == query.filter.requested_from
