"""Sign in, who am I, sign out: the session cookie of the download center page.

``POST /api/platform/v1/session`` with ``{"token": "<jwt>"}`` checks the JWT exactly like
the ``Authorization`` header (``web/auth.py``) and keeps it in the HttpOnly, SameSite=Strict
cookie ``export_center_session`` for the token's remaining lifetime (``Secure`` as
``FILE_EXPORT_COOKIE_SECURE`` says: ``auto`` for https requests), so the page's script
never holds it and it never travels in a URL. With it comes ``export_center_csrf``, a
CSRF token bound to that session (``actors/core/http/session.py``), readable by the page: every
cookie-authenticated request other than GET and HEAD must repeat it in ``X-CSRF-Token``.

The body must be ``application/json``: a cross-site HTML form cannot send that content
type, so another site cannot sign a browser into an account of its choosing.
"""

from __future__ import annotations

import secrets
import time
from datetime import UTC, datetime
from typing import Any

from quart import Blueprint, Response, current_app, jsonify, request

from actors.core.errors import ParameterError
from actors.core.http.session import cookie_secure, csrf_key, csrf_token_valid, mint_csrf_token
from actors.core.limits import parse_json_body
from actors.core.principal import Principal
from web.auth import (
    CSRF_COOKIE,
    SESSION_COOKIE,
    bearer_token,
    principal_from_token,
    request_principal,
)
from web.dependencies import Dependencies
from web.errors import ApiError
from web.openapi import AUTH, declare
from web.schemas import SessionEnvelope, SignInRequest, SignOutEnvelope
from web.serialize import envelope

PATH = "/api/platform/v1/session"
#: Longest token accepted, characters (a JWT of this service is a few hundred).
MAX_TOKEN_CHARS = 8192

session = Blueprint("session", __name__)


def _deps() -> Dependencies:
    return current_app.config["DEPENDENCIES"]  # type: ignore[no-any-return]


def _session_json(principal: Principal, expires_at: int, csrf_token: str | None) -> dict[str, Any]:
    return {
        "userId": str(principal.user_id),
        "tenantId": str(principal.tenant_id),
        "appCode": principal.app_code.value,
        "perms": sorted(principal.perms),
        "name": principal.name,
        "expiresAt": datetime.fromtimestamp(expires_at, UTC).isoformat(timespec="milliseconds"),
        "csrfToken": csrf_token,
    }


def _set_cookies(response: Response, token: str, csrf_token: str, max_age: int) -> None:
    # auto: as the request's scheme; "always" behind a proxy that terminates TLS
    secure = cookie_secure(_deps().cookie_secure, request.scheme)
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=max_age,
        path="/",
        secure=secure,
        httponly=True,
        samesite="Strict",
    )
    response.set_cookie(
        CSRF_COOKIE,
        csrf_token,
        max_age=max_age,
        path="/",
        secure=secure,
        httponly=False,  # the page reads it to send X-CSRF-Token
        samesite="Strict",
    )


def _csrf_for(token: str, expires_at: int, csrf: str | None) -> str:
    """``csrf`` when it is still valid for the session of ``token``, else a fresh one."""
    key = csrf_key(_deps().jwt_secret)
    if csrf is None or not csrf_token_valid(key, token, csrf, time.time()):
        csrf = mint_csrf_token(key, token, secrets.token_urlsafe(16), expires_at)
    return csrf


def start_session(response: Response, token: str, expires_at: int, csrf: str | None = None) -> str:
    """Set the session cookie holding ``token`` and its CSRF cookie on ``response``, both
    until ``expires_at`` (epoch seconds): a fresh CSRF token unless ``csrf`` is still
    valid for this session. The token sign-in and the company sign-in
    (``web/sign_in.py``) both start sessions here.

    Returns:
        The CSRF token set.
    """
    csrf = _csrf_for(token, expires_at, csrf)
    _set_cookies(response, token, csrf, max(0, expires_at - int(time.time())))
    response.headers["Cache-Control"] = "no-store"
    return csrf


def _signed_in(token: str, principal: Principal, expires_at: int, csrf: str | None) -> Response:
    """The answer that (re)sets both cookies (:func:`start_session`) and tells the
    session."""
    csrf = _csrf_for(token, expires_at, csrf)
    response = jsonify(envelope(_session_json(principal, expires_at, csrf)))
    start_session(response, token, expires_at, csrf)
    return response


@session.post(PATH)
@declare(
    SessionEnvelope,
    request=SignInRequest,
    codes={"400": "the body has no token string"},
    http=AUTH,
)
async def sign_in() -> Response:
    """Check the token of the body and set the session and CSRF cookies.

    Returns:
        The session (``userId``, ``tenantId``, ``appCode``, ``perms``, ``expiresAt``,
        ``csrfToken``); 401 for an invalid or expired token, 400 for a body that is not a
        JSON object with a string ``token``.
    """
    if request.mimetype != "application/json":
        raise ParameterError("body", "the body must be JSON (Content-Type: application/json)")
    body = parse_json_body(
        await request.get_data(cache=False, as_text=False, parse_form_data=False)
    )
    token = body.get("token")
    if not isinstance(token, str) or not token.strip():
        raise ParameterError("token", "token must be a non-empty string")
    if len(token) > MAX_TOKEN_CHARS:
        raise ParameterError("token", f"token is longer than {MAX_TOKEN_CHARS} characters")
    token = token.strip()
    tokens = _deps().tokens
    await tokens.prepare(token)  # an identity provider's key it names (the body: no hook saw it)
    principal, expires_at = principal_from_token(tokens, token)
    return _signed_in(token, principal, expires_at, None)


@session.get(PATH)
@declare(SessionEnvelope, http=AUTH)
async def who_am_i() -> Response:
    """The caller's session (the header or the cookie), or 401.

    With the cookie, the CSRF cookie is kept when it is still valid for the session, else
    a new one is set; with the header there is no session and ``csrfToken`` is null.
    """
    secret = _deps().tokens
    request_principal(secret)  # the header or the cookie, as every route decides it
    authorization = request.headers.get("Authorization")
    if authorization:
        principal, expires_at = principal_from_token(secret, bearer_token(authorization))
        response = jsonify(envelope(_session_json(principal, expires_at, None)))
        response.headers["Cache-Control"] = "no-store"
        return response
    token = request.cookies.get(SESSION_COOKIE, "")
    principal, expires_at = principal_from_token(secret, token)
    return _signed_in(token, principal, expires_at, request.cookies.get(CSRF_COOKIE))


@session.delete(PATH)
@declare(SignOutEnvelope, http=(403,))
async def sign_out() -> Any:
    """Clear both cookies. With a session cookie this is a state-changing request like any
    other: it needs the CSRF token (403 without it); without one it simply succeeds.

    A session that came from the company's identity provider (``web/sign_in.py``) answers
    ``signOutUrl``, the provider's address that ends its session too; otherwise null.
    """
    token = request.cookies.get(SESSION_COOKIE)
    signed_in = False
    if token and not request.headers.get("Authorization"):
        try:
            request_principal(_deps().tokens)
            signed_in = True
        except ApiError as exc:
            if exc.http_status == 403:
                raise
            # An invalid or expired session may always be cleared.
    openid = _deps().openid
    url = None
    if openid is not None and token and signed_in:
        url = await openid.sign_out_url(token, request.host_url)
    response = jsonify(envelope({"signOutUrl": url}, message="signed out"))
    for name in (SESSION_COOKIE, CSRF_COOKIE):
        response.delete_cookie(name, path="/", samesite="Strict")
    response.headers["Cache-Control"] = "no-store"
    return response
