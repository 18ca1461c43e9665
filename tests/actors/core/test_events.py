"""The history vocabulary (``actors/core/events.py``), by table."""

from __future__ import annotations

import json
from typing import Any

import pytest

from actors.core.errors import PermanentExportError, ProviderUnavailableError
from actors.core.events import (
    MAX_MESSAGE_CHARS,
    TaskEventKind,
    detail_json,
    error_class,
    retention_seconds,
)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, {}),
        ({"instance": "a", "version": 2}, {"instance": "a", "version": 2}),
        ({"errorClass": None, "message": "m"}, {"message": "m"}),  # absent, not null
        ({"message": "x" * 2000}, {"message": "x" * MAX_MESSAGE_CHARS}),
        ({"by": 7, "manual": True}, {"by": 7, "manual": True}),
        ({"reason": "客户"}, {"reason": "客户"}),
    ],
)
def test_detail_json(fields: dict[str, Any], expected: dict[str, Any]) -> None:
    text = detail_json(**fields)
    assert json.loads(text) == expected
    assert " " not in text.replace("客户", "")  # compact


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (None, None),
        (ProviderUnavailableError("down"), "ProviderUnavailableError"),
        (PermanentExportError("bad"), "PermanentExportError"),
    ],
)
def test_error_class(error: BaseException | None, expected: str | None) -> None:
    assert error_class(error) == expected


def test_retention_in_seconds() -> None:
    assert retention_seconds(30) == 30 * 86400
    assert retention_seconds(0.5) == 43200


def test_every_kind_fits_its_column() -> None:
    """``kind`` is VARCHAR(32) in MySQL."""
    assert all(len(kind.value) <= 32 for kind in TaskEventKind)
    assert len({kind.value for kind in TaskEventKind}) == len(TaskEventKind)
