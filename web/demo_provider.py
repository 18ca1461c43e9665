"""The built-in demo Provider for export type ``CUSTOMER_LIST`` (§10.1, §10.2).

It serves a synthetic customer table with ids ``1..rowCount`` over the real Provider
contract, so the embedded mode exercises the whole pipeline over HTTP, as production does. Every
value is a pure function of the customer id: no randomness, no clock, so two runs of a demo
produce the same file.

The data is built to keep the writer's guards busy on every demo (§11): customers 1..6
carry formula-like strings (leading ``= + - @ Tab CR``) in ``tenantName`` and ``remark``,
customer 7 has a 40,000-character remark (over Excel's 32,767 cell limit), ``lastOrderAt``
and ``remark`` are ``null`` on some rows, and the columns cover all six types.

Snapshot (§10.2): the token is the signed maximum id, ``v1.<maxId>.<hex HMAC-SHA256>``,
bound to the tenant and access domain; it excludes rows added after the first batch, and
nothing more (modifications and deletions are not frozen).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any, TypeGuard

import msgspec
import quart
import trio
from quart import Blueprint, Response, request
from werkzeug.exceptions import HTTPException

from actors.core.errors import ParameterError
from actors.core.limits import parse_json_body
from actors.core.models import AppCode, ColumnDef, ColumnType
from actors.core.provider.contract import (
    MAX_BATCH_LIMIT,
    SERVICE_TOKEN_HEADER,
    batch_data,
    batches_path,
    column_json,
    request_app_code,
    request_id,
    request_limit,
    request_parameters,
    request_snapshot_token,
    response_envelope,
)
from actors.core.text import quote_outside
from web.errors import envelope_code

EXPORT_TYPE = "CUSTOMER_LIST"
#: The route the registry's ``provider-path`` points at (§10.3).
PROVIDER_PATH = batches_path(EXPORT_TYPE)
#: The ``provider-service`` name the service mounts this Provider under.
DEMO_SERVICE = "demo-service"


def demo_registry_yaml(
    *,
    batch_size: int = 1000,
    max_attempts: int = 3,
    max_rows: int | None = None,
    service: str = DEMO_SERVICE,
) -> str:
    """A registry file (YAML text) with the one ``CUSTOMER_LIST`` definition of this
    Provider, for the demo command, benchmarks and tests that need other limits than the
    packaged registry's.

    Args:
        batch_size: rows per Provider call (registry ``batch-size``, 50..1000).
        max_attempts: automatic attempts per task (``max-attempts``, 1..5).
        max_rows: ``max-rows``; ``None`` leaves the registry's default.
        service: ``provider-service``, for a test that serves this Provider elsewhere.
    """
    limit = f"    max-rows: {max_rows}\n" if max_rows is not None else ""
    return (
        "definitions:\n"
        f"  {EXPORT_TYPE}:\n"
        f"    provider-service: {service}\n"
        f"    provider-path: {PROVIDER_PATH}\n"
        "    required-permission: platform:customer:export\n"
        "    app-scope: PLATFORM\n"
        "    enabled: true\n"
        f"{limit}"
        f"    max-attempts: {max_attempts}\n"
        f"    batch-size: {batch_size}\n"
    )


#: Largest ``limit`` a request may ask for (§10.3: batch-size ∈ [50, 1000]).
MAX_LIMIT = MAX_BATCH_LIMIT
#: Largest synthetic table (``rowCount``).
MAX_ROW_COUNT = 1_000_000
#: Ids examined per request when filters are active. A filter that matches little would
#: otherwise scan the whole table in one request and hold the event loop; a short batch with
#: an advancing cursor is valid (§10.1).
SCAN_BUDGET = 100_000
#: Longest ``keyword`` accepted (§12: a single string parameter is ≤256 characters).
MAX_KEYWORD_CHARS = 256

DEMO_COLUMNS: tuple[ColumnDef, ...] = (
    ColumnDef("customerId", "客户ID", ColumnType.INTEGER, 12),
    ColumnDef("tenantCode", "客户编码", ColumnType.STRING, 18),
    ColumnDef("tenantName", "公司名称", ColumnType.STRING, 28),
    ColumnDef("creditLimit", "授信额度", ColumnType.DECIMAL, 14),
    ColumnDef("active", "是否启用", ColumnType.BOOLEAN, 10),
    ColumnDef("registeredOn", "注册日期", ColumnType.DATE, 12),
    ColumnDef("lastOrderAt", "最近下单时间", ColumnType.DATETIME, 22),
    ColumnDef("remark", "备注", ColumnType.STRING, 40),
)


_COLUMNS_JSON: list[dict[str, Any]] = [column_json(c) for c in DEMO_COLUMNS]

#: ``"sha256:" + sha256(canonical JSON of the columns)``: sorted keys, no spaces, UTF-8.
#: Equal columns give an equal hash in every process and run.
DEMO_SCHEMA_HASH = (
    "sha256:"
    + hashlib.sha256(
        json.dumps(_COLUMNS_JSON, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
            "utf-8"
        )
    ).hexdigest()
)

#: Customers 1..6: one formula-injection prefix each (§11: ``= + - @ Tab CR``).
_HOSTILE_NAMES: Mapping[int, str] = {
    1: '=HYPERLINK("http://x")',
    2: "+1",
    3: "-2",
    4: "@SUM(A1)",
    5: "\tTab",
    6: "\rCR",
}
_HOSTILE_REMARKS: Mapping[int, str] = {
    1: "=1+1",
    2: "+SUM(1,2)",
    3: "-3+4",
    4: "@A1",
    5: "\tremark",
    6: "\rremark",
}
#: Customer 7's remark: longer than an Excel cell may hold (32,767), so the writer truncates.
LONG_REMARK_CUSTOMER = 7
LONG_REMARK_CHARS = 40_000
_LONG_REMARK = ("超长备注-" * (LONG_REMARK_CHARS // 5 + 1))[:LONG_REMARK_CHARS]

_BRANDS = ("柏悦", "远航", "星河", "蓝海", "金桥", "恒信", "瑞丰", "云帆")
_INDUSTRIES = ("物流", "贸易", "科技", "仓储", "供应链", "实业")
# Date strings are looked up, not formatted per row: datetime.isoformat() was half the
# cost of a row, and a 200,000-row demo builds every row once.
_REGISTERED_DAYS = tuple((date(2018, 1, 1) + timedelta(days=d)).isoformat() for d in range(2000))
_ORDER_DAYS = tuple((date(2024, 1, 1) + timedelta(days=d)).isoformat() for d in range(365))
_ORDER_SPAN_SECONDS = len(_ORDER_DAYS) * 86_400
#: Business time of the demo tenant (China Standard Time), as §10.1 Providers emit it.
_CST_SUFFIX = "+08:00"
_STATUSES = ("ACTIVE", "INACTIVE")
_INACTIVE_EVERY = 7


def _mix(n: int) -> int:
    # Knuth's multiplicative hash: spreads consecutive ids over 32 bits, deterministically.
    return (n * 2_654_435_761) & 0xFFFF_FFFF


def _is_active(customer_id: int) -> bool:
    return customer_id % _INACTIVE_EVERY != 0


def _tenant_name(customer_id: int) -> str:
    hostile = _HOSTILE_NAMES.get(customer_id)
    if hostile is not None:
        return hostile
    h = _mix(customer_id)
    return f"{_BRANDS[h % 8]}{_INDUSTRIES[(h >> 3) % 6]}有限公司{customer_id}"


def customer_row(customer_id: int) -> dict[str, Any]:
    """The demo row for one customer. Pure and deterministic.

    Args:
        customer_id: 1-based id.

    Returns:
        A row keyed by the :data:`DEMO_COLUMNS` keys: ``customerId`` int, ``tenantCode``
        and ``tenantName`` strings, ``creditLimit`` a JSON number with two decimals,
        ``active`` bool, ``registeredOn`` ``YYYY-MM-DD``, ``lastOrderAt`` ISO 8601 with
        ``+08:00`` or ``None`` (every fifth customer), ``remark`` string or ``None``.
        ``customerId`` stays a JSON number: it is at most 1,000,000, far from the 2^53
        that makes §5 render Long values as strings, and the column is INTEGER.
    """
    h = _mix(customer_id)
    if customer_id % 5 == 0:
        last_order: str | None = None
    else:
        day, second = divmod(_mix(customer_id * 31 + 7) % _ORDER_SPAN_SECONDS, 86_400)
        minute, second = divmod(second, 60)
        hour, minute = divmod(minute, 60)
        last_order = f"{_ORDER_DAYS[day]}T{hour:02d}:{minute:02d}:{second:02d}{_CST_SUFFIX}"
    if customer_id in _HOSTILE_REMARKS:
        remark: str | None = _HOSTILE_REMARKS[customer_id]
    elif customer_id == LONG_REMARK_CUSTOMER:
        remark = _LONG_REMARK
    elif customer_id % 11 == 0:
        remark = None
    else:
        remark = f"演示客户 {customer_id}"
    return {
        "customerId": customer_id,
        "tenantCode": f"TEN{customer_id:07d}",
        "tenantName": _tenant_name(customer_id),
        "creditLimit": (h % 10_000_000) / 100,
        "active": _is_active(customer_id),
        "registeredOn": _REGISTERED_DAYS[(h >> 7) % len(_REGISTERED_DAYS)],
        "lastOrderAt": last_order,
        "remark": remark,
    }


def mint_snapshot_token(secret: bytes, tenant_id: int, app_code: str, max_id: int) -> str:
    """Sign ``max_id`` for one tenant and access domain (§10.2 "签名后的最大 ID").

    Returns:
        ``"v1.<maxId>.<hex HMAC-SHA256>"``, under 100 characters (the client bound is 512).
    """
    return f"v1.{max_id}.{_sign(secret, tenant_id, app_code, max_id)}"


def verify_snapshot_token(secret: bytes, token: str, tenant_id: int, app_code: str) -> int | None:
    """The max id of a valid token, or ``None`` for a malformed, forged or foreign token."""
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != "v1" or not _is_digits(parts[1]):
        return None
    max_id = int(parts[1])
    expected = _sign(secret, tenant_id, app_code, max_id)
    if not hmac.compare_digest(expected.encode("ascii"), parts[2].encode("utf-8")):
        return None
    return max_id


def _sign(secret: bytes, tenant_id: int, app_code: str, max_id: int) -> str:
    # The tenant and access domain are signed too, so a token cannot be replayed by another
    # tenant's task.
    message = f"v1|{tenant_id}|{app_code}|{max_id}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


class _BadRequest(Exception):
    """A request outside the contract; becomes an envelope error (HTTP 200)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def create_demo_provider_blueprint(
    *, service_token: str, snapshot_secret: bytes, default_rows: int = 1000
) -> quart.Blueprint:
    """A Blueprint serving ``POST /internal/exports/v1/CUSTOMER_LIST/batches`` (§10.1).

    Answers are the §10.1 envelope ``{"code", "message", "data"}``: HTTP 200 with code
    ``"200"`` on success; HTTP 401 with code ``"401"`` when ``X-Internal-Service-Token`` is
    wrong; HTTP 200 with code ``"400"`` for a malformed request (missing ``tenantId``,
    ``appCode`` or ``requestedBy``, ``limit`` outside 1..1000, bad parameters), ``"403"``
    for an ``appCode`` other than PLATFORM (a platform-only export), ``"409"`` for an
    invalid snapshot token.

    Request ``parameters``: ``rowCount`` (1..1,000,000, default ``default_rows``) sizes the
    table; ``status`` (ACTIVE / INACTIVE) and ``keyword`` (contained in ``tenantName``)
    filter it. The first batch (``cursor`` null) mints the snapshot token from
    ``rowCount`` and carries ``columns``; later batches must present a valid token and
    never return an id above its max id. ``nextCursor`` is the last id examined, as a
    string. ``totalRows`` is the row count after the status filter (an estimate: the
    keyword is not counted, §10.2).

    Args:
        service_token: the expected ``X-Internal-Service-Token`` (§12).
        snapshot_secret: HMAC key for snapshot tokens.
        default_rows: table size when ``rowCount`` is absent.

    Returns:
        A Blueprint named ``demo_provider``; register it on the app.

    Raises:
        ValueError: an empty token or secret, or ``default_rows`` outside 1..1,000,000.
    """
    if not service_token:
        raise ValueError("service_token must not be empty")
    if not snapshot_secret:
        raise ValueError("snapshot_secret must not be empty")
    if not 1 <= default_rows <= MAX_ROW_COUNT:
        raise ValueError(f"default_rows must be in 1..{MAX_ROW_COUNT}")
    expected_token = service_token.encode("utf-8")
    blueprint = Blueprint("demo_provider", __name__)

    @blueprint.post(PROVIDER_PATH)
    async def customer_list_batches() -> Response:
        presented = request.headers.get(SERVICE_TOKEN_HEADER, "")
        if not hmac.compare_digest(presented.encode("utf-8", "replace"), expected_token):
            return _envelope("401", "invalid internal service token", None, http_status=401)
        try:
            body = parse_json_body(
                await request.get_data(cache=False, as_text=False, parse_form_data=False)
            )
        except ParameterError as exc:
            return _envelope(envelope_code(exc), exc.message, None)
        try:
            data = batch_answer(body, snapshot_secret, default_rows)
        except ParameterError as exc:  # outside the contract (actors/core/provider/contract.py)
            return _envelope(envelope_code(exc), exc.message, None)
        except _BadRequest as exc:
            return _envelope(exc.code, exc.message, None)
        return _envelope("200", "success", data)

    return blueprint


def batch_answer(body: Any, secret: bytes, default_rows: int) -> dict[str, Any]:
    """The ``data`` of the answer to one batch request: what the route serialises.

    Args:
        body: the decoded request body (the contract's batch request object).
        secret: the key snapshot tokens are signed with.
        default_rows: table size when the request gives no ``rowCount``.

    Returns:
        The contract's batch ``data`` object (``rows``, ``nextCursor``, ``hasMore``,
        ``snapshotToken``, ``totalRows``, ``schemaHash``; ``columns`` on the first batch).

    Raises:
        ParameterError: a field of the request outside the contract.
        _BadRequest: a request this Provider refuses (envelope code and message).
    """
    if not isinstance(body, dict):
        raise _BadRequest("400", "request body must be a JSON object")
    tenant_id = request_id(body, "tenantId")
    app_code = request_app_code(body)
    request_id(body, "requestedBy")
    if app_code != AppCode.PLATFORM:
        raise _BadRequest("403", f"{EXPORT_TYPE} is a PLATFORM export")
    limit = request_limit(body)

    parameters = request_parameters(body)
    row_count = _row_count(parameters.get("rowCount"), default_rows)
    # An empty string means "no filter", as a search form sends it.
    status = parameters.get("status")
    if status == "":
        status = None
    if status is not None and status not in _STATUSES:
        raise _BadRequest("400", f"status must be one of {', '.join(_STATUSES)}")
    keyword = parameters.get("keyword")
    if keyword == "":
        keyword = None
    if keyword is not None and (not isinstance(keyword, str) or len(keyword) > MAX_KEYWORD_CHARS):
        raise _BadRequest("400", f"keyword must be a string of at most {MAX_KEYWORD_CHARS} chars")

    raw_cursor = body.get("cursor")
    _check_cursor(raw_cursor)
    token = request_snapshot_token(body)

    first = raw_cursor is None
    if first:
        max_id = row_count
        token = mint_snapshot_token(secret, tenant_id, app_code, max_id)
    else:
        if token is None:
            raise _BadRequest("400", "snapshotToken is required after the first batch")
        verified = verify_snapshot_token(secret, token, tenant_id, app_code)
        if verified is None:
            raise _BadRequest("409", "snapshot token invalid or expired")
        max_id = verified
    # Rows added after the first batch (a larger rowCount) stay out: §10.2.
    upper = min(row_count, max_id)
    cursor = int(raw_cursor) if raw_cursor is not None else 0

    rows, last_seen = _page(cursor, upper, limit, status, keyword)
    # Later batches omit columns; the schemaHash stands for them (§10.1).
    return batch_data(
        schema_hash=DEMO_SCHEMA_HASH,
        snapshot_token=token,
        rows=rows,
        next_cursor=str(last_seen),
        has_more=last_seen < upper,
        total_rows=_estimate_total(upper, status),
        columns=_COLUMNS_JSON if first else None,
    )


def _page(
    cursor: int, upper: int, limit: int, status: str | None, keyword: str | None
) -> tuple[list[dict[str, Any]], int]:
    """Rows with ids in ``(cursor, upper]`` matching the filters, and the last id examined."""
    if status is None and keyword is None:
        # Every id matches: no scan, just the next ``limit`` ids.
        stop = min(upper, cursor + limit)
        return [customer_row(i) for i in range(cursor + 1, stop + 1)], max(stop, cursor)
    want_active = status == "ACTIVE"
    rows: list[dict[str, Any]] = []
    last_seen = cursor
    for customer_id in range(cursor + 1, min(upper, cursor + SCAN_BUDGET) + 1):
        last_seen = customer_id
        if status is not None and _is_active(customer_id) != want_active:
            continue
        if keyword is not None and keyword not in _tenant_name(customer_id):
            continue
        rows.append(customer_row(customer_id))
        if len(rows) == limit:
            break
    return rows, last_seen


def _check_cursor(raw: Any) -> None:
    """The demo's cursor is the last customer id examined: null or a string of digits.

    Raises:
        _BadRequest: "400" saying what is wrong: not a string, not digits, or longer than
            any id this Provider hands out.
    """
    if raw is None:
        return
    if not isinstance(raw, str):
        raise _BadRequest(
            "400", f"cursor must be null or a string of digits, got {type(raw).__name__}"
        )
    if not (raw.isascii() and raw.isdigit()):
        raise _BadRequest(
            "400", f"cursor must be null or a string of digits, got '{quote_outside(raw, 40)}'"
        )
    if len(raw) > _MAX_CURSOR_DIGITS:
        raise _BadRequest(
            "400",
            f"cursor is out of range: {len(raw)} digits; this Provider's cursors are customer "
            f"ids of at most {_MAX_CURSOR_DIGITS} digits (send back the nextCursor it answered)",
        )


def _estimate_total(upper: int, status: str | None) -> int:
    inactive = upper // _INACTIVE_EVERY
    if status == "ACTIVE":
        return upper - inactive
    if status == "INACTIVE":
        return inactive
    return upper


def _row_count(value: Any, default_rows: int) -> int:
    if value is None:
        return default_rows
    if isinstance(value, str) and _is_digits(value):
        value = int(value)
    if not _is_int(value) or not 1 <= value <= MAX_ROW_COUNT:
        raise _BadRequest("400", f"rowCount must be an integer in 1..{MAX_ROW_COUNT}")
    return int(value)


def _envelope(code: str, message: str, data: Any, *, http_status: int = 200) -> Response:
    # Serialised here rather than by Quart's provider: no key sorting, compact, UTF-8 as is;
    # a 1000-row batch is about 250 KB, far under the 4 MB client limit (§12).
    # msgspec, not json.dumps: the same compact UTF-8 text, ~10 times faster, so the demo
    # Provider spends its CPU on building rows rather than on serialising them.
    payload = _ENCODER.encode(response_envelope(code, message, data))
    return Response(payload, status=http_status, content_type="application/json; charset=utf-8")


_ENCODER = msgspec.json.Encoder()


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


#: A cursor is a customer id: at most 19 digits, the length of a 64-bit id.
_MAX_CURSOR_DIGITS = 19


def _is_digits(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= _MAX_CURSOR_DIGITS


def _json_http_errors(app: quart.Quart) -> None:
    """Answer unknown paths (404) and wrong methods (405) with the envelope, as a Provider
    does for every answer: the standalone app has no API error handlers, and Quart's
    default is an HTML page that a JSON client can only report as "not JSON"."""

    @app.errorhandler(HTTPException)
    async def _http_error(exc: HTTPException) -> Response:
        code = exc.code or 500
        if code == 404:
            message = (
                f"no route {quote_outside(request.path, 120)}: this Provider serves "
                f"POST {PROVIDER_PATH}"
            )
        else:
            message = exc.description or exc.name
        return _envelope(str(code), message, None, http_status=code)


async def serve_demo_provider(
    bind: str,
    service_token: str,
    *,
    default_rows: int = 1000,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve only the demo Provider, in its own process: ``export-center demo-provider``.

    A Provider normally runs in another service on other machines; this puts the demo one
    in a process of its own, so a benchmark measures the export service's CPU apart from
    the Provider's, and a Provider team has a reference implementation to call. Point the
    service at it with ``FILE_EXPORT_PROVIDER_URLS='{"demo-service": "<url>"}'`` and the
    same ``INTERNAL_SERVICE_TOKEN`` on both sides.

    Args:
        bind: ``host:port`` to listen on (port 0 picks a free one).
        service_token: the expected ``X-Internal-Service-Token``.
        default_rows: table size when a request gives no ``rowCount``.
        task_status: receives the URLs listened on, once bound.

    Raises:
        OSError: the address cannot be bound.
        ValueError: as :func:`create_demo_provider_blueprint`.

    Runs until cancelled.
    """
    from hypercorn.config import Config
    from quart_trio import QuartTrio

    from web.server import WebServer

    app = QuartTrio("export-center-demo-provider")
    _json_http_errors(app)
    app.register_blueprint(
        create_demo_provider_blueprint(
            service_token=service_token,
            snapshot_secret=secrets.token_bytes(32),
            default_rows=default_rows,
        )
    )
    config = Config()
    config.bind = [bind]
    config.accesslog = None
    server = WebServer(app, config)
    urls = server.bind()
    try:
        task_status.started(urls)
        await server.serve(trio.sleep_forever)
    finally:
        server.close()
