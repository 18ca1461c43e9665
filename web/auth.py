"""Bearer-token authentication (§12): HS256 JWTs via PyJWT.

Claims: ``sub`` (user id), ``tenant_id``, ``app_code`` (PLATFORM | MERCHANT), ``perms``
(list of permission codes), ``exp``. Ids are carried as strings (64-bit).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import jwt

from actors.core.models import AppCode, Principal
from web.errors import ApiError

ALGORITHM = "HS256"
DEFAULT_TTL_SECONDS = 12 * 3600


def issue_token(
    secret: str,
    *,
    user_id: int,
    tenant_id: int,
    app_code: AppCode | str,
    perms: Iterable[str],
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    now: float | None = None,
) -> str:
    """Sign a token for calling the API.

    Args:
        secret: the HS256 key (``FILE_EXPORT_JWT_SECRET`` or the embedded dev secret).
        ttl_seconds: lifetime in seconds.
        now: issue time, epoch seconds (default: the wall clock; tokens are labels of the
            instance clock, not scheduling decisions).
    """
    issued = int(now if now is not None else time.time())
    claims = {
        "sub": str(user_id),
        "tenant_id": str(tenant_id),
        "app_code": AppCode(app_code).value,
        "perms": sorted(set(perms)),
        "iat": issued,
        "exp": issued + ttl_seconds,
    }
    return jwt.encode(claims, secret, algorithm=ALGORITHM)


def principal_from_header(secret: str, authorization: str | None) -> Principal:
    """Authenticate an ``Authorization: Bearer …`` header.

    Raises:
        ApiError: code "401" with HTTP 401 when the header is missing, the token is
            invalid or expired, or a claim is malformed.
    """
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():  # the scheme is case-insensitive
        raise ApiError("401", "missing bearer token", http_status=401)
    token = token.strip()
    try:
        claims = jwt.decode(
            token,
            secret,
            algorithms=[ALGORITHM],
            options={"require": ["sub", "exp", "tenant_id", "app_code"]},
        )
    except jwt.ExpiredSignatureError:
        raise ApiError("401", "token expired", http_status=401) from None
    except jwt.InvalidTokenError as exc:
        raise ApiError("401", f"invalid token: {exc}", http_status=401) from None
    try:
        perms = claims.get("perms", [])
        if not isinstance(perms, list) or not all(isinstance(p, str) for p in perms):
            raise ValueError("perms must be a list of strings")
        user_id, tenant_id = int(claims["sub"]), int(claims["tenant_id"])
        if not (0 <= user_id < 2**63 and 0 <= tenant_id < 2**63):
            raise ValueError("sub and tenant_id must be 64-bit ids")
        return Principal(
            user_id=user_id,
            tenant_id=tenant_id,
            app_code=AppCode(str(claims["app_code"])),
            perms=frozenset(perms),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ApiError("401", f"invalid token claims: {exc}", http_status=401) from None
