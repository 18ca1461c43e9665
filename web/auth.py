"""Authentication: JWTs via PyJWT, sent as a bearer header or a session cookie; verified
with the shared secret (HS256) or an identity provider's keys (``web/identity.py``).

Claims: ``sub`` (user id), ``tenant_id``, ``app_code`` (PLATFORM | MERCHANT), ``perms``
(list of permission codes), ``exp``. Ids are carried as strings (64-bit). What they mean
is read strictly, in one place: ``actors/core/http/token_claims.py``.

Every API route takes its caller from :func:`request_principal`: the ``Authorization:
Bearer`` header when present, else the session cookie that ``POST /api/platform/v1/session``
sets (``web/session.py``), with the CSRF check of ``actors/core/http/session.py`` for
state-changing requests. The token is never read from a URL and never logged.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import jwt
from quart import request

from actors.core.http.session import Credential, csrf_key, decide_credential
from actors.core.principal import AppCode, Principal
from web.access_log import note_user
from web.errors import ApiError
from web.identity import TokenVerifier

#: The 401 of a request with neither credential: say both ways in.
NO_CREDENTIAL_MESSAGE = (
    "not signed in: send Authorization: Bearer <token>, "
    "or sign in with POST /api/platform/v1/session"
)

ALGORITHM = "HS256"
DEFAULT_TTL_SECONDS = 12 * 3600
#: The HttpOnly cookie holding the session's JWT.
SESSION_COOKIE = "export_center_session"
#: The cookie (readable by the page's script) holding the session's CSRF token.
CSRF_COOKIE = "export_center_csrf"
#: The header a cookie-authenticated state-changing request repeats the CSRF token in.
CSRF_HEADER = "X-CSRF-Token"
CSRF_MESSAGE = "CSRF token missing or invalid"


def issue_token(
    secret: str,
    *,
    user_id: int,
    tenant_id: int,
    app_code: AppCode | str,
    perms: Iterable[str],
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    now: float | None = None,
    name: str | None = None,
) -> str:
    """Sign a token for calling the API.

    Args:
        secret: the HS256 key (``FILE_EXPORT_JWT_SECRET`` or the embedded dev secret).
        name: what people call the user (the ``name`` claim; pages show it instead of
            the id), or ``None`` for none.
        ttl_seconds: lifetime in seconds.
        now: issue time, epoch seconds (default: the wall clock; tokens are labels of the
            instance clock, not scheduling decisions).
    """
    issued = int(now if now is not None else time.time())
    claims: dict[str, object] = {
        "sub": str(user_id),
        "tenant_id": str(tenant_id),
        "app_code": AppCode(app_code).value,
        "perms": sorted(set(perms)),
        "iat": issued,
        "exp": issued + ttl_seconds,
    }
    if name:
        claims["name"] = name
    return jwt.encode(claims, secret, algorithm=ALGORITHM)


def principal_from_header(tokens: TokenVerifier | str, authorization: str | None) -> Principal:
    """Authenticate an ``Authorization: Bearer …`` header.

    Raises:
        ApiError: code "401" with HTTP 401 when the header is missing, the token is
            invalid or expired, or a claim is malformed.
    """
    return principal_from_token(tokens, bearer_token(authorization))[0]


def bearer_token(authorization: str | None) -> str:
    """The token of an ``Authorization: Bearer …`` header (the scheme is case-insensitive).

    Raises:
        ApiError: code "401" with HTTP 401 when the header is missing or not a bearer token.
    """
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError("401", "missing bearer token", http_status=401)
    return token.strip()


def principal_from_token(tokens: TokenVerifier | str, token: str) -> tuple[Principal, int]:
    """Authenticate a JWT, from the header or the session cookie alike.

    Args:
        tokens: how tokens are verified (``web/identity.py``); a string is the HS256
            shared secret alone.
        token: the encoded JWT.

    Returns:
        The principal and the token's ``exp`` (epoch seconds).

    Raises:
        ApiError: code "401" with HTTP 401 when the token is invalid or expired, or a
            claim is malformed.
    """
    return as_verifier(tokens).verify(token)


def as_verifier(tokens: TokenVerifier | str) -> TokenVerifier:
    """``tokens`` as a verifier: a string is the HS256 shared secret alone."""
    return TokenVerifier(secret=tokens) if isinstance(tokens, str) else tokens


def presented_token() -> str | None:
    """The token the current request presents: its bearer header's, else its session
    cookie (the order :func:`request_credentials` takes them in); ``None`` without."""
    authorization = request.headers.get("Authorization")
    if authorization is not None:
        scheme, _, token = authorization.partition(" ")
        return token.strip() or None if scheme.lower() == "bearer" else None
    return request.cookies.get(SESSION_COOKIE)


def request_principal(tokens: TokenVerifier | str) -> Principal:
    """The caller of the current request (:func:`request_credentials` without the expiry)."""
    return request_credentials(tokens)[0]


def request_credentials(tokens: TokenVerifier | str) -> tuple[Principal, int]:
    """The caller of the current request: the bearer header, else the session cookie.

    The choice and the CSRF rule are ``decide_credential`` (``actors/core/http/session.py``);
    the session itself is checked first, so an expired session answers 401 (sign in
    again) rather than a CSRF refusal.

    Args:
        tokens: how tokens are verified (a string: the HS256 shared secret alone); its
            ``secret`` keys the CSRF tokens.

    Returns:
        The authenticated principal and its token's expiry (epoch seconds).

    Raises:
        ApiError: 401 without a credential or with an invalid one; 403 ("CSRF token
            missing or invalid") for a cookie-authenticated request other than GET or HEAD
            whose ``X-CSRF-Token`` is missing or not valid for the session.
    """
    verifier = as_verifier(tokens)
    authorization = request.headers.get("Authorization")
    session = request.cookies.get(SESSION_COOKIE)
    decision = decide_credential(
        method=request.method,
        authorization=authorization,
        session_cookie=session,
        csrf_cookie=request.cookies.get(CSRF_COOKIE),
        csrf_header=request.headers.get(CSRF_HEADER),
        key=csrf_key(verifier.secret),
        now=time.time(),
    )
    if decision.credential == Credential.BEARER:
        credentials = verifier.verify(bearer_token(authorization))
    elif decision.credential == Credential.NONE or session is None:
        raise ApiError("401", NO_CREDENTIAL_MESSAGE, http_status=401)
    else:
        credentials = verifier.verify(session)
        if not decision.csrf_ok:
            raise ApiError("403", CSRF_MESSAGE, http_status=403)
    principal = credentials[0]
    note_user(principal.user_id, principal.tenant_id)  # the access line (web/access_log.py)
    return credentials
