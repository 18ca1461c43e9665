"""Decoding and checking one Provider answer: bytes in, a validated batch out. Pure.

The export worker process (:mod:`actors.pipeline.worker.session`) decodes here each
answer it received on its run's connection (:mod:`actors.pipeline.provider.http`), and
``export-center provider-check`` each answer it fetched
(:mod:`actors.pipeline.provider.check_client`): one decoder, no event loop.

The JSON decoder is msgspec, several times faster than the standard library on a batch of
rows. It refuses a few inputs the standard library accepts or reads differently: integers
beyond its range, ``NaN``/``Infinity``, lone surrogate escapes (``"\\ud800"``), a UTF-8
BOM, UTF-16/32 bodies, nesting deeper than its stack allows. Any answer msgspec refuses is
decoded again with :mod:`json`, so every answer decodes to the same value, and fails with
the same message, as it always did: the fast path changes the speed, never the result.

What a valid answer is — the envelope, the batch ``data``, its columns — is the contract
module :mod:`actors.core.provider.contract`; this module decodes the bytes and applies it.
Errors follow :mod:`actors.pipeline.provider.client`: a malformed answer is a
:class:`ProviderContractError`, too many columns a :class:`LimitExceededError`, and
nothing else escapes, whatever the bytes are.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from actors.core.batch import ProviderBatch
from actors.core.errors import ExportError, ProviderContractError
from actors.core.provider.contract import parse_envelope
from actors.core.text import quote_outside

#: What msgspec raises for input it will not decode; :func:`_decode_json` then asks json.
_FAST_PATH_REFUSALS = (msgspec.DecodeError, RecursionError)
_FAST_DECODER = msgspec.json.Decoder()


def parse_batch_response(
    raw: bytes, *, service: str, limit: int, max_columns: int
) -> ProviderBatch:
    """Decode one HTTP 200 body: JSON, then the §5 envelope and its ``data``
    (:func:`actors.core.provider.contract.parse_envelope`). Pure.

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
            ``parse_batch_data`` of the contract), or anything else Python raises while
            reading it.
        LimitExceededError: more than ``max_columns`` columns.
    """
    try:
        envelope = _decode_json(raw)
    except (ValueError, RecursionError) as exc:
        raise ProviderContractError(
            f"provider {service} answered non-JSON: {quote_outside(str(exc))}"
        ) from None
    try:
        return parse_envelope(envelope, service, limit, max_columns)
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
