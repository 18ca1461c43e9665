"""The Provider contract, written once for both of its sides. ``docs/provider-guide.md``
explains it to a Provider team; this module and the ones it names are its executable form.

A business service exports its data by answering ``POST
/internal/exports/v1/{exportType}/batches`` (:func:`batches_path`) with the shared token in
:data:`SERVICE_TOKEN_HEADER`. This module holds what both sides must agree on, and its
limits:

* the request (:mod:`actors.core.provider.request`): :class:`BatchRequest` (what the
  File Service sends) and the readers a Provider uses to take its fields apart
  (:func:`request_id`, :func:`request_app_code`,
  :func:`request_limit`, :func:`request_parameters`, :func:`request_snapshot_token`);
* the answer: the envelope ``{"code", "message", "data"}`` (:func:`response_envelope`,
  :func:`parse_envelope`) and the batch ``data`` (:func:`batch_data`,
  :func:`parse_batch_data`; at most ``limit`` rows, :func:`check_batch_rows`), here; its
  columns and their number formats in :mod:`actors.core.provider.columns`;
* the answer at the HTTP level, before its JSON is read (what a status means, a refusal's
  own words, a body over the size limit, an answer that never finished), in
  :mod:`actors.core.provider.http_answer`;
* the other side's integers and the text quoted from it in messages, in
  :mod:`actors.core.provider.json_values`;
* the rules across the batches of one run live beside it in :mod:`actors.core.provider.batch_rules`:
  the snapshot stays the same (``SnapshotPin``), the cursor advances and the run fits
  ``max-rows`` (``BatchGuard``).

Users: the Provider clients (``actors/pipeline/provider/request_builder.py``: the request;
``actors/pipeline/provider/cursor_loop.py``: the cursor loop; ``actors/pipeline/provider/http.py``:
HTTP, streaming limits, error mapping),
the export worker's decoder (``actors/pipeline/provider/decode.py``: the fast JSON decode)
and the demo Provider (``web/demo_provider/``). Pure: no IO.

A malformed answer is a :class:`ProviderContractError`; a request outside the contract is a
:class:`ParameterError` naming the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from actors.core.batch import ProviderBatch
from actors.core.errors import ProviderContractError, ProviderRefusedError
from actors.core.provider.columns import parse_columns
from actors.core.provider.json_values import clip, is_int
from actors.core.registry import BATCH_SIZE_RANGE
from actors.core.text import has_utf8_form

#: Header that carries the shared internal token; the user's bearer token is never
#: forwarded.
SERVICE_TOKEN_HEADER = "X-Internal-Service-Token"
#: The envelope code of a successful answer.
SUCCESS_CODE = "200"
#: The only response schema version this client understands (``schemaVersion``).
SUPPORTED_SCHEMA_VERSION = 1
#: The File Service only bounds the opaque token and echoes it.
MAX_SNAPSHOT_TOKEN_CHARS = 512
#: Largest ``totalRows`` the task row can hold (``total_rows`` is a signed BIGINT).
MAX_TOTAL_ROWS = 2**63 - 1
#: Largest ``limit`` a request asks for: the registry's largest ``batch-size``.
MAX_BATCH_LIMIT = BATCH_SIZE_RANGE[1]
#: Largest answer body the File Service reads (4 MB).
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
#: Most columns an answer may declare.
MAX_COLUMNS = 100


def batches_path(export_type: str) -> str:
    """The Provider route of one export type, the registry's ``provider-path``."""
    return f"/internal/exports/v1/{export_type}/batches"


# -- the answer -----------------------------------------------------------------------


def response_envelope(code: str, message: str, data: Any) -> dict[str, Any]:
    """The answer's envelope: ``code`` :data:`SUCCESS_CODE` with ``data``, or an error
    code with ``data`` null."""
    return {"code": code, "message": message, "data": data}


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
    columns = None if raw_columns is None else parse_columns(raw_columns, max_columns)
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
