"""What the identity tests share: an identity provider with keys made in the test and a
JWKS handler publishing them, a settable clock, and a verifier of its tokens."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from web.errors import ApiError
from web.identity import (
    TokenVerifier,
    token_verifier,
)

SECRET = "shared-secret-of-the-test-" + "x" * 16
ISSUER = "https://idp.test/"
AUDIENCE = "export-center"
CLAIMS = {
    "sub": "300",
    "tenant_id": "0",
    "app_code": "PLATFORM",
    "perms": ["platform:customer:export"],
}


class IdentityProvider:
    """Keys made here; a JWKS handler that publishes the current public ones."""

    def __init__(self) -> None:
        self.private: dict[str, Any] = {}
        self.published: list[str] = []
        self.requests = 0
        self.down = False

    def new_key(self, kid: str, kind: str = "RSA", publish: bool = True) -> None:
        key: Any = (
            rsa.generate_private_key(public_exponent=65537, key_size=2048)
            if kind == "RSA"
            else ec.generate_private_key(ec.SECP256R1())
        )
        self.private[kid] = key
        if publish:
            self.published.append(kid)

    def jwks(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        if self.down:
            return httpx.Response(503, text="identity provider down")
        keys = []
        for kid in self.published:
            jwk = json.loads(
                jwt.algorithms.get_default_algorithms()[
                    "RS256" if isinstance(self.private[kid], rsa.RSAPrivateKey) else "ES256"
                ].to_jwk(self.private[kid].public_key())
            )
            keys.append({**jwk, "kid": kid, "use": "sig"})
        return httpx.Response(200, json={"keys": keys})

    def token(self, kid: str, **claims: Any) -> str:
        key = self.private[kid]
        algorithm = "RS256" if isinstance(key, rsa.RSAPrivateKey) else "ES256"
        body = {**CLAIMS, "iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 600, **claims}
        return jwt.encode(body, key, algorithm=algorithm, headers={"kid": kid})


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def verifier(url: str, clock: Callable[[], float] | None = None, **kw: Any) -> TokenVerifier:
    tokens = token_verifier(SECRET, jwks_url=url, issuer=ISSUER, audience=AUDIENCE, **kw)
    assert tokens.jwks is not None
    if clock is not None:
        tokens.jwks.clock = clock
    return tokens


async def verify(tokens: TokenVerifier, token: str) -> Any:
    await tokens.prepare(token)
    return tokens.verify(token)


def refusal(call: Callable[[], Any]) -> str:
    with pytest.raises(ApiError) as caught:
        call()
    assert caught.value.code == "401" and caught.value.http_status == 401
    return caught.value.message
