"""An identity provider that is slow, down or flooded never holds up requests whose key is
known (issue 35 item 7; web/identity.py, actors/core/http/jwks.py): the key set is fetched
in the background, one fetch at a time, at most once per interval for unknown ``kid``
values; an unreachable provider is a degraded ``identity`` component and a 503 for the
tokens it cannot check, not a crash and not a 401 that would end a session.

The provider here is a real HTTP server whose JWKS answer waits for the test's gate, so
"while a fetch is in flight" is a condition the test holds, not a duration it hopes for.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import trio

from actors.core.health import Component, HealthBoard
from actors.core.http.jwks import KeyFetch, key_fetch
from actors.storage.local import LocalDirectoryStorage
from db.store import ExportStore
from tests.helpers import API
from tests.provider_server import serve_provider
from tests.servers import api_app
from tests.web.identity_helpers import Clock, IdentityProvider, refusal, verifier
from web.identity import JWKS_MAX_AGE_SECONDS, JWKS_MIN_REFRESH_SECONDS

MAX, MIN = 300.0, 30.0


@pytest.mark.parametrize(
    ("holds", "since", "in_flight", "expected"),
    [
        (True, 10.0, False, KeyFetch.NONE),  # fresh
        (True, MAX, False, KeyFetch.IN_BACKGROUND),  # stale: refresh, do not wait
        (True, MAX, True, KeyFetch.NONE),  # stale, but one fetch is running
        (True, None, False, KeyFetch.IN_BACKGROUND),  # held, never fetched (cannot be)
        (False, None, False, KeyFetch.START_AND_WAIT),  # the first token
        (False, 10.0, True, KeyFetch.JOIN),  # unknown kid, a fetch runs: wait for it
        (False, 10.0, False, KeyFetch.NONE),  # unknown kid, fetched 10 s ago: refuse
        (False, MIN, False, KeyFetch.START_AND_WAIT),  # the interval has passed
    ],
)
def test_who_fetches_and_who_waits(
    holds: bool, since: float | None, in_flight: bool, expected: KeyFetch
) -> None:
    got = key_fetch(
        holds_key=holds, since_last_try=since, in_flight=in_flight, max_age=MAX, min_interval=MIN
    )
    assert got is expected


class GatedProvider(IdentityProvider):
    """An identity provider whose JWKS answers wait for :attr:`gate` while it is closed."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = trio.Event()
        self.gate.set()
        self.waiting = 0

    async def gated_jwks(self, request: httpx.Request) -> httpx.Response:
        self.waiting += 1
        try:
            await self.gate.wait()
        finally:
            self.waiting -= 1
        return self.jwks(request)


@pytest.fixture
async def gated() -> AsyncIterator[tuple[GatedProvider, str]]:
    provider = GatedProvider()
    provider.new_key("k1")
    async with serve_provider(provider.gated_jwks) as url:
        yield provider, url + "/.well-known/jwks.json"


async def wait_until(condition: object, what: str) -> None:
    with trio.fail_after(10):
        while not condition():  # type: ignore[operator]
            await trio.sleep(0.01)
    assert condition(), what  # type: ignore[operator]


async def test_a_known_key_never_waits_for_a_fetch_and_junk_kids_share_one(
    gated: tuple[GatedProvider, str],
) -> None:
    provider, url = gated
    clock = Clock()
    health = HealthBoard()
    tokens = verifier(url, clock)
    assert tokens.jwks is not None
    good = provider.token("k1")
    async with trio.open_nursery() as nursery:
        await nursery.start(tokens.run, health)
        await wait_until(lambda: tokens.jwks.key("k1") is not None, "fetched at start")
        assert health.get(Component.IDENTITY).up and provider.requests == 1

        # The set grows old and the provider becomes slow: the next fetch hangs.
        provider.gate = trio.Event()
        clock.now += JWKS_MAX_AGE_SECONDS
        await tokens.prepare(good)  # returns at once: the key is held
        await wait_until(lambda: provider.waiting == 1, "a background fetch is in flight")
        assert tokens.verify(good)[0].user_id == 300

        # Junk tokens with kids never seen all wait for the one fetch in flight ...
        junk = []
        for n in range(20):
            provider.new_key(f"junk-{n}", publish=False)
            junk.append(provider.token(f"junk-{n}"))
        finished: list[str] = []

        async def junk_request(token: str) -> None:
            await tokens.prepare(token)
            finished.append(refusal(lambda: tokens.verify(token)))

        for token in junk:
            nursery.start_soon(junk_request, token)
        await trio.testing.wait_all_tasks_blocked()
        # ... while requests with the known key still go straight through.
        with trio.fail_after(5):  # no wait at all is expected; this bounds a regression
            for _ in range(50):
                await tokens.prepare(good)
                assert tokens.verify(good)[0].user_id == 300
        assert finished == [] and provider.waiting == 1

        provider.gate.set()
        await wait_until(lambda: len(finished) == len(junk), "every junk token answered")
        assert set(finished) == {
            m for m in finished if "does not publish" in m
        }  # refused as unknown keys
        assert tokens.jwks.fetches == 2 and provider.requests == 2  # one fetch served all

        # Fresh junk within the interval starts no fetch at all.
        provider.new_key("junk-late", publish=False)
        await tokens.prepare(provider.token("junk-late"))
        assert tokens.jwks.fetches == 2
        nursery.cancel_scope.cancel()


async def test_an_unreachable_provider_is_a_degraded_component_and_a_503_not_a_crash(
    gated: tuple[GatedProvider, str],
) -> None:
    provider, url = gated
    provider.down = True
    clock = Clock()
    health = HealthBoard()
    tokens = verifier(url, clock)
    assert tokens.jwks is not None
    token = provider.token("k1")
    async with trio.open_nursery() as nursery:
        await nursery.start(tokens.run, health)  # starts although the provider is down
        await wait_until(lambda: tokens.jwks.failure is not None, "the first fetch failed")
        seen = health.get(Component.IDENTITY)
        assert not seen.up and "503" in seen.detail and url in seen.detail
        await tokens.prepare(token)
        with pytest.raises(Exception) as caught:
            tokens.verify(token)
        assert getattr(caught.value, "http_status", None) == 503
        assert "identity provider's keys could not be fetched" in str(caught.value)

        # The provider comes back: the next try after the interval fetches, and the
        # component is up again.
        provider.down = False
        clock.now += JWKS_MIN_REFRESH_SECONDS
        await tokens.prepare(token)
        assert tokens.verify(token)[0].user_id == 300
        assert health.get(Component.IDENTITY).up
        nursery.cancel_scope.cancel()


async def test_the_api_answers_503_with_retry_after_while_the_provider_is_down(
    gated: tuple[GatedProvider, str], store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    provider, url = gated
    provider.down = True
    app, deps = api_app(store, storage)
    deps.tokens = verifier(url)
    async with app.test_app() as running:  # before_serving: the key set's reader starts
        client = running.test_client()
        await wait_until(lambda: deps.tokens.jwks.failure is not None, "the start-up fetch")
        answer = await client.get(API, headers={"Authorization": f"Bearer {provider.token('k1')}"})
        body = await answer.get_json()
        assert answer.status_code == 503 and body["code"] == "503"
        assert answer.headers["Retry-After"] == "5"
        details = await (await client.get("/healthz/details")).get_json()
        assert details["components"]["identity"]["status"] == "down"
        assert details["status"] == "degraded"
