"""The Provider contract's request: what the File Service sends for one batch, and how a
Provider takes its fields apart (the demo Provider and test Providers use these).

Pure: no IO. The answer's side is :mod:`actors.core.provider.contract`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from actors.core.errors import (
    ParameterError,
)
from actors.core.principal import AppCode

#: Header that carries the shared internal token; the user's bearer token is never
#: forwarded.
from actors.core.provider.contract import MAX_BATCH_LIMIT
from actors.core.provider.json_values import clip, is_int


@dataclass(frozen=True, slots=True)
class BatchRequest:
    """One request body.

    Attributes:
        task_id: ``file_export_task.id`` (64-bit).
        tenant_id: tenant of the task; ``0`` is the platform tenant. Required.
        app_code: access domain of the task (``PLATFORM`` / ``MERCHANT``). Required.
        requested_by: user id of the requester (64-bit). Required: a MERCHANT Provider
            filters by this user's data scope.
        dispatch_version: the execution attempt this request belongs to.
        parameters: the task's business parameters, sent as they are.
        cursor: ``nextCursor`` of the previous batch, ``None`` for the first batch.
        snapshot_token: the first batch's ``snapshotToken``, ``None`` for the first batch.
        limit: maximum rows wanted in this batch (the registry's ``batch-size``).
    """

    task_id: int
    tenant_id: int
    app_code: str
    requested_by: int
    dispatch_version: int
    parameters: Mapping[str, Any]
    cursor: str | None
    snapshot_token: str | None
    limit: int

    def to_json(self) -> dict[str, Any]:
        """The JSON body in camelCase, 64-bit ids as strings.

        Returns:
            A dict ready for ``json.dumps``.

        Raises:
            ValueError: ``tenantId``, ``appCode`` or ``requestedBy`` is missing, or another
                field has the wrong type. The tenant fields are the Provider's only way to
                scope its query (§10.1: "这是原设计的严重缺口"), so the request is never
                sent without them.
        """
        if not is_int(self.tenant_id) or self.tenant_id < 0:
            raise ValueError(f"tenantId is required, got {self.tenant_id!r}")
        if not isinstance(self.app_code, str) or not self.app_code:
            raise ValueError(f"appCode is required, got {self.app_code!r}")
        if not is_int(self.requested_by) or self.requested_by < 0:
            raise ValueError(f"requestedBy is required, got {self.requested_by!r}")
        if not is_int(self.task_id):
            raise ValueError(f"taskId must be an integer, got {self.task_id!r}")
        if not is_int(self.dispatch_version):
            raise ValueError(f"dispatchVersion must be an integer, got {self.dispatch_version!r}")
        if not is_int(self.limit) or self.limit < 1:
            raise ValueError(f"limit must be a positive integer, got {self.limit!r}")
        if not isinstance(self.parameters, Mapping):
            raise ValueError("parameters must be a mapping")
        return {
            "taskId": str(self.task_id),
            "tenantId": str(self.tenant_id),
            "appCode": str(self.app_code),
            "requestedBy": str(self.requested_by),
            "dispatchVersion": self.dispatch_version,
            "parameters": dict(self.parameters),
            "cursor": self.cursor,
            "snapshotToken": self.snapshot_token,
            "limit": self.limit,
        }


#: Largest 64-bit id: ids are signed BIGINT columns.
MAX_ID = 2**63 - 1
_MAX_ID_DIGITS = len(str(MAX_ID))


def request_id(body: Mapping[str, Any], name: str) -> int:
    """A required 64-bit id of a request (``tenantId``, ``requestedBy``): a string of
    ASCII digits, as ids travel, or a bare non-negative number, at most :data:`MAX_ID`.

    Raises:
        ParameterError: the field is missing ("tenantId is required"), negative ("must be
            0 or a positive id"), longer or larger than a 64-bit id ("out of range"), or
            not digits at all; the message quotes the value, clipped.
    """
    value = body.get(name)
    if value is None:
        raise ParameterError(name, f"{name} is required")
    if is_int(value):
        text = str(value)
    elif isinstance(value, str):
        text = value
    else:
        kind = type(value).__name__
        raise ParameterError(
            name, f"{name} must be a string of digits, got {kind} {clip(repr(value))}"
        )
    digits = text.removeprefix("-")
    if not (digits.isascii() and digits.isdigit()):
        raise ParameterError(name, f"{name} must be a string of digits, got {clip(repr(text))}")
    if text.startswith("-"):
        if digits.strip("0"):
            raise ParameterError(name, f"{name} must be 0 or a positive id, got {clip(repr(text))}")
        raise ParameterError(name, f"{name} must be a string of digits, got {clip(repr(text))}")
    significant = digits.lstrip("0")
    # Compared as text first: a 5,000-digit value is never given to int().
    if len(significant) > _MAX_ID_DIGITS or int(significant or "0") > MAX_ID:
        raise ParameterError(
            name,
            f"{name} is out of range: {len(significant)} digits, the largest 64-bit id is {MAX_ID}",
        )
    return int(digits)


def request_app_code(body: Mapping[str, Any]) -> AppCode:
    """The request's ``appCode``.

    Raises:
        ParameterError: missing, or not one of :class:`AppCode`.
    """
    app_code = body.get("appCode")
    if not isinstance(app_code, str) or not app_code:
        raise ParameterError("appCode", "appCode is required")
    if app_code not in AppCode.__members__:
        raise ParameterError("appCode", f"appCode must be one of {', '.join(AppCode.__members__)}")
    return AppCode(app_code)


def request_limit(body: Mapping[str, Any]) -> int:
    """The request's ``limit``, rows.

    Raises:
        ParameterError: not an integer in 1..:data:`MAX_BATCH_LIMIT`.
    """
    limit = body.get("limit")
    if not is_int(limit) or not 1 <= limit <= MAX_BATCH_LIMIT:
        raise ParameterError("limit", f"limit must be an integer in 1..{MAX_BATCH_LIMIT}")
    return limit


def request_parameters(body: Mapping[str, Any]) -> dict[str, Any]:
    """The request's business ``parameters``; absent or null means none.

    Raises:
        ParameterError: not an object.
    """
    parameters = body.get("parameters")
    if parameters is None:
        return {}
    if not isinstance(parameters, dict):
        raise ParameterError("parameters", "parameters must be an object")
    return parameters


def request_snapshot_token(body: Mapping[str, Any]) -> str | None:
    """The request's ``snapshotToken``: ``None`` on the first batch, then the first
    batch's token echoed.

    Raises:
        ParameterError: present but not a string.
    """
    token = body.get("snapshotToken")
    if token is not None and not isinstance(token, str):
        raise ParameterError("snapshotToken", "snapshotToken must be a string")
    return token
