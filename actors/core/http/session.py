"""Which credential authenticates an API request, and the CSRF rule of the session cookie.

A request is authenticated by one of two credentials (README, "Session cookie, export
types and live progress"):

* ``Authorization: Bearer <jwt>`` — what a gateway or a script sends. When the header is
  present it wins, whatever cookies come with it, and no CSRF check applies: a browser
  never adds this header to a cross-site request by itself.
* the session cookie, set by ``POST /api/platform/v1/session``, holding the same JWT
  (HttpOnly, SameSite=Strict). A browser sends it with every request to this origin, so a
  state-changing request (anything but GET and HEAD) must also prove it was written by
  this origin's page: header ``X-CSRF-Token`` equal to the CSRF cookie, and that token
  valid for this very session.

The CSRF token is the "signed double-submit cookie" pattern (OWASP CSRF Prevention Cheat
Sheet): ``<nonce>.<expires>.<mac>`` where ``mac`` is HMAC-SHA256 over the nonce, the
expiry and a digest of the session cookie's value, under a key only the server holds. A
token minted for one session is worthless with another, an attacker who can plant a
cookie cannot mint one, and every comparison is constant-time (``hmac.compare_digest``).

Everything here is a pure function: the nonce and the time come from the caller.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from enum import StrEnum

#: Methods that change nothing and therefore need no CSRF token with the cookie.
SAFE_METHODS: frozenset[str] = frozenset({"GET", "HEAD"})
#: The label that derives the CSRF key from the JWT secret (one secret, two keys).
_CSRF_KEY_LABEL = b"export-center csrf token v1"


class CookieSecure(StrEnum):
    """When the session and CSRF cookies carry ``Secure`` (``FILE_EXPORT_COOKIE_SECURE``)."""

    AUTO = "auto"
    ALWAYS = "always"
    NEVER = "never"


def cookie_secure(mode: CookieSecure, request_scheme: str) -> bool:
    """Whether the cookies set by a sign-in get the ``Secure`` attribute.

    Behind a proxy that terminates TLS the service sees plain ``http`` although the browser
    spoke https, so ``auto`` would leave ``Secure`` off: ``always`` is the setting for that
    deployment. ``never`` is for plain-HTTP use on a trusted network only (a browser does
    not send a ``Secure`` cookie over http, so signing in would not stick).

    Args:
        mode: the configured mode.
        request_scheme: the scheme of the request as the service sees it (``http`` or
            ``https``).

    Returns:
        ``always`` -> True, ``never`` -> False, ``auto`` -> True only for ``https``.
    """
    if mode == CookieSecure.ALWAYS:
        return True
    if mode == CookieSecure.NEVER:
        return False
    return request_scheme.lower() == "https"


class Credential(StrEnum):
    """The credential a request is authenticated by."""

    BEARER = "bearer"
    SESSION = "session"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class CredentialDecision:
    """What :func:`decide_credential` decided.

    Attributes:
        credential: the credential to authenticate (``NONE``: answer 401).
        csrf_ok: False when the session cookie is used for a state-changing request
            without a valid CSRF token (answer 403 once the session itself is valid).
    """

    credential: Credential
    csrf_ok: bool = True


def csrf_key(jwt_secret: str) -> bytes:
    """The HMAC key of CSRF tokens, derived from the JWT secret.

    Args:
        jwt_secret: the HS256 secret of bearer tokens.

    Returns:
        32 bytes; a different key from the JWT's, so a CSRF token is never a JWT MAC.
    """
    return hmac.new(jwt_secret.encode("utf-8"), _CSRF_KEY_LABEL, hashlib.sha256).digest()


def _mac(key: bytes, session: str, nonce: str, expires_at: int) -> str:
    session_digest = hashlib.sha256(session.encode("utf-8")).hexdigest()
    message = f"{nonce}.{expires_at}.{session_digest}".encode("ascii")
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def mint_csrf_token(key: bytes, session: str, nonce: str, expires_at: int) -> str:
    """A CSRF token bound to ``session``.

    Args:
        key: :func:`csrf_key`.
        session: the session cookie's value (the JWT).
        nonce: fresh randomness from the caller (URL-safe text without dots, e.g.
            ``secrets.token_urlsafe(16)``).
        expires_at: epoch seconds after which the token is refused (the session's end).

    Returns:
        ``<nonce>.<expires_at>.<hex mac>``, safe in a cookie and a header.

    Raises:
        ValueError: the nonce is empty, not ASCII or contains a dot.
    """
    if not nonce or not nonce.isascii() or "." in nonce:
        raise ValueError("the nonce must be non-empty ASCII without dots")
    return f"{nonce}.{expires_at}.{_mac(key, session, nonce, expires_at)}"


def csrf_token_valid(key: bytes, session: str, token: str, now: float) -> bool:
    """Whether ``token`` was minted by this server for ``session`` and is not expired.

    Args:
        key: :func:`csrf_key`.
        session: the session cookie's value sent with the request.
        token: the token sent in ``X-CSRF-Token``.
        now: epoch seconds.

    Returns:
        True only for a well-formed, unexpired token whose MAC matches (constant-time).
    """
    parts = token.split(".")
    if len(parts) != 3 or not token.isascii():
        return False
    nonce, expires_raw, mac = parts
    if not nonce or not expires_raw.isdigit() or len(expires_raw) > 12:
        return False
    expires_at = int(expires_raw)
    expected = _mac(key, session, nonce, expires_at)
    return hmac.compare_digest(expected, mac) and now < expires_at


def decide_credential(
    *,
    method: str,
    authorization: str | None,
    session_cookie: str | None,
    csrf_cookie: str | None,
    csrf_header: str | None,
    key: bytes,
    now: float,
) -> CredentialDecision:
    """Which credential authenticates a request, and whether its CSRF check passes.

    Args:
        method: the HTTP method, upper case.
        authorization: the ``Authorization`` header, if any.
        session_cookie: the session cookie's value, if any.
        csrf_cookie: the CSRF cookie's value, if any.
        csrf_header: the ``X-CSRF-Token`` header, if any.
        key: :func:`csrf_key`.
        now: epoch seconds.

    Returns:
        ``BEARER`` when an ``Authorization`` header is present (it wins; no CSRF check);
        else ``SESSION`` when the session cookie is present, with ``csrf_ok`` False for a
        method outside :data:`SAFE_METHODS` whose ``X-CSRF-Token`` is missing, differs from
        the CSRF cookie or is not a valid token of this session (expired, or minted for
        another session); else ``NONE``.
    """
    if authorization:
        return CredentialDecision(Credential.BEARER)
    if not session_cookie:
        return CredentialDecision(Credential.NONE)
    if method.upper() in SAFE_METHODS:
        return CredentialDecision(Credential.SESSION)
    csrf_ok = (
        bool(csrf_header)
        and bool(csrf_cookie)
        and hmac.compare_digest(
            (csrf_header or "").encode("utf-8"), (csrf_cookie or "").encode("utf-8")
        )
        and csrf_token_valid(key, session_cookie, csrf_header or "", now)
    )
    return CredentialDecision(Credential.SESSION, csrf_ok=csrf_ok)
