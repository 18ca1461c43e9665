"""The Provider contract, written once for both of its sides. ``docs/provider-guide.md``
explains it to a Provider team; this module is its executable form.

A business service exports its data by answering ``POST
/internal/exports/v1/{exportType}/batches`` (:func:`batches_path`) with the shared token in
:data:`SERVICE_TOKEN_HEADER`. This module holds what both sides must agree on:

* the request (:mod:`actors.core.provider.request`): :class:`BatchRequest` (what the
  File Service sends) and the readers a Provider uses to take its fields apart
  (:func:`request_id`, :func:`request_app_code`,
  :func:`request_limit`, :func:`request_parameters`, :func:`request_snapshot_token`);
* the answer: the envelope ``{"code", "message", "data"}`` (:func:`response_envelope`,
  :func:`parse_envelope`), the batch ``data`` (:func:`batch_data`,
  :func:`parse_batch_data`) and its columns (:func:`column_json`);
* the rules across the batches of one run live beside it in :mod:`actors.core.provider.batch_rules`:
  the snapshot stays the same (``SnapshotPin``), a batch holds at most ``limit`` rows
  (``check_batch_rows``), the cursor advances and the run fits ``max-rows``
  (``BatchGuard``).

Users: the Provider clients (``actors/pipeline/provider/request_builder.py``: the request;
``actors/pipeline/provider/cursor_loop.py``: the cursor loop; ``actors/pipeline/provider/http.py``:
HTTP, streaming limits, error mapping),
the export worker's decoder (``actors/pipeline/provider/decode.py``: the fast JSON decode)
and the demo Provider (``web/demo_provider/``). Pure: no IO.

A malformed answer is a :class:`ProviderContractError`; a request outside the contract is a
:class:`ParameterError` naming the field.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, TypeGuard

from actors.core.batch import ColumnDef, ColumnType, ProviderBatch
from actors.core.errors import (
    ColumnLimitError,
    ExportError,
    LimitExceededError,
    ProviderContractError,
    ProviderRefusedError,
    ProviderUnavailableError,
)
from actors.core.registry import BATCH_SIZE_RANGE
from actors.core.text import has_utf8_form, quote_outside

#: Header that carries the shared internal token; the user's bearer token is never
#: forwarded.
SERVICE_TOKEN_HEADER = "X-Internal-Service-Token"
#: The envelope code of a successful answer.
SUCCESS_CODE = "200"
#: The only response schema version this client understands (``schemaVersion``).
SUPPORTED_SCHEMA_VERSION = 1
#: The File Service only bounds the opaque token and echoes it.
MAX_SNAPSHOT_TOKEN_CHARS = 512
#: Column width bounds in Excel character units (Excel allows at most 255).
MIN_COLUMN_WIDTH = 1
MAX_COLUMN_WIDTH = 255
#: Largest ``totalRows`` the task row can hold (``total_rows`` is a signed BIGINT).
MAX_TOTAL_ROWS = 2**63 - 1
#: Largest ``limit`` a request asks for: the registry's largest ``batch-size``.
MAX_BATCH_LIMIT = BATCH_SIZE_RANGE[1]
#: Largest answer body the File Service reads (4 MB).
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
#: Most columns an answer may declare.
MAX_COLUMNS = 100
#: Longest Provider-supplied text copied into an error message (it ends up in
#: failure_message, shown in the download center).
QUOTE_CHARS = 200


#: How much of an error answer's body is read to quote the Provider's message, bytes.
ERROR_DETAIL_BYTES = 8 * 1024


def status_error(service: str, status: int, detail: str = "") -> ExportError | None:
    """What an HTTP status of a batch answer means (``actors/pipeline/provider/http.py``).

    Args:
        service: the Provider's service name, for the message.
        status: the HTTP status.
        detail: the Provider's own message (:func:`error_detail`), or ``""``.

    Returns:
        ``None`` for 200; :class:`ProviderUnavailableError` (transient) for 5xx and 429;
        else :class:`ProviderContractError` (permanent) quoting ``detail``.
    """
    if status == 200:
        return None
    if status >= 500 or status == 429:
        return ProviderUnavailableError(f"provider {service} answered HTTP {status}")
    suffix = f": {detail}" if detail else ""
    return ProviderContractError(f"provider {service} answered HTTP {status}{suffix}")


def needs_error_detail(status: int) -> bool:
    """Whether an answer's body is read for :func:`error_detail` (a refusal, not a 5xx)."""
    return status != 200 and status < 500 and status != 429


def error_detail(body: bytes) -> str:
    """The Provider's envelope ``code`` and ``message`` from an error answer's body, clipped,
    or ``""`` when the body is not a small JSON envelope with a message."""
    if len(body) > ERROR_DETAIL_BYTES:
        return ""
    try:
        envelope = json.loads(body)
    except (ValueError, RecursionError):
        return ""
    if isinstance(envelope, dict) and envelope.get("message") is not None:
        try:
            return f"code {clip(str(envelope.get('code')))}: {clip(str(envelope['message']))}"
        except (ValueError, RecursionError):  # nested too deeply to quote: quote nothing
            return ""
    return ""


def body_too_large(limit: int, seen: str) -> LimitExceededError:
    """The error of an answer body over ``limit`` bytes; ``seen`` says how it was known."""
    return LimitExceededError(
        f"provider response body exceeds the limit of {format_bytes(limit)} ({limit} bytes; {seen})"
    )


def total_limit_exceeded(service: str, seconds: float) -> ProviderUnavailableError:
    """The error of a batch request that was still unanswered after ``seconds`` in all.

    Transient: a slow Provider may answer in time on a retry. The limit is the one of
    ``FILE_EXPORT_PROVIDER_REQUEST_TIMEOUT_SECONDS``, which the message names, since the
    per-read timeout alone cannot stop a body that drips one byte at a time.

    Args:
        service: the Provider's service name, for the message.
        seconds: the total limit of one request, in seconds.
    """
    return ProviderUnavailableError(
        f"provider {service} did not finish answering a batch request "
        f"within the total limit of {seconds:g} s "
        "(FILE_EXPORT_PROVIDER_REQUEST_TIMEOUT_SECONDS)"
    )


def format_bytes(size: int) -> str:
    """``size`` in the largest whole unit: ``"4 MB"``, ``"8 KB"`` or ``"N bytes"``."""
    if size % (1024 * 1024) == 0:
        return f"{size // (1024 * 1024)} MB"
    if size % 1024 == 0:
        return f"{size // 1024} KB"
    return f"{size} bytes"


def batches_path(export_type: str) -> str:
    """The Provider route of one export type, the registry's ``provider-path``."""
    return f"/internal/exports/v1/{export_type}/batches"


def is_int(value: Any) -> TypeGuard[int]:
    """True for an ``int`` that is not a ``bool`` (JSON ``true`` is not a number)."""
    return isinstance(value, int) and not isinstance(value, bool)


def clip(text: str) -> str:
    """Provider text for a message: escaped and clipped to :data:`QUOTE_CHARS` characters."""
    return quote_outside(text, QUOTE_CHARS)


# -- the answer -----------------------------------------------------------------------


def response_envelope(code: str, message: str, data: Any) -> dict[str, Any]:
    """The answer's envelope: ``code`` :data:`SUCCESS_CODE` with ``data``, or an error
    code with ``data`` null."""
    return {"code": code, "message": message, "data": data}


def column_json(column: ColumnDef) -> dict[str, Any]:
    """One entry of ``columns``: ``key``, ``title``, ``type``, ``width`` and, when set,
    ``format``."""
    out: dict[str, Any] = {
        "key": column.key,
        "title": column.title,
        "type": column.type.value,
        "width": column.width,
    }
    if column.number_format is not None:
        out["format"] = column.number_format
    return out


#: Longest number format code accepted, characters.
MAX_NUMBER_FORMAT = 64
#: One section of a number format code this service writes: digit placeholders, grouping
#: and decimal separators, percent, exponent, signs, brackets, spaces, escaped or quoted
#: literal text and currency symbols, ``[$SYMBOL-LOCALE]`` tags; no colours, conditions,
#: dates or text placeholders. Every code it accepts opens in Excel, LibreOffice and
#: the readers of the tests.
_FORMAT_SECTION = re.compile(
    r'(?:[0#?,.%+\-() ]|E[+-]|\\.|"[^"\\]{1,16}"|\[\$[^\[\]"\\]{1,10}\]|[$€£¥])+'
)


def check_number_format(code: Any) -> str | None:
    """Why ``code`` is not a number format this service writes into the XLSX, or ``None``.

    A code is 1..:data:`MAX_NUMBER_FORMAT` characters in at most four sections
    (positive; negative; zero; text) separated by ``;``, each made of the parts
    :data:`_FORMAT_SECTION` allows, with at least one digit placeholder (``0``, ``#``
    or ``?``) in the first. Excel reports a workbook with a code it cannot parse as
    damaged, so anything else is refused: the Provider gets a contract error naming the
    column.
    """
    example = 'e.g. "0.00", "#,##0.00" or "[$¥-804]#,##0.00"'
    if not isinstance(code, str) or not 1 <= len(code) <= MAX_NUMBER_FORMAT:
        return f"must be a string of 1..{MAX_NUMBER_FORMAT} characters ({example})"
    sections = code.split(";")
    if len(sections) > 4 or not all(_FORMAT_SECTION.fullmatch(s) for s in sections):
        return f"{clip(repr(code))} is not a number format this service writes ({example})"
    if not re.search(r"[0#?]", re.sub(r'"[^"]*"|\\.|\[[^\]]*\]', "", sections[0])):
        return f"{clip(repr(code))} has no digit placeholder 0, # or ? ({example})"
    return None


def batch_data(
    *,
    schema_hash: str,
    snapshot_token: str | None,
    rows: list[dict[str, Any]],
    next_cursor: str | None,
    has_more: bool,
    total_rows: int | None,
    columns: list[dict[str, Any]] | None,
) -> dict[str, Any]:
    """The ``data`` of one answer.

    Args:
        schema_hash: stands for the columns; equal on every batch of a run.
        snapshot_token: minted on the first batch, echoed after.
        rows: the rows, keyed by column key.
        next_cursor: what the next request sends as ``cursor``.
        has_more: whether another batch follows.
        total_rows: an estimate for progress, or ``None``.
        columns: :func:`column_json` entries on the first batch; ``None`` omits them
            (later batches may, the schemaHash stands for them).

    Returns:
        The object, keys in contract order.
    """
    data: dict[str, Any] = {
        "schemaVersion": SUPPORTED_SCHEMA_VERSION,
        "schemaHash": schema_hash,
        "snapshotToken": snapshot_token,
        "rows": rows,
        "nextCursor": next_cursor,
        "hasMore": has_more,
        "totalRows": total_rows,
    }
    if columns is not None:
        data["columns"] = columns
    return data


def parse_envelope(envelope: Any, service: str, limit: int, max_columns: int) -> ProviderBatch:
    """Validate a decoded answer: the envelope, then its ``data`` (:func:`parse_batch_data`).

    Args:
        envelope: the decoded JSON value.
        service: the ``provider-service`` name, for messages.
        limit: the ``limit`` that was requested, rows.
        max_columns: the column limit (100).

    Returns:
        The validated batch.

    Raises:
        ProviderContractError: not an object, no code, a code other than
            :data:`SUCCESS_CODE` (the Provider's code and message quoted, escaped), a
            ``data`` that is not an object or is malformed (prefixed with the service).
        LimitExceededError: more than ``max_columns`` columns.
    """
    if not isinstance(envelope, dict):
        raise ProviderContractError(f"provider {service} answered JSON that is not an object")
    code = envelope.get("code")
    if isinstance(code, bool) or not isinstance(code, str | int):
        raise ProviderContractError(f"provider {service} envelope has no code")
    if str(code) != SUCCESS_CODE:
        message = envelope.get("message")
        raise ProviderRefusedError(
            f"provider {service} answered code {clip(str(code))}: {clip(str(message))}"
        )
    data = envelope.get("data")
    if not isinstance(data, dict):
        raise ProviderContractError(f"provider {service} envelope data is not an object")
    try:
        return parse_batch_data(data, limit=limit, max_columns=max_columns)
    except ProviderContractError as exc:
        raise ProviderContractError(f"provider {service}: {exc}") from None


def parse_batch_data(data: Mapping[str, Any], *, limit: int, max_columns: int) -> ProviderBatch:
    """Validate the ``data`` object and build a :class:`ProviderBatch`. Pure.

    Args:
        data: the envelope's ``data``.
        limit: the ``limit`` that was requested; more rows than this is a contract breach.
        max_columns: the column limit (100).

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
            f"snapshotToken has {len(token)} characters; the limit is {MAX_SNAPSHOT_TOKEN_CHARS}"
        )
    if token is not None and not has_utf8_form(token):
        raise ProviderContractError("snapshotToken is not valid Unicode (lone surrogate)")
    raw_columns = data.get("columns")
    columns = None if raw_columns is None else _parse_columns(raw_columns, max_columns)
    rows = data.get("rows")
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise ProviderContractError("rows is not a list of objects")
    check_batch_rows(len(rows), limit)
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
        raise ColumnLimitError(
            f"provider declared {len(raw)} columns; the limit is {max_columns} columns"
        )
    columns: list[ColumnDef] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ProviderContractError(f"columns[{index}] is not an object")
        key, title, kind, width, number_format = (
            item.get(f) for f in ("key", "title", "type", "width", "format")
        )
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
        if number_format is not None:
            if column_type not in (ColumnType.INTEGER, ColumnType.DECIMAL):
                raise ProviderContractError(
                    f"columns[{index}].format is only for INTEGER and DECIMAL columns, "
                    f"not {column_type.value}"
                )
            problem = check_number_format(number_format)
            if problem is not None:
                raise ProviderContractError(f"columns[{index}].format {problem}")
        columns.append(
            ColumnDef(
                key=key,
                title=title,
                type=column_type,
                width=width,
                number_format=number_format,
            )
        )
    return tuple(columns)


def _parse_total_rows(value: Any) -> int | None:
    # An estimate for progress only; accepted as a number or, as Long values are
    # rendered on the wire, as a string of digits. It is stored in a BIGINT column,
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


def check_batch_rows(row_count: int, limit: int) -> None:
    """A batch holds at most the ``limit`` asked for (the registry's ``batch-size``): the one
    rows check, for a decoded batch (:func:`parse_batch_data`) and for one the worker
    counted while streaming it (``actors/pipeline/provider/cursor_loop.py``).

    Raises:
        ProviderContractError: more rows than ``limit``.
    """
    if row_count > limit:
        raise ProviderContractError(
            f"batch has {row_count} rows; the batch-size limit is {limit} rows"
        )
