"""Which export types a caller may request (actors/core/http/export_types.py): table tests."""

from __future__ import annotations

import pytest

from actors.core.definitions import ExportDefinition
from actors.core.http.export_types import requestable_types
from actors.core.principal import AppCode, Principal


def definition(
    export_type: str,
    *,
    enabled: bool = True,
    scope: AppCode = AppCode.PLATFORM,
    permission: str = "platform:customer:export",
) -> ExportDefinition:
    return ExportDefinition(
        export_type,
        "demo-service",
        f"/internal/exports/v1/{export_type}/batches",
        permission,
        scope,
        enabled=enabled,
    )


REGISTRY = [
    definition("CUSTOMER_LIST"),
    definition("ORDER_LIST", permission="platform:order:export"),
    definition("OLD_LIST", enabled=False),
    definition("SHOP_ORDERS", scope=AppCode.MERCHANT, permission="merchant:order:export"),
    definition("AUDIT_LOG", permission="platform:audit:export"),
]


def caller(app: AppCode = AppCode.PLATFORM, *perms: str) -> Principal:
    return Principal(7, 0, app, frozenset(perms))


@pytest.mark.parametrize(
    ("principal", "expected"),
    [
        (caller(AppCode.PLATFORM), []),
        # OLD_LIST needs the same permission but is disabled: never offered.
        (caller(AppCode.PLATFORM, "platform:customer:export"), ["CUSTOMER_LIST"]),
        (
            caller(AppCode.PLATFORM, "platform:audit:export", "platform:customer:export"),
            ["CUSTOMER_LIST", "AUDIT_LOG"],  # registry order, not permission order
        ),
        (
            caller(AppCode.PLATFORM, "platform:order:export", "merchant:order:export"),
            ["ORDER_LIST"],  # the merchant type is out of the platform app's scope
        ),
        (caller(AppCode.MERCHANT, "merchant:order:export"), ["SHOP_ORDERS"]),
        (caller(AppCode.MERCHANT, "platform:customer:export"), []),  # scope, not permission
        # Seeing every requester's tasks does not widen what one may create.
        (caller(AppCode.PLATFORM, "platform:download:all"), []),
    ],
)
def test_requestable_types(principal: Principal, expected: list[str]) -> None:
    assert [d.export_type for d in requestable_types(REGISTRY, principal)] == expected


def test_an_empty_registry_offers_nothing() -> None:
    assert requestable_types([], caller(AppCode.PLATFORM, "platform:customer:export")) == []
