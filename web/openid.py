"""The company's OpenID Provider as the page's sign-in talks to it: its discovery document,
the authorization request and the code exchange with PKCE, and the address that ends its
session. The protocol's messages are Authlib's (RFC 6749 requests, RFC 7636 challenges,
client authentication); they travel over this service's httpx. The decisions are
``actors/core/http/oidc.py``'s; the routes are ``web/sign_in.py``'s.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import httpx
import trio
from authlib.oauth2.auth import ClientAuth
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri, prepare_token_request
from authlib.oauth2.rfc7636 import create_s256_code_challenge

from actors.core.http.oidc import LoginState

log = logging.getLogger(__name__)

#: Seconds a discovery document is used before it is read again.
DISCOVERY_MAX_AGE_SECONDS = 3600.0
#: Seconds the provider has to answer one request.
PROVIDER_TIMEOUT_SECONDS = 10.0


class ProviderUnreachable(Exception):
    """The provider could not be reached, or answered something that is not OpenID."""


class CodeRefused(Exception):
    """The provider would not exchange the code (OAuth ``error``, e.g. ``invalid_grant``
    for a code used twice)."""


@dataclass
class OpenIdSignIn:
    """This service as an OpenID client of the company's provider
    (``FILE_EXPORT_OIDC_*``).

    Attributes:
        issuer: the provider's issuer URL; its discovery document is
            ``<issuer>/.well-known/openid-configuration``.
        client_id, client_secret: this service's credentials there (no secret: a public
            client).
        scopes: the scopes asked for, space-separated.
        redirect_url: the callback registered at the provider; ``None``: the request's
            origin + ``/auth/callback``.
        display_name: the provider's name on the sign-in button, or ``None``.
        transport: the HTTP transport (tests); ``None``: the network.
    """

    issuer: str
    client_id: str
    client_secret: str | None = None
    scopes: str = "openid profile"
    redirect_url: str | None = None
    display_name: str | None = None
    transport: httpx.AsyncBaseTransport | None = None
    _metadata: dict[str, Any] | None = field(default=None, repr=False)
    _read_at: float = field(default=0.0, repr=False)

    async def metadata(self) -> dict[str, Any]:
        """The provider's discovery document, read at most every
        :data:`DISCOVERY_MAX_AGE_SECONDS`.

        Raises:
            ProviderUnreachable: it cannot be read, or lacks the endpoints of this flow.
        """
        now = trio.current_time()
        if self._metadata is not None and now - self._read_at < DISCOVERY_MAX_AGE_SECONDS:
            return self._metadata
        url = self.issuer.rstrip("/") + "/.well-known/openid-configuration"
        try:
            async with httpx.AsyncClient(
                timeout=PROVIDER_TIMEOUT_SECONDS, transport=self.transport
            ) as client:
                answer = await client.get(url)
                answer.raise_for_status()
                document = answer.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise ProviderUnreachable(f"{url}: {exc}") from exc
        needed = ("authorization_endpoint", "token_endpoint")
        if not isinstance(document, dict) or not all(
            isinstance(document.get(k), str) for k in needed
        ):
            raise ProviderUnreachable(f"{url}: no {' or '.join(needed)} in the document")
        self._metadata, self._read_at = document, now
        return document

    async def authorization_url(self, login: LoginState, redirect_uri: str) -> str:
        """Where to send the browser to sign in: the authorization request of ``login``
        (code flow, PKCE S256, its state and nonce).

        Raises:
            ProviderUnreachable: the discovery document cannot be read.
        """
        document = await self.metadata()
        url: str = prepare_grant_uri(
            document["authorization_endpoint"],
            self.client_id,
            "code",
            redirect_uri=redirect_uri,
            scope=self.scopes,
            state=login.state,
            nonce=login.nonce,
            code_challenge=create_s256_code_challenge(login.verifier),
            code_challenge_method="S256",
        )
        return url

    async def exchange(self, code: str, login: LoginState, redirect_uri: str) -> str:
        """The ID token the provider gives for ``code`` (with ``login``'s verifier).

        Raises:
            CodeRefused: the provider refused the code (used, expired, not ours).
            ProviderUnreachable: it cannot be reached, or its answer has no ID token.
        """
        document = await self.metadata()
        endpoint = document["token_endpoint"]
        body = prepare_token_request(
            "authorization_code", code=code, redirect_uri=redirect_uri, code_verifier=login.verifier
        )
        method = "client_secret_basic" if self.client_secret else "none"
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json",
        }
        endpoint, headers, body = ClientAuth(self.client_id, self.client_secret, method).prepare(
            "POST", endpoint, headers, body
        )
        try:
            async with httpx.AsyncClient(
                timeout=PROVIDER_TIMEOUT_SECONDS, transport=self.transport
            ) as client:
                answer = await client.post(endpoint, content=body, headers=headers)
            token = answer.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise ProviderUnreachable(f"token endpoint: {exc}") from exc
        if not isinstance(token, dict):
            raise ProviderUnreachable("the token endpoint answered something not an object")
        if answer.status_code != 200 or "error" in token:
            raise CodeRefused(f"{token.get('error')}: {token.get('error_description')}")
        id_token = token.get("id_token")
        if not isinstance(id_token, str):
            raise ProviderUnreachable("the token endpoint answered without an id_token")
        return id_token

    async def sign_out_url(self, id_token: str, come_back_to: str) -> str | None:
        """Where to send the browser to end its session at the provider too
        (RP-Initiated Logout 1.0), or ``None`` when the provider offers no
        ``end_session_endpoint`` or cannot be reached (the page's own session is ended
        either way)."""
        try:
            document = await self.metadata()
        except ProviderUnreachable as exc:
            log.warning("signing out at the identity provider skipped: %s", exc)
            return None
        endpoint = document.get("end_session_endpoint")
        if not isinstance(endpoint, str):
            return None
        query = {
            "id_token_hint": id_token,
            "post_logout_redirect_uri": come_back_to,
            "client_id": self.client_id,
        }
        return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(query)}"


__all__ = ["CodeRefused", "OpenIdSignIn", "ProviderUnreachable"]
