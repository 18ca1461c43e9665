"""Decoding and checking one Provider answer: bytes in, a validated batch out. Pure.

Split from :mod:`actors.pipeline.provider_client` so the export worker process
(:mod:`actors.pipeline.worker_main`) can decode a batch without importing httpx or trio:
the parent streams the body and forwards the raw bytes, the worker decodes them here.

The JSON decoder is msgspec, several times faster than the standard library on a batch of
rows. It refuses a few inputs the standard library accepts or reads differently: integers
beyond its range, ``NaN``/``Infinity``, lone surrogate escapes (``"\\ud800"``), a UTF-8
BOM, UTF-16/32 bodies, nesting deeper than its stack allows. Any answer msgspec refuses is
decoded again with :mod:`json`, so every answer decodes to the same value, and fails with
the same message, as it always did: the fast path changes the speed, never the result.

Errors follow :mod:`actors.pipeline.provider_client`: a malformed answer is a
:class:`ProviderContractError`, too many columns a :class:`LimitExceededError`, and
nothing else escapes, whatever the bytes are.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, TypeGuard

import msgspec

from actors.core.errors import (
    ExportError,
    LimitExceededError,
    ProviderContractError,
)
from actors.core.models import ColumnDef, ColumnType, ProviderBatch
from actors.core.text import has_utf8_form, quote_outside

#: The only response schema version this client understands (§10.1 ``schemaVersion``).
SUPPORTED_SCHEMA_VERSION = 1
#: The File Service only bounds the opaque token and echoes it (§10.2).
MAX_SNAPSHOT_TOKEN_CHARS = 512
#: Column width bounds in Excel character units (§11: "列宽上限 ≤255").
MIN_COLUMN_WIDTH = 1
MAX_COLUMN_WIDTH = 255
#: Largest ``totalRows`` the task row can hold (``total_rows`` is a signed BIGINT).
MAX_TOTAL_ROWS = 2**63 - 1

#: Longest Provider-supplied text we copy into an error message (it ends up in
#: failure_message, shown in the download center).
_QUOTE_CHARS = 200
#: What msgspec raises for input it will not decode; :func:`_decode_json` then asks json.
_FAST_PATH_REFUSALS = (msgspec.DecodeError, RecursionError)
_FAST_DECODER = msgspec.json.Decoder()


def parse_batch_response(
    raw: bytes, *, service: str, limit: int, max_columns: int
) -> ProviderBatch:
    """Decode one HTTP 200 body: JSON, the §5 envelope, then :func:`parse_batch_data`. Pure.

    Integers longer than Python's int/str conversion limit (4,300 digits) are kept as
    their digit strings rather than failing the decode: a ``totalRows`` of that size is
    then refused by name, and a cell keeps its exact digits (§5 renders Long values as
    strings anyway).

    Args:
        raw: the response body.
        service: the ``provider-service`` name, for messages.
        limit: the ``limit`` that was requested, rows.
        max_columns: the column limit (§12: 100).

    Returns:
        The validated batch.

    Raises:
        ProviderContractError: not JSON, not an envelope, a code other than "200" (the
            Provider's code and message quoted, escaped), a malformed ``data`` (see
            :func:`parse_batch_data`), or anything else Python raises while reading it.
        LimitExceededError: more than ``max_columns`` columns.
    """
    try:
        envelope = _decode_json(raw)
    except (ValueError, RecursionError) as exc:
        raise ProviderContractError(
            f"provider {service} answered non-JSON: {quote_outside(str(exc))}"
        ) from None
    try:
        return _parse_envelope(envelope, service, limit, max_columns)
    except ExportError:
        raise
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        # Same class of fault as a malformed field (e.g. a message nested too deeply to
        # quote): the answer is unusable, so it is permanent and never costs the retries a
        # transient error would.
        raise ProviderContractError(
            f"provider {service} answered data that cannot be read "
            f"({type(exc).__name__}: {quote_outside(str(exc))})"
        ) from None


def _parse_envelope(envelope: Any, service: str, limit: int, max_columns: int) -> ProviderBatch:
    if not isinstance(envelope, dict):
        raise ProviderContractError(f"provider {service} answered JSON that is not an object")
    code = envelope.get("code")
    if isinstance(code, bool) or not isinstance(code, str | int):
        raise ProviderContractError(f"provider {service} envelope has no code")
    if str(code) != "200":
        message = envelope.get("message")
        raise ProviderContractError(
            f"provider {service} answered code {clip(str(code))}: {clip(str(message))}"
        )
    data = envelope.get("data")
    if not isinstance(data, dict):
        raise ProviderContractError(f"provider {service} envelope data is not an object")
    try:
        return parse_batch_data(data, limit=limit, max_columns=max_columns)
    except ProviderContractError as exc:
        raise ProviderContractError(f"provider {service}: {exc}") from None


def _decode_json(raw: bytes) -> Any:
    try:
        return _FAST_DECODER.decode(raw)
    except _FAST_PATH_REFUSALS:
        pass  # the standard library decides, with its own messages (module docstring)
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        raise
    except ValueError:
        # Only Python's int/str digit limit raises a plain ValueError here (CPython's
        # decoder); decode again, keeping over-long integers as digit strings.
        return json.loads(raw, parse_int=_parse_json_int)


def _parse_json_int(text: str) -> int | str:
    try:
        return int(text)
    except ValueError:
        return text


def parse_batch_data(data: Mapping[str, Any], *, limit: int, max_columns: int) -> ProviderBatch:
    """Validate the §10.1 ``data`` object and build a :class:`ProviderBatch`. Pure.

    Args:
        data: the envelope's ``data``.
        limit: the ``limit`` that was requested; more rows than this is a contract breach.
        max_columns: the column limit (§12: 100).

    Returns:
        The batch; ``rows`` is the list from the response (not copied).

    Raises:
        ProviderContractError: a field is missing or of the wrong type, ``schemaVersion``
            is not 1, a column is malformed, ``snapshotToken`` is over 512 characters,
            ``snapshotToken`` or ``nextCursor`` is not valid Unicode (a lone surrogate
            cannot be sent back), there are more rows than ``limit``, ``totalRows`` is
            not an integer in 0..2**63-1.
        LimitExceededError: more than ``max_columns`` columns.
    """
    version = data.get("schemaVersion")
    if version != SUPPORTED_SCHEMA_VERSION or not is_int(version):
        raise ProviderContractError(f"unsupported schemaVersion {clip(repr(version))}")
    schema_hash = data.get("schemaHash")
    if not isinstance(schema_hash, str) or not schema_hash:
        raise ProviderContractError("schemaHash is missing or not a string")
    token = data.get("snapshotToken")
    if token is not None and not isinstance(token, str):
        raise ProviderContractError("snapshotToken is not a string")
    if token is not None and len(token) > MAX_SNAPSHOT_TOKEN_CHARS:
        raise ProviderContractError(
            f"snapshotToken has {len(token)} characters; the limit is "
            f"{MAX_SNAPSHOT_TOKEN_CHARS} (§10.2)"
        )
    if token is not None and not has_utf8_form(token):
        raise ProviderContractError("snapshotToken is not valid Unicode (lone surrogate)")
    raw_columns = data.get("columns")
    columns = None if raw_columns is None else _parse_columns(raw_columns, max_columns)
    rows = data.get("rows")
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise ProviderContractError("rows is not a list of objects")
    if len(rows) > limit:
        raise ProviderContractError(
            f"batch has {len(rows)} rows; the batch-size limit is {limit} rows (§12)"
        )
    next_cursor = data.get("nextCursor")
    if next_cursor is not None and not isinstance(next_cursor, str):
        raise ProviderContractError("nextCursor is not a string")
    if next_cursor is not None and not has_utf8_form(next_cursor):
        # It is sent back as UTF-8 in the next request, which cannot encode it.
        raise ProviderContractError("nextCursor is not valid Unicode (lone surrogate)")
    has_more = data.get("hasMore")
    if not isinstance(has_more, bool):
        raise ProviderContractError("hasMore is missing or not a boolean")
    return ProviderBatch(
        schema_version=SUPPORTED_SCHEMA_VERSION,
        schema_hash=schema_hash,
        snapshot_token=token,
        columns=columns,
        rows=rows,
        next_cursor=next_cursor,
        has_more=has_more,
        total_rows=_parse_total_rows(data.get("totalRows")),
    )


def _parse_columns(raw: Any, max_columns: int) -> tuple[ColumnDef, ...]:
    if not isinstance(raw, list):
        raise ProviderContractError("columns is not a list")
    if len(raw) > max_columns:
        raise LimitExceededError(
            f"provider declared {len(raw)} columns; the limit is {max_columns} columns"
        )
    columns: list[ColumnDef] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ProviderContractError(f"columns[{index}] is not an object")
        key, title, kind, width = (item.get(f) for f in ("key", "title", "type", "width"))
        if not isinstance(key, str) or not key:
            raise ProviderContractError(f"columns[{index}].key is missing or not a string")
        if key in seen:
            raise ProviderContractError(f"columns[{index}].key {clip(key)!r} is duplicated")
        seen.add(key)
        if not isinstance(title, str):
            raise ProviderContractError(f"columns[{index}].title is missing or not a string")
        if not isinstance(kind, str) or kind not in ColumnType.__members__:
            raise ProviderContractError(
                f"columns[{index}].type {clip(repr(kind))} is not one of "
                f"{', '.join(t.value for t in ColumnType)}"
            )
        column_type = ColumnType(kind)
        if width is not None and (
            not is_int(width) or not MIN_COLUMN_WIDTH <= width <= MAX_COLUMN_WIDTH
        ):
            raise ProviderContractError(
                f"columns[{index}].width {clip(repr(width))} is not an integer in "
                f"{MIN_COLUMN_WIDTH}..{MAX_COLUMN_WIDTH}"
            )
        columns.append(ColumnDef(key=key, title=title, type=column_type, width=width))
    return tuple(columns)


def _parse_total_rows(value: Any) -> int | None:
    # An estimate for progress only (§10.2); accepted as a number or, as Long values are
    # rendered on the wire (§5), as a string of digits. It is stored in a BIGINT column,
    # so a larger figure is refused here, by name, not by the database mid-run.
    if value is None:
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        if len(value.lstrip("0")) > len(str(MAX_TOTAL_ROWS)):  # never int() 5,000 digits
            raise ProviderContractError(
                f"totalRows has {len(value.lstrip('0'))} digits; the largest the task can "
                f"hold is {MAX_TOTAL_ROWS}"
            )
        value = int(value)
    if is_int(value) and value >= 0:
        if value > MAX_TOTAL_ROWS:
            raise ProviderContractError(
                f"totalRows of about 10^{math.floor(value.bit_length() * math.log10(2))} "
                f"is larger than the task can hold ({MAX_TOTAL_ROWS})"
            )
        return int(value)
    raise ProviderContractError(f"totalRows {clip(repr(value))} is not a non-negative integer")


def is_int(value: Any) -> TypeGuard[int]:
    """True for an ``int`` that is not a ``bool`` (JSON ``true`` is not a number)."""
    return isinstance(value, int) and not isinstance(value, bool)


def clip(text: str) -> str:
    """Provider text for a message: escaped and clipped to 200 characters."""
    return quote_outside(text, _QUOTE_CHARS)
