"""The demo Provider's data: the synthetic customers, their columns and schema hash, the
snapshot tokens, and the registry entry that points at it (``web/demo_provider``)."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any

from actors.core.batch import ColumnDef, ColumnType
from actors.core.provider.columns import column_json
from actors.core.provider.contract import MAX_BATCH_LIMIT, batches_path

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
    ColumnDef("creditLimit", "授信额度", ColumnType.DECIMAL, 14, number_format="#,##0.00"),
    ColumnDef("active", "是否启用", ColumnType.BOOLEAN, 10),
    ColumnDef("registeredOn", "注册日期", ColumnType.DATE, 12),
    ColumnDef("lastOrderAt", "最近下单时间", ColumnType.DATETIME, 22),
    ColumnDef("remark", "备注", ColumnType.STRING, 40),
)


COLUMNS_JSON: list[dict[str, Any]] = [column_json(c) for c in DEMO_COLUMNS]

#: ``"sha256:" + sha256(canonical JSON of the columns)``: sorted keys, no spaces, UTF-8.
#: Equal columns give an equal hash in every process and run.
DEMO_SCHEMA_HASH = (
    "sha256:"
    + hashlib.sha256(
        json.dumps(COLUMNS_JSON, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
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
#: Customer 7's remark with ``edgeCases``: longer than an Excel cell may hold (32,767), so
#: the writer truncates it and the task carries a data warning. Off by default: a warning
#: on every demo export would teach people to ignore warnings.
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
STATUSES = ("ACTIVE", "INACTIVE")
INACTIVE_EVERY = 7


def _mix(n: int) -> int:
    # Knuth's multiplicative hash: spreads consecutive ids over 32 bits, deterministically.
    return (n * 2_654_435_761) & 0xFFFF_FFFF


def is_active(customer_id: int) -> bool:
    return customer_id % INACTIVE_EVERY != 0


def tenant_name(customer_id: int) -> str:
    hostile = _HOSTILE_NAMES.get(customer_id)
    if hostile is not None:
        return hostile
    h = _mix(customer_id)
    return f"{_BRANDS[h % 8]}{_INDUSTRIES[(h >> 3) % 6]}有限公司{customer_id}"


def customer_row(customer_id: int, *, edge_cases: bool = False) -> dict[str, Any]:
    """The demo row for one customer. Pure and deterministic.

    Args:
        customer_id: 1-based id.
        edge_cases: give customer 7 its 40,000-character remark (the demo's
            ``edgeCases`` parameter).

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
    elif customer_id == LONG_REMARK_CUSTOMER and edge_cases:
        remark = _LONG_REMARK
    elif customer_id % 11 == 0:
        remark = None
    else:
        remark = f"演示客户 {customer_id}"
    return {
        "customerId": customer_id,
        "tenantCode": f"TEN{customer_id:07d}",
        "tenantName": tenant_name(customer_id),
        "creditLimit": (h % 10_000_000) / 100,
        "active": is_active(customer_id),
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
    if len(parts) != 3 or parts[0] != "v1" or not is_digits(parts[1]):
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


#: The demo's customer ids, as cursors and snapshot bounds, have at most this many digits.
MAX_CURSOR_DIGITS = 19


def is_digits(text: str) -> bool:
    """``text`` is a decimal id of at most :data:`MAX_CURSOR_DIGITS` ASCII digits."""
    return text.isascii() and text.isdigit() and len(text) <= MAX_CURSOR_DIGITS
