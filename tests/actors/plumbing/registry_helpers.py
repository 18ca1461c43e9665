"""What the registry file's tests share (``test_registry_source*.py``): the Provider
allowlist they load with, a registry file's text, and the one figure they compare."""

from __future__ import annotations

from actors.core.definitions import Registry

ALLOWED = frozenset({"demo-service"})


def registry_yaml(batch_size: int = 500, *, path_type: str = "CUSTOMER_LIST") -> str:
    return (
        "definitions:\n"
        "  CUSTOMER_LIST:\n"
        "    provider-service: demo-service\n"
        f"    provider-path: /internal/exports/v1/{path_type}/batches\n"
        "    required-permission: platform:customer:export\n"
        "    app-scope: PLATFORM\n"
        f"    batch-size: {batch_size}\n"
    )


def batch_size(registry: Registry) -> int:
    return registry.definitions["CUSTOMER_LIST"].batch_size
