"""The demo Provider's HTTP side: the batch endpoint over the Provider contract, its
checks of a request, and serving it on its own port (``web/demo_provider``)."""

from __future__ import annotations

import hmac
import secrets
from typing import Any, TypeGuard

import msgspec
import quart
import trio
from quart import Blueprint, Response, request
from werkzeug.exceptions import HTTPException

from actors.core.errors import ParameterError
from actors.core.limits import parse_json_body
from actors.core.principal import AppCode
from actors.core.provider.contract import SERVICE_TOKEN_HEADER, batch_data, response_envelope
from actors.core.provider.request import (
    request_app_code,
    request_id,
    request_limit,
    request_parameters,
    request_snapshot_token,
)
from actors.core.text import quote_outside
from web.demo_provider.data import (
    COLUMNS_JSON,
    DEMO_SCHEMA_HASH,
    EXPORT_TYPE,
    INACTIVE_EVERY,
    MAX_CURSOR_DIGITS,
    MAX_KEYWORD_CHARS,
    MAX_ROW_COUNT,
    PROVIDER_PATH,
    SCAN_BUDGET,
    STATUSES,
    customer_row,
    is_active,
    is_digits,
    mint_snapshot_token,
    tenant_name,
    verify_snapshot_token,
)
from web.errors import envelope_code


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
    filter it; ``edgeCases: true`` gives customer 7 a remark longer than a cell holds (a
    data warning). The first batch (``cursor`` null) mints the snapshot token from
    ``rowCount`` and carries ``columns``; later batches must present a valid token and
    never return an id above its max id. ``nextCursor`` is the last id examined, as a
    string. ``totalRows`` is the row count after the status filter, and absent with a
    keyword (it is not counted ahead, §10.2).

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
    if status is not None and status not in STATUSES:
        raise _BadRequest("400", f"status must be one of {', '.join(STATUSES)}")
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

    # The 40,000-character remark that trips a data warning, only when asked for.
    edge_cases = parameters.get("edgeCases") is True
    rows, last_seen = _page(cursor, upper, limit, status, keyword, edge_cases)
    # Later batches omit columns; the schemaHash stands for them (§10.1).
    return batch_data(
        schema_hash=DEMO_SCHEMA_HASH,
        snapshot_token=token,
        rows=rows,
        next_cursor=str(last_seen),
        has_more=last_seen < upper,
        # A name filter is not counted ahead (§10.2): the total is unknown, not a guess
        # that a short file would then contradict.
        total_rows=None if keyword else _estimate_total(upper, status),
        columns=COLUMNS_JSON if first else None,
    )


def _page(
    cursor: int,
    upper: int,
    limit: int,
    status: str | None,
    keyword: str | None,
    edge_cases: bool = False,
) -> tuple[list[dict[str, Any]], int]:
    """Rows with ids in ``(cursor, upper]`` matching the filters, and the last id examined."""
    if status is None and keyword is None:
        # Every id matches: no scan, just the next ``limit`` ids.
        stop = min(upper, cursor + limit)
        ids = range(cursor + 1, stop + 1)
        return [customer_row(i, edge_cases=edge_cases) for i in ids], max(stop, cursor)
    want_active = status == "ACTIVE"
    rows: list[dict[str, Any]] = []
    last_seen = cursor
    for customer_id in range(cursor + 1, min(upper, cursor + SCAN_BUDGET) + 1):
        last_seen = customer_id
        if status is not None and is_active(customer_id) != want_active:
            continue
        if keyword is not None and keyword not in tenant_name(customer_id):
            continue
        rows.append(customer_row(customer_id, edge_cases=edge_cases))
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
    if len(raw) > MAX_CURSOR_DIGITS:
        raise _BadRequest(
            "400",
            f"cursor is out of range: {len(raw)} digits; this Provider's cursors are customer "
            f"ids of at most {MAX_CURSOR_DIGITS} digits (send back the nextCursor it answered)",
        )


def _estimate_total(upper: int, status: str | None) -> int:
    inactive = upper // INACTIVE_EVERY
    if status == "ACTIVE":
        return upper - inactive
    if status == "INACTIVE":
        return inactive
    return upper


def _row_count(value: Any, default_rows: int) -> int:
    if value is None:
        return default_rows
    if isinstance(value, str) and is_digits(value):
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
