"""The web layer's envelope error, and the envelope codes of the core's refusals, in one
place.

:class:`ApiError` is the web layer's own error: an envelope code and message, answered by
the app's error handler. The core raises domain errors
(:class:`~actors.core.errors.ParameterError`, :class:`~actors.core.errors.Refused`) and
names no HTTP code; this module decides which envelope code (``{"code", "message",
"data"}``) each one answers. Business outcomes answer HTTP 200 with the code in the
envelope.
"""

from __future__ import annotations

from actors.core.errors import (
    ExportCenterError,
    ParameterError,
    Refusal,
    Refused,
    RequestError,
)


class ApiError(ExportCenterError):
    """An outcome reported in the envelope ``{"code", "message", "data"}``.

    Raised by the web layer only (routes, authentication); the core raises
    :class:`~actors.core.errors.RequestError` instead, which :func:`api_error` turns into
    one of these.

    Attributes:
        code: the envelope code as a string, e.g. ``"400"``, ``"403"``, ``"429"``.
        http_status: the HTTP status; 200 for business outcomes (§5), 401 for a missing
            or invalid bearer token.
    """

    def __init__(self, code: str, message: str, *, http_status: int = 200) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.http_status = http_status


#: Envelope code of each refusal reason.
REFUSAL_CODES: dict[Refusal, str] = {
    Refusal.NOT_FOUND: "404",
    Refusal.DISABLED: "403",
    Refusal.OUT_OF_SCOPE: "403",
    Refusal.MISSING_PERMISSION: "403",
    Refusal.FILE_EXPIRED: "410",
    Refusal.NOT_DOWNLOADABLE: "409",
    Refusal.NOT_RETRYABLE: "409",
    Refusal.NOT_CANCELLABLE: "409",
    Refusal.USER_LIMIT: "429",
    Refusal.TYPE_LIMIT: "429",
    Refusal.TYPE_RESERVED: "429",
    Refusal.STREAMS_PER_USER: "429",
    Refusal.STREAMS_PER_INSTANCE: "429",
    Refusal.CHANGED: "409",
}


def envelope_code(exc: RequestError) -> str:
    """The envelope code for a refusal of the core.

    Args:
        exc: the domain error.

    Returns:
        ``"400"`` for a :class:`ParameterError`, the code of its reason for a
        :class:`Refused` (:data:`REFUSAL_CODES`).

    Raises:
        TypeError: a :class:`RequestError` subclass this mapping does not know (a bug).
    """
    if isinstance(exc, ParameterError):
        return "400"
    if isinstance(exc, Refused):
        return REFUSAL_CODES[exc.reason]
    raise TypeError(f"no envelope code for {type(exc).__name__}")


def api_error(exc: RequestError) -> ApiError:
    """The envelope outcome (HTTP 200) for a refusal of the core; same message."""
    return ApiError(envelope_code(exc), exc.message)
