"""A batch answer at the HTTP level, before its JSON is read: what its status means, the
Provider's own words quoted from a refusal, and the errors of a body over the size limit
and of an answer that did not finish in time. The Provider client's transport
(``actors/pipeline/provider/http.py``, ``http_errors.py``) raises them, in the export
worker and in provider-check alike. Pure: no IO.
"""

from __future__ import annotations

import json

from actors.core.errors import (
    ExportError,
    LimitExceededError,
    ProviderContractError,
    ProviderUnavailableError,
)
from actors.core.provider.json_values import clip

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
