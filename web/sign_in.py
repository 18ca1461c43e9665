"""Company sign-in for the download center page: OpenID Connect, authorization code flow
with PKCE, against the provider of ``FILE_EXPORT_OIDC_*`` (``web/openid.py`` speaks to it;
``actors/core/http/oidc.py`` decides).

* ``GET /auth/options`` — how the page signs people in: ``{"oidc": true, "name": …}`` with
  a provider, else ``{"oidc": false}`` (the page then asks for a token: the embedded demo).
* ``GET /auth/login?next=<path>`` — starts a sign-in and sends the browser to the provider.
* ``GET /auth/callback`` — the provider's answer: the ID token becomes the session cookie
  (the same HttpOnly, SameSite=Strict cookie a pasted token makes, ``web/session.py``),
  and the browser goes back to the page it left.

A sign-in that cannot finish sends the browser back to the page with
``?signInProblem=<kind>`` (``SignInProblem``), which the page says in the person's
language; the log says why in detail. The callback's answer is a small HTML page that
moves on by itself rather than a redirect: the browser arrived from the provider's site,
and a SameSite=Strict cookie is only sent once a navigation starts on this site.
"""

from __future__ import annotations

import html
import logging
import secrets
from typing import Any
from urllib.parse import quote, urlencode

import jwt
from itsdangerous import BadSignature, URLSafeTimedSerializer
from quart import Blueprint, Response, current_app, jsonify, request

from actors.core.http.oidc import (
    LOGIN_SECONDS,
    LoginState,
    SignInProblem,
    callback_problem,
    id_token_problem,
    return_path,
)
from actors.core.http.session import cookie_secure
from web.dependencies import Dependencies
from web.errors import ApiError
from web.openid import CodeRefused, OpenIdSignIn, ProviderUnreachable
from web.session import start_session

log = logging.getLogger(__name__)

#: The signed cookie of a sign-in under way (state, nonce, PKCE verifier, where to return).
LOGIN_COOKIE = "export_center_login"
_LOGIN_SALT = "export-center openid login v1"
#: The callback's page: moves on to this site's page by itself (module docstring).
_MOVE_ON = """<!doctype html>
<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={url}">
<link rel="icon" href="data:,"><title>Export Center</title></head>
<body><p><a href="{url}">Export Center</a></p></body></html>
"""

sign_in = Blueprint("sign_in", __name__)


def _deps() -> Dependencies:
    return current_app.config["DEPENDENCIES"]  # type: ignore[no-any-return]


def _openid() -> OpenIdSignIn | None:
    return _deps().openid


def _serializer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(_deps().jwt_secret, salt=_LOGIN_SALT)


def _redirect_uri(openid: OpenIdSignIn) -> str:
    return openid.redirect_url or request.host_url.rstrip("/") + "/auth/callback"


def _redirect(url: str) -> Response:
    return Response("", status=302, headers={"Location": url})


def _back_to_page(problem: SignInProblem, return_to: str = "/") -> Response:
    """The browser back to the page, told why the sign-in did not finish."""
    separator = "&" if "?" in return_to else "?"
    response = _redirect(f"{return_to}{separator}{urlencode({'signInProblem': problem.value})}")
    response.delete_cookie(LOGIN_COOKIE, path="/auth")
    response.headers["Cache-Control"] = "no-store"
    return response


@sign_in.get("/auth/options")
async def options() -> Response:
    """How the page signs people in (module docstring)."""
    openid = _openid()
    body: dict[str, Any] = {"oidc": openid is not None}
    if openid is not None:
        body["name"] = openid.display_name
    return jsonify(body)


@sign_in.get("/auth/login")
async def login() -> Any:
    """Start a sign-in at the provider; 404 when none is configured."""
    openid = _openid()
    if openid is None:
        raise ApiError("404", "no identity provider is configured (FILE_EXPORT_OIDC_ISSUER)")
    state = LoginState(
        state=secrets.token_urlsafe(24),
        nonce=secrets.token_urlsafe(24),
        verifier=secrets.token_urlsafe(48),  # 64 characters: RFC 7636 wants 43 to 128
        return_to=return_path(request.args.get("next")),
    )
    try:
        url = await openid.authorization_url(state, _redirect_uri(openid))
    except ProviderUnreachable as exc:
        log.warning("sign-in not started, the identity provider cannot be reached: %s", exc)
        return _back_to_page(SignInProblem.UNREACHABLE, state.return_to)
    response = _redirect(url)
    response.set_cookie(
        LOGIN_COOKIE,
        _serializer().dumps(state.to_json()),
        max_age=LOGIN_SECONDS,
        path="/auth",
        secure=cookie_secure(_deps().cookie_secure, request.scheme),
        httponly=True,
        samesite="Lax",  # sent back on the provider's top-level redirect to the callback
    )
    response.headers["Cache-Control"] = "no-store"
    return response


def _saved_login() -> LoginState | None:
    """The sign-in this browser started, if its cookie is signed and young enough."""
    cookie = request.cookies.get(LOGIN_COOKIE)
    if not cookie:
        return None
    try:
        return LoginState.from_json(_serializer().loads(cookie, max_age=LOGIN_SECONDS))
    except BadSignature:
        return None


@sign_in.get("/auth/callback")
async def callback() -> Any:
    """Finish a sign-in: the provider's code for an ID token, the ID token for a session."""
    openid = _openid()
    if openid is None:
        raise ApiError("404", "no identity provider is configured (FILE_EXPORT_OIDC_ISSUER)")
    saved = _saved_login()
    query = {k: v for k, v in request.args.items() if isinstance(v, str)}
    problem = callback_problem(query, saved)
    if problem is not None or saved is None:
        log.warning(
            "sign-in refused (%s): %s",
            problem,
            query.get("error_description") or query.get("error") or "no matching sign-in",
        )
        return _back_to_page(
            problem or SignInProblem.NOT_STARTED, saved.return_to if saved else "/"
        )
    try:
        id_token = await openid.exchange(query["code"], saved, _redirect_uri(openid))
    except CodeRefused as exc:
        log.warning("sign-in refused: the identity provider refused the code: %s", exc)
        return _back_to_page(SignInProblem.CODE, saved.return_to)
    except ProviderUnreachable as exc:
        log.warning("sign-in not finished, the identity provider failed: %s", exc)
        return _back_to_page(SignInProblem.UNREACHABLE, saved.return_to)
    tokens = _deps().tokens
    await tokens.prepare(id_token)  # the provider's signing key, fetched if new
    try:
        principal, expires_at = tokens.verify(id_token)
    except ApiError as exc:
        log.warning("sign-in refused: the ID token is not accepted: %s", exc.message)
        return _back_to_page(SignInProblem.TOKEN, saved.return_to)
    claims = jwt.decode(id_token, options={"verify_signature": False})  # verified above
    wrong = id_token_problem(claims, saved.nonce, openid.client_id)
    if wrong is not None:
        log.warning("sign-in refused: %s", wrong)
        return _back_to_page(SignInProblem.TOKEN, saved.return_to)
    url = html.escape(quote(saved.return_to, safe="/?&=%:,+-._~"), quote=True)
    response = Response(_MOVE_ON.format(url=url), content_type="text/html")
    start_session(response, id_token, expires_at)
    response.delete_cookie(LOGIN_COOKIE, path="/auth")
    response.headers["Content-Security-Policy"] = "default-src 'none'; img-src data:"
    response.headers["Referrer-Policy"] = "no-referrer"
    log.info("signed in through the identity provider", extra={"userId": principal.user_id})
    return response


__all__ = ["LOGIN_COOKIE", "sign_in"]
