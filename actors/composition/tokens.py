"""The API's token verifier (``web/identity.py``), as ``FILE_EXPORT_JWT_*`` describe it, and
the page's company sign-in (``web/openid.py``), as ``FILE_EXPORT_OIDC_*`` do."""

from __future__ import annotations

from typing import TYPE_CHECKING

from actors.core.errors import ConfigError
from actors.plumbing.config import Settings

if TYPE_CHECKING:
    from web.identity import TokenVerifier
    from web.openid import OpenIdSignIn


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
            audience=_audiences(settings),
            claim_names=names,
        )
    except ValueError as exc:
        raise ConfigError(f"FILE_EXPORT_JWT_ALGORITHMS: {exc}") from None


def _audiences(settings: Settings) -> str | tuple[str, ...] | None:
    """The accepted ``aud`` values: the configured audience, and the page's OpenID client
    id when both are set (the page's session is an ID token, issued to that client)."""
    if settings.jwt_audience and settings.oidc_client_id:
        return (settings.jwt_audience, settings.oidc_client_id)
    return settings.jwt_audience


def build_openid(settings: Settings) -> OpenIdSignIn | None:
    """The company's OpenID Provider the page signs people in with; ``None`` without
    ``FILE_EXPORT_OIDC_ISSUER`` (the page then asks for a token)."""
    from web.openid import OpenIdSignIn

    if not settings.oidc_issuer or not settings.oidc_client_id:
        return None
    secret = settings.oidc_client_secret
    return OpenIdSignIn(
        issuer=settings.oidc_issuer,
        client_id=settings.oidc_client_id,
        client_secret=secret.get_secret_value() if secret is not None else None,
        scopes=settings.oidc_scopes,
        redirect_url=settings.oidc_redirect_url,
        display_name=settings.oidc_display_name,
    )
