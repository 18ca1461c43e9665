"""The API's token verifier (``web/identity.py``), as ``FILE_EXPORT_JWT_*`` describe it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from actors.core.errors import ConfigError
from actors.plumbing.config import Settings

if TYPE_CHECKING:
    from web.identity import TokenVerifier


def build_token_verifier(settings: Settings, secret: str) -> TokenVerifier:
    """How the API verifies tokens (``web/identity.py``), from ``FILE_EXPORT_JWT_*``.

    Raises:
        ConfigError: the PEM key file cannot be read, or the settings contradict each
            other (an HS algorithm with an identity provider's keys).
    """
    from web.identity import token_verifier

    public_key = None
    if settings.jwt_public_key_file is not None:
        try:
            public_key = settings.jwt_public_key_file.read_text()
        except OSError as exc:
            raise ConfigError(f"FILE_EXPORT_JWT_PUBLIC_KEY_FILE: {exc}") from None
    names = {
        "user": settings.jwt_claim_user,
        "tenant": settings.jwt_claim_tenant,
        "app": settings.jwt_claim_app,
        "perms": settings.jwt_claim_perms,
    }
    try:
        return token_verifier(
            secret,
            algorithms=settings.jwt_algorithms,
            jwks_url=settings.jwt_jwks_url,
            public_key=public_key,
            issuer=settings.jwt_issuer,
            audience=settings.jwt_audience,
            claim_names=names,
        )
    except ValueError as exc:
        raise ConfigError(f"FILE_EXPORT_JWT_ALGORITHMS: {exc}") from None
