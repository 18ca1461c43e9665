"""Whose token it is: verifying a JWT with the key of whoever signed it.

Two ways to sign, configured once (``actors/plumbing/config.py``):

* **A shared secret (HS256)**, ``FILE_EXPORT_JWT_SECRET``: the embedded default, and what
  ``export-center token`` issues.
* **An identity provider's keys (RS256, ES256 …)**: a JWKS URL
  (``FILE_EXPORT_JWT_JWKS_URL``, the provider's published keys, chosen by the token's
  ``kid``) or one PEM public key (``FILE_EXPORT_JWT_PUBLIC_KEY_FILE``). Then only those
  algorithms are accepted (``FILE_EXPORT_JWT_ALGORITHMS``, default RS256 and ES256): a
  token signed with the shared secret is refused, so a leaked secret cannot mint
  identities. The secret still keys the page's CSRF tokens.

Either way the issuer and audience are checked when configured (``FILE_EXPORT_JWT_ISSUER``,
``FILE_EXPORT_JWT_AUDIENCE``), and what the claims mean is read strictly in one place
(``actors/core/http/token_claims.py``; claim names configurable, ``FILE_EXPORT_JWT_CLAIM_*``).

The JWKS is fetched over HTTP by :class:`JwksKeys` and kept in memory: verifying a token
is then pure CPU. The set is fetched at start, kept fresh in the background every
:data:`JWKS_MAX_AGE_SECONDS`, and fetched when a token names a ``kid`` the set does not
hold (the provider rotated its keys) — at most once per :data:`JWKS_MIN_REFRESH_SECONDS`,
so tokens with forged ``kid`` values cannot make the service hammer the provider, and one
fetch at a time. A request whose key is held never waits for a fetch
(``actors/core/http/jwks.py`` decides). A provider that cannot be reached is reported as
the ``identity`` component of ``/healthz/details``, and a token whose key is not held is
then answered 503, not 401. Any wait happens before a request's handler runs
(``web/app.py``: an async hook), so the handlers verify synchronously.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import jwt
import trio

from actors.core.health import Component, HealthBoard
from actors.core.http.jwks import KeyFetch, key_fetch
from actors.core.http.token_claims import ClaimError, ClaimNames, duplicated_claims, parse_claims
from actors.core.principal import Principal
from actors.core.text import quote_outside
from web.errors import ApiError

log = logging.getLogger(__name__)

#: Keys older than this are fetched again before use, seconds.
JWKS_MAX_AGE_SECONDS = 300.0
#: The least time between two fetches of the key set, seconds (an unknown ``kid`` waits).
JWKS_MIN_REFRESH_SECONDS = 30.0
#: Time to fetch the key set, seconds.
JWKS_TIMEOUT_SECONDS = 5.0
#: Algorithms accepted with an identity provider's keys unless configured otherwise.
DEFAULT_KEY_ALGORITHMS = ("RS256", "ES256")
HS256 = "HS256"
#: The claims every token must carry besides the identity ones.
_REQUIRED = ("exp",)


class JwksKeys:
    """An identity provider's published keys (a JWKS), fetched and kept in memory.

    When a fetch starts and who waits for it is :func:`actors.core.http.jwks.key_fetch`'s
    (a request whose key is held never waits; one fetch at a time; unknown ``kid`` values
    start at most one fetch per :data:`JWKS_MIN_REFRESH_SECONDS`). Fetches run in the
    background while :meth:`run` serves (the app runs it for as long as it serves);
    without it, a request that must wait fetches itself.

    Args:
        url: the JWKS endpoint (``https://…/.well-known/jwks.json``).
        client: the HTTP client to fetch with; ``None``: one of its own.

    Attributes:
        failure: why the last fetch failed, or ``None`` when it worked (or none ran yet).
        fetches: fetches started so far (tests count them).
        clock: seconds, monotonic (``trio.current_time``); tests set their own.
    """

    def __init__(self, url: str, client: httpx.AsyncClient | None = None) -> None:
        self.url = url
        self._client = client
        self._keys: dict[str, jwt.PyJWK] = {}
        self._last_try: float | None = None
        self._in_flight: trio.Event | None = None  # set when the running fetch ends
        self._nursery: trio.Nursery | None = None
        self._health: HealthBoard | None = None
        self.failure: str | None = None
        self.fetches = 0
        self.clock: Callable[[], float] = trio.current_time

    def key(self, kid: str | None) -> jwt.PyJWK | None:
        """The key ``kid`` names, if the set holds it; without a ``kid``, the only key."""
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    async def run(
        self,
        health: HealthBoard | None = None,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Fetch the keys at once, then again every :data:`JWKS_MAX_AGE_SECONDS` (every
        :data:`JWKS_MIN_REFRESH_SECONDS` while they cannot be fetched), and serve the
        fetches requests start, until cancelled. Never raises: an unreachable provider is
        a WARNING and, in ``health``, a component that is down, not a failed start.

        Args:
            health: where the provider's health is reported (``identity``).
        """
        async with trio.open_nursery() as nursery:
            self._nursery, self._health = nursery, health
            task_status.started()
            try:
                while True:
                    done = self._in_flight or self._start(nursery)
                    await done.wait()
                    failed = self.failure is not None
                    await trio.sleep(JWKS_MIN_REFRESH_SECONDS if failed else JWKS_MAX_AGE_SECONDS)
            finally:
                self._nursery = None

    async def ensure(self, kid: str | None) -> None:
        """Make the set current enough to verify a token naming ``kid``, by the rule of
        :func:`~actors.core.http.jwks.key_fetch`. Waits at most
        :data:`JWKS_TIMEOUT_SECONDS` (and a second) and only for a key it does not hold.
        Never raises: a failed fetch keeps the keys held (logged), and the token's
        verification then says why it fails."""
        since = None if self._last_try is None else self.clock() - self._last_try
        action = key_fetch(
            holds_key=self.key(kid) is not None,
            since_last_try=since,
            in_flight=self._in_flight is not None,
            max_age=JWKS_MAX_AGE_SECONDS,
            min_interval=JWKS_MIN_REFRESH_SECONDS,
        )
        if action is KeyFetch.NONE:
            return
        nursery = self._nursery
        if action is KeyFetch.IN_BACKGROUND:
            if nursery is not None:
                self._start(nursery)
                return
            action = KeyFetch.START_AND_WAIT  # no background here: this request fetches
        if action is KeyFetch.START_AND_WAIT:
            if nursery is None:
                await self._fetch(self._begin())
                return
            self._start(nursery)
        done = self._in_flight
        if done is not None:
            with trio.move_on_after(JWKS_TIMEOUT_SECONDS + 1):
                await done.wait()

    def _begin(self) -> trio.Event:
        """Mark a fetch as started now (a failed one also waits its turn)."""
        self._last_try = self.clock()
        self.fetches += 1
        done = self._in_flight = trio.Event()
        return done

    def _start(self, nursery: trio.Nursery) -> trio.Event:
        done = self._begin()
        nursery.start_soon(self._fetch, done)
        return done

    async def _fetch(self, done: trio.Event) -> None:
        """Fetch the set into :attr:`_keys`; report and log how it went; end the flight."""
        try:
            with trio.fail_after(JWKS_TIMEOUT_SECONDS + 1):  # the client's own timeout first
                keys = await self._get()
        except Exception as exc:
            self.failure = f"{type(exc).__name__}: {quote_outside(str(exc), 200)}"
            self._report(False, f"keys not fetched from {self.url}: {self.failure}")
        else:
            self._keys, self.failure = keys, None
            self._report(True, "")
        finally:
            self._in_flight = None
            done.set()

    def _report(self, up: bool, detail: str) -> None:
        changed = self._health.report(Component.IDENTITY, up, detail) if self._health else True
        if up and changed:
            log.info("identity provider keys fetched", extra={"url": self.url})
        elif not up and changed:
            log.warning(
                "identity provider keys not fetched: tokens signed with a key not held are"
                " answered 503 until they are; the keys held are kept",
                extra={"url": self.url, "error": self.failure},
            )

    async def _get(self) -> dict[str, jwt.PyJWK]:
        client = self._client or httpx.AsyncClient(timeout=JWKS_TIMEOUT_SECONDS)
        try:
            response = await client.get(self.url, headers={"Accept": "application/json"})
            response.raise_for_status()
            keys = jwt.PyJWKSet.from_dict(response.json())
        finally:
            if self._client is None:
                await client.aclose()
        return {k.key_id or "": k for k in keys.keys}


@dataclass
class TokenVerifier:
    """How this service verifies a token, and who it names (module docstring).

    Attributes:
        secret: the shared secret: the HS256 key when no identity provider is configured,
            and always the key of the page's CSRF tokens.
        algorithms: the accepted ``alg`` values.
        jwks: an identity provider's published keys, when configured.
        public_key: one PEM public key, when configured (instead of a JWKS).
        issuer: the required ``iss``, if any.
        audience: the accepted ``aud`` values (a token must name one), if any: the
            configured audience, and the page's OpenID client id whose ID tokens are
            the page's sessions.
        claim_names: which claims carry the user, tenant, app code and permissions.
    """

    secret: str
    algorithms: tuple[str, ...] = (HS256,)
    jwks: JwksKeys | None = None
    public_key: str | None = None
    issuer: str | None = None
    audience: str | tuple[str, ...] | None = None
    claim_names: ClaimNames = field(default_factory=ClaimNames)

    @property
    def uses_identity_provider(self) -> bool:
        """Tokens are signed by an identity provider, not with the shared secret."""
        return self.jwks is not None or self.public_key is not None

    async def run(
        self,
        health: HealthBoard | None = None,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Keep an identity provider's keys fetched (:meth:`JwksKeys.run`) until cancelled;
        nothing to do without a JWKS."""
        if self.jwks is None:
            if health is not None:  # the shared secret or one PEM key: nothing to fetch
                health.report(Component.IDENTITY, True)
            task_status.started()
            return
        await self.jwks.run(health, task_status=task_status)

    async def prepare(self, token: str | None) -> None:
        """Fetch what verifying ``token`` needs (its ``kid``'s key) before a handler
        verifies it synchronously; nothing without a JWKS. Never raises."""
        if self.jwks is None or not token:
            return
        try:
            kid = jwt.get_unverified_header(token).get("kid")
        except jwt.PyJWTError:
            return  # malformed: verification says so
        await self.jwks.ensure(kid if isinstance(kid, str) else None)

    def verify(self, token: str) -> tuple[Principal, int]:
        """Authenticate ``token``.

        Returns:
            The principal and the token's ``exp`` (epoch seconds).

        Raises:
            ApiError: code "401" with HTTP 401: a bad signature, an algorithm not accepted,
                an unknown signing key, a wrong issuer or audience, an expired token, or a
                malformed claim (``actors/core/http/token_claims.py``).
        """
        try:
            claims = jwt.decode(
                token,
                self._key(token),
                algorithms=list(self.algorithms),
                issuer=self.issuer,
                audience=list(self.audience) if isinstance(self.audience, tuple) else self.audience,
                options={
                    "require": [*_REQUIRED, *self._identity_claims()],
                    "verify_aud": self.audience is not None,
                },
            )
        except jwt.ExpiredSignatureError:
            raise ApiError("401", "token expired", http_status=401) from None
        except jwt.InvalidSignatureError:
            raise ApiError(
                "401", "invalid token: signature does not match", http_status=401
            ) from None
        except jwt.InvalidAlgorithmError:
            allowed = ", ".join(self.algorithms)
            raise ApiError(
                "401",
                f"invalid token: signed with an algorithm other than {allowed}",
                http_status=401,
            ) from None
        except jwt.DecodeError:
            # PyJWT's own text names decoder internals (a codec, a byte offset): say what it is.
            raise ApiError(
                "401",
                "invalid token: not a well-formed JWT (header.payload.signature)",
                http_status=401,
            ) from None
        except jwt.InvalidTokenError as exc:
            raise ApiError(
                "401", f"invalid token: {quote_outside(str(exc))}", http_status=401
            ) from None
        twice = duplicated_claims(token)
        if twice:
            raise ApiError(
                "401",
                f"invalid token claims: {', '.join(twice)}"
                f" {'is' if len(twice) == 1 else 'are'} given twice",
                http_status=401,
            )
        try:
            return parse_claims(claims, self.claim_names)
        except ClaimError as exc:
            raise ApiError("401", f"invalid token claims: {exc}", http_status=401) from None

    def _identity_claims(self) -> tuple[str, ...]:
        n = self.claim_names
        return (n.user, n.tenant, n.app)

    def _key(self, token: str) -> Any:
        if self.jwks is not None:
            try:
                kid = jwt.get_unverified_header(token).get("kid")
            except jwt.PyJWTError:
                raise jwt.DecodeError("not a JWT") from None
            key = self.jwks.key(kid if isinstance(kid, str) else None)
            if key is None and self.jwks.failure is not None:
                # Not the token's fault: the provider did not answer. Not a 401 either,
                # which would end a session that is fine.
                raise ApiError(
                    "503",
                    "the token cannot be checked now: the identity provider's keys could not"
                    " be fetched; try again in a moment",
                    http_status=503,
                )
            if key is None:
                raise ApiError(
                    "401",
                    "invalid token: signed with a key the identity provider does not publish"
                    + (f" (kid {quote_outside(kid, 64)})" if isinstance(kid, str) else ""),
                    http_status=401,
                )
            return key
        if self.public_key is not None:
            return self.public_key
        return self.secret


def token_verifier(
    secret: str,
    *,
    algorithms: tuple[str, ...] | None = None,
    jwks_url: str | None = None,
    public_key: str | None = None,
    issuer: str | None = None,
    audience: str | tuple[str, ...] | None = None,
    claim_names: Mapping[str, str] | None = None,
) -> TokenVerifier:
    """The verifier the settings describe (``FILE_EXPORT_JWT_*``).

    Args:
        secret: the shared secret (HS256 without an identity provider; CSRF keys always).
        algorithms: accepted algorithms; default HS256, or RS256 and ES256 with an
            identity provider.
        jwks_url, public_key: an identity provider's keys (at most one of them).
        issuer, audience: required ``iss`` and accepted ``aud`` values (one, or a tuple).
        claim_names: ``user``, ``tenant``, ``app``, ``perms`` -> claim name, for those
            that differ from the defaults.

    Raises:
        ValueError: both ``jwks_url`` and ``public_key``; or HS256 among the algorithms
            of an identity provider.
    """
    if jwks_url and public_key:
        raise ValueError("configure one identity provider key source: a JWKS URL or a PEM key")
    provider = bool(jwks_url or public_key)
    chosen = algorithms or (DEFAULT_KEY_ALGORITHMS if provider else (HS256,))
    if provider and any(a.upper().startswith("HS") for a in chosen):
        raise ValueError(
            "an identity provider signs with its private key: HS algorithms would let anyone "
            "holding the public key sign tokens"
        )
    return TokenVerifier(
        secret=secret,
        algorithms=chosen,
        jwks=JwksKeys(jwks_url) if jwks_url else None,
        public_key=public_key,
        issuer=issuer,
        audience=audience,
        claim_names=ClaimNames(**dict(claim_names or {})),
    )


__all__ = ["JwksKeys", "TokenVerifier", "token_verifier"]
