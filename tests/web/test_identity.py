"""Tokens of an identity provider (issue 24 item 7): RS256 and ES256 tokens verified with
the keys a real JWKS endpoint publishes (served in the test, over HTTP, with keys made
here), key rotation, a forged ``kid``, issuer and audience, claim names, a PEM key; and
the API taking such a token through its request hook."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from actors.storage.local import LocalDirectoryStorage
from db.store import ExportStore
from tests.helpers import API
from tests.provider_server import serve_provider
from tests.servers import api_app
from tests.web.identity_helpers import (
    AUDIENCE,
    CLAIMS,
    ISSUER,
    SECRET,
    Clock,
    IdentityProvider,
    refusal,
    verifier,
    verify,
)
from web.identity import JWKS_MAX_AGE_SECONDS, JWKS_MIN_REFRESH_SECONDS, token_verifier


@pytest.fixture
async def idp() -> AsyncIterator[tuple[IdentityProvider, str]]:
    provider = IdentityProvider()
    provider.new_key("k1")
    async with serve_provider(provider.jwks) as url:
        yield provider, url + "/.well-known/jwks.json"


async def test_rs256_and_es256_tokens_of_published_keys_are_accepted(
    idp: tuple[IdentityProvider, str],
) -> None:
    provider, url = idp
    provider.new_key("e1", "EC")
    tokens = verifier(url)
    principal, _ = await verify(tokens, provider.token("k1"))
    assert (principal.user_id, principal.tenant_id) == (300, 0)
    principal, _ = await verify(tokens, provider.token("e1", sub="301"))
    assert principal.user_id == 301
    assert provider.requests == 1  # one fetch serves both keys


async def test_a_rotated_key_is_fetched_once_and_a_forged_kid_at_most_every_30_s(
    idp: tuple[IdentityProvider, str],
) -> None:
    provider, url = idp
    clock = Clock()
    tokens = verifier(url, clock)
    await verify(tokens, provider.token("k1"))
    clock.now += JWKS_MIN_REFRESH_SECONDS
    provider.new_key("k2")  # the provider rotates: a new key, published
    principal, _ = await verify(tokens, provider.token("k2", sub="302"))
    assert principal.user_id == 302 and provider.requests == 2
    # A kid the provider never published: refused, naming it; the set is not fetched
    # again for every such token.
    provider.new_key("evil", publish=False)
    forged = provider.token("evil")
    for _ in range(5):
        await tokens.prepare(forged)
        message = refusal(lambda: tokens.verify(forged))
        assert message == (
            "invalid token: signed with a key the identity provider does not publish (kid evil)"
        )
    assert provider.requests == 2  # the last fetch was under 30 s ago
    clock.now += JWKS_MIN_REFRESH_SECONDS
    await tokens.prepare(forged)
    assert provider.requests == 3  # one more after the interval, no more


async def test_keys_are_fetched_again_when_old_and_kept_when_the_provider_is_down(
    idp: tuple[IdentityProvider, str],
) -> None:
    provider, url = idp
    clock = Clock()
    tokens = verifier(url, clock)
    token = provider.token("k1")
    await verify(tokens, token)
    clock.now += JWKS_MAX_AGE_SECONDS
    await verify(tokens, token)
    assert provider.requests == 2
    provider.down = True
    clock.now += JWKS_MAX_AGE_SECONDS
    principal, _ = await verify(tokens, token)  # the keys held still verify
    assert principal.user_id == 300 and provider.requests == 3  # it did try


async def test_the_shared_secret_wrong_issuer_audience_or_signature_are_refused(
    idp: tuple[IdentityProvider, str],
) -> None:
    provider, url = idp
    tokens = verifier(url)
    await tokens.prepare(provider.token("k1"))
    hs = jwt.encode({**CLAIMS, "exp": int(time.time()) + 60}, SECRET, algorithm="HS256")
    assert "algorithm other than RS256, ES256" in refusal(lambda: tokens.verify(hs))
    for claims, said in (
        ({"iss": "https://evil.test/"}, "Invalid issuer"),
        ({"aud": "another-service"}, "Audience doesn't match"),
        ({"exp": int(time.time()) - 10}, "token expired"),
        ({"tenant_id": True}, "tenant_id must be an id"),
    ):
        token = provider.token("k1", **claims)
        assert said in refusal(lambda t=token: tokens.verify(t)), claims  # type: ignore[misc]
    provider.new_key("k1-impostor", publish=False)
    impostor = provider.token("k1-impostor").split(".")
    k1 = provider.token("k1").split(".")
    spliced = ".".join([k1[0], impostor[1], impostor[2]])  # k1's header, another signature
    assert refusal(lambda: tokens.verify(spliced)) == "invalid token: signature does not match"


async def test_claim_names_follow_the_identity_provider(idp: tuple[IdentityProvider, str]) -> None:
    provider, url = idp
    names = {"user": "uid", "tenant": "org", "app": "application", "perms": "roles"}
    tokens = verifier(url, claim_names=names)
    token = provider.token(
        "k1", uid=77, org="5", application="MERCHANT", roles=["merchant:order:export"]
    )
    principal, _ = await verify(tokens, token)
    assert (principal.user_id, principal.tenant_id, principal.app_code.value) == (77, 5, "MERCHANT")
    assert principal.perms == frozenset({"merchant:order:export"})


def test_a_pem_public_key_and_the_settings_that_contradict_each_other() -> None:
    provider = IdentityProvider()
    provider.new_key("only")
    pem = (
        provider.private["only"]
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    tokens = token_verifier(SECRET, public_key=pem, issuer=ISSUER, audience=AUDIENCE)
    assert tokens.verify(provider.token("only"))[0].user_id == 300
    with pytest.raises(ValueError, match="one identity provider key source"):
        token_verifier(SECRET, public_key=pem, jwks_url="https://idp.test/jwks")
    with pytest.raises(ValueError, match="HS algorithms"):
        token_verifier(SECRET, public_key=pem, algorithms=("RS256", "HS256"))


async def test_the_api_takes_an_identity_provider_token(
    idp: tuple[IdentityProvider, str], store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    provider, url = idp
    app, services = api_app(store, storage)
    services.tokens = verifier(url)
    client = app.test_client()
    headers = {"Authorization": f"Bearer {provider.token('k1')}"}
    listed = await client.get(API, headers=headers)
    assert (await listed.get_json())["code"] == "200"
    signed_in = await client.post(
        "/api/platform/v1/session", json={"token": provider.token("k1", sub="303")}
    )
    assert (await signed_in.get_json())["data"]["userId"] == "303"
    hs = jwt.encode({**CLAIMS, "exp": int(time.time()) + 60}, SECRET, algorithm="HS256")
    refused = await client.get(API, headers={"Authorization": f"Bearer {hs}"})
    assert refused.status_code == 401
