"""Company sign-in over real HTTP against a real OpenID Provider (``tests/oidc_provider.py``:
oidc-provider with a login form): the authorization code flow with PKCE from
``GET /auth/login`` to the session cookie, and every way it must refuse — a wrong
password, a person who chooses not to sign in, a tampered ``state``, a code used twice,
an account without the claims this service needs, an expired session — and sign-out,
which ends the provider's session too. The page's side, in Chromium, is
``test_page_oidc.py``'s."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit, urlunsplit

import httpx
import pytest
import trio

from actors.plumbing.config import Settings
from tests.helpers import running_service
from tests.oidc_provider import (
    ALICE,
    CLIENT_ID,
    NOBODY,
    free_port,
    oidc_settings,
    openid_provider,
)
from web.auth import CSRF_COOKIE, CSRF_HEADER, SESSION_COOKIE
from web.sign_in import LOGIN_COOKIE

SESSION = "/api/platform/v1/session"


@dataclass
class Visit:
    """Where a browser went, hop by hop, and where it stopped."""

    urls: list[str] = field(default_factory=list)
    last: httpx.Response | None = None


async def follow(c: httpx.AsyncClient, url: str, visit: Visit, **kwargs: Any) -> httpx.Response:
    """Request ``url`` and follow redirects as a browser does, recording each hop; stops
    at the first answer that is not a redirect."""
    answer = await c.request(kwargs.pop("method", "GET"), url, **kwargs)
    visit.urls.append(str(answer.url))
    while answer.is_redirect:
        target = str(answer.url.join(answer.headers["Location"]))
        answer = await c.get(target)
        visit.urls.append(str(answer.url))
    visit.last = answer
    return answer


async def sign_in(
    c: httpx.AsyncClient,
    service: str,
    login: str,
    password: str,
    visit: Visit,
    *,
    stop_at_callback: bool = False,
    next_path: str = "/?status=FAILED",
) -> httpx.Response:
    """Start at the page's sign-in, fill the provider's login form, and follow on. With
    ``stop_at_callback``, the provider's redirect to the callback is returned unfollowed."""
    form = await follow(c, f"{service}/auth/login", visit, params={"next": next_path})
    action = re.search(r'action="(/interaction/[^"]+/login)"', form.text)
    assert action, form.text
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(str(form.url)))
    answer = await c.post(origin + action.group(1), data={"login": login, "password": password})
    visit.urls.append(str(answer.url))
    while answer.is_redirect:
        target = str(answer.url.join(answer.headers["Location"]))
        if stop_at_callback and target.startswith(f"{service}/auth/callback"):
            visit.urls.append(target)
            return answer
        answer = await c.get(target)
        visit.urls.append(str(answer.url))
    visit.last = answer
    return answer


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[tuple[str, str, Settings]]:
    port = free_port()
    service = f"http://127.0.0.1:{port}"
    async with openid_provider(tmp_path, service) as issuer:
        yield service, issuer, oidc_settings(tmp_path, port, issuer)


async def test_signing_in_at_the_provider_starts_a_session_and_returns_to_the_page(
    world: tuple[str, str, Settings],
) -> None:
    service, issuer, settings = world
    async with running_service(settings), httpx.AsyncClient(timeout=30) as c:
        options = (await c.get(f"{service}/auth/options")).json()
        visit = Visit()
        done = await sign_in(c, service, ALICE.login, ALICE.password, visit)
        session = (await c.get(f"{service}{SESSION}")).json()
    assert options == {"oidc": True, "name": "Test company"}
    # To the provider with PKCE (S256), a state and a nonce; back through the callback.
    authorize = parse_qs(urlsplit(visit.urls[0]).query)
    assert visit.urls[0].startswith(f"{service}/auth/login")
    first_hop = parse_qs(urlsplit(visit.urls[1]).query)
    assert authorize["next"] == ["/?status=FAILED"]
    assert first_hop["code_challenge_method"] == ["S256"] and first_hop["code_challenge"]
    assert first_hop["state"] and first_hop["nonce"] and first_hop["client_id"] == [CLIENT_ID]
    assert any(u.startswith(f"{service}/auth/callback?") for u in visit.urls)
    # The callback's page moves on to the page the sign-in started from, on this site.
    assert done.status_code == 200 and 'url=/?status=FAILED"' in done.text, done.text
    assert session["code"] == "200", session
    assert session["data"]["userId"] == str(ALICE.user_id)
    assert session["data"]["name"] == ALICE.name
    assert session["data"]["perms"] == list(ALICE.perms)
    cookie = c.cookies.get(SESSION_COOKIE)
    assert cookie is not None and cookie.count(".") == 2  # the provider's ID token
    assert c.cookies.get(LOGIN_COOKIE) is None  # the sign-in's own cookie is gone


async def test_a_wrong_password_is_refused_by_the_provider_and_starts_no_session(
    world: tuple[str, str, Settings],
) -> None:
    service, _, settings = world
    async with running_service(settings), httpx.AsyncClient(timeout=30) as c:
        answer = await sign_in(c, service, ALICE.login, "not-the-password", Visit())
        session = await c.get(f"{service}{SESSION}")
    assert "Wrong username or password" in answer.text
    assert session.status_code == 401 and c.cookies.get(SESSION_COOKIE) is None


async def test_choosing_not_to_sign_in_comes_back_to_the_page_saying_so(
    world: tuple[str, str, Settings],
) -> None:
    service, _, settings = world
    async with running_service(settings), httpx.AsyncClient(timeout=30) as c:
        form = await follow(c, f"{service}/auth/login", Visit(), params={"next": "/?page=2"})
        abort = re.search(r'action="(/interaction/[^"]+/abort)"', form.text)
        assert abort
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(str(form.url)))
        visit = Visit()
        await follow(c, origin + abort.group(1), visit, method="POST")
    assert visit.urls[-1] == f"{service}/?page=2&signInProblem=refused", visit.urls
    assert c.cookies.get(SESSION_COOKIE) is None


async def test_a_tampered_state_and_a_code_used_twice_are_refused(
    world: tuple[str, str, Settings],
) -> None:
    service, _, settings = world
    async with running_service(settings), httpx.AsyncClient(timeout=30) as c:
        # The provider's answer with another state: not this browser's sign-in.
        visit = Visit()
        answer = await sign_in(
            c, service, ALICE.login, ALICE.password, visit, stop_at_callback=True
        )
        callback = urlsplit(str(answer.url.join(answer.headers["Location"])))
        query = parse_qs(callback.query)
        forged = callback._replace(query=f"code={query['code'][0]}&state=forged-state")
        refused = await c.get(urlunsplit(forged))
        tampered = (
            refused.status_code,
            refused.headers.get("Location"),
            {cookie.name for cookie in c.cookies.jar},
        )

        # A sign-in that finished, then its callback sent again with its login cookie.
        c.cookies.clear()
        visit = Visit()
        answer = await sign_in(
            c, service, ALICE.login, ALICE.password, visit, stop_at_callback=True
        )
        login_cookie = c.cookies.get(LOGIN_COOKIE, path="/auth")
        callback_url = str(answer.url.join(answer.headers["Location"]))
        first = await c.get(callback_url)
        assert first.status_code == 200 and c.cookies.get(SESSION_COOKIE)
        c.cookies.clear()
        c.cookies.set(LOGIN_COOKIE, login_cookie or "", domain="127.0.0.1", path="/auth")
        again = await c.get(callback_url)
    assert tampered[0] == 302 and tampered[1] == "/?status=FAILED&signInProblem=state"
    assert SESSION_COOKIE not in tampered[2]
    assert again.status_code == 302
    assert again.headers["Location"] == "/?status=FAILED&signInProblem=code"
    assert c.cookies.get(SESSION_COOKIE) is None


async def test_an_account_without_the_claims_this_service_needs_is_refused(
    world: tuple[str, str, Settings],
) -> None:
    service, _, settings = world
    async with running_service(settings), httpx.AsyncClient(timeout=30) as c:
        visit = Visit()
        await sign_in(c, service, NOBODY.login, NOBODY.password, visit, next_path="/")
    assert visit.urls[-1] == f"{service}/?signInProblem=token", visit.urls
    assert c.cookies.get(SESSION_COOKIE) is None


async def test_the_session_ends_with_the_id_token_and_sign_out_ends_the_providers(
    tmp_path: Path,
) -> None:
    port = free_port()
    service = f"http://127.0.0.1:{port}"
    async with openid_provider(tmp_path, service, id_token_seconds=3) as issuer:
        settings = oidc_settings(tmp_path, port, issuer)
        async with running_service(settings), httpx.AsyncClient(timeout=30) as c:
            await sign_in(c, service, ALICE.login, ALICE.password, Visit())
            assert (await c.get(f"{service}{SESSION}")).status_code == 200
            with trio.fail_after(15):  # the ID token's life, and the clock's granularity
                while (await c.get(f"{service}{SESSION}")).status_code != 401:
                    await trio.sleep(0.2)
            expired = (await c.get(f"{service}{SESSION}")).json()

            # Signed in again — the provider still knows the person, so no password is
            # asked (single sign-on) — then out: the provider's session ends too.
            again = await follow(c, f"{service}/auth/login", Visit())
            assert again.status_code == 200 and 'url=/"' in again.text, again.text
            csrf = c.cookies.get(CSRF_COOKIE) or ""
            out = (await c.delete(f"{service}{SESSION}", headers={CSRF_HEADER: csrf})).json()
            url = out["data"]["signOutUrl"]
            visit = Visit()
            question = await follow(c, url, visit)
            # The provider's page submits its sign-out form by script (deploy/idp): as a
            # browser, post the form.
            action = re.search(r'<form[^>]*action="([^"]+)"', question.text)
            assert action, question.text
            fields = dict(
                re.findall(r'<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"', question.text)
            )
            await follow(
                c,
                str(question.url.join(action.group(1))),
                visit,
                method="POST",
                data={**fields, "logout": "yes"},
            )
            form = await follow(c, f"{service}/auth/login", Visit())
    # The cookie lives as long as the ID token: the client drops it, or the service
    # finds the token expired.
    assert expired["code"] == "401"
    assert expired["message"] == "token expired" or expired["message"].startswith("not signed in")
    assert url.startswith(f"{issuer}/session/end?id_token_hint=")
    assert visit.urls[-1] == f"{service}/", visit.urls
    assert c.cookies.get(SESSION_COOKIE) is None
    # Signed out at the provider: the next sign-in asks for the password again.
    assert 'name="password"' in form.text
