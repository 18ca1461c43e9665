"""The session cookie and its CSRF token over real HTTP (web/session.py, web/auth.py).

Sign in with a JWT, then call the API with the cookie alone: reads pass, state-changing
requests (create, cancel, retry, sign-out) need ``X-CSRF-Token`` equal to the CSRF cookie
and valid for that session. The bearer header still wins when present. The JWT never
appears in a log.
"""

from __future__ import annotations

import logging
import time

import httpx
import jwt
import pytest

from actors.core.http.session import CookieSecure
from actors.core.models import TaskStatus
from actors.core.principal import AppCode
from actors.storage.keys import new_object_key
from actors.storage.local import LocalDirectoryStorage
from db.store import ExportStore
from tests.helpers import API, claim, complete, create
from tests.servers import API_SECRET, api_app, headers, served
from web.auth import CSRF_COOKIE, NO_CREDENTIAL_MESSAGE, SESSION_COOKIE, issue_token

SESSION = "/api/platform/v1/session"
CSRF_REFUSED = {"code": "403", "message": "CSRF token missing or invalid", "data": None}


def token_of(user: int = 7, ttl: int = 3600, **kw: object) -> str:
    return issue_token(
        API_SECRET,
        user_id=user,
        tenant_id=0,
        app_code=AppCode.PLATFORM,
        perms=("platform:customer:export",),
        ttl_seconds=ttl,
        **kw,  # type: ignore[arg-type]
    )


async def sign_in(client: httpx.AsyncClient, token: str) -> httpx.Response:
    return await client.post(SESSION, json={"token": token})


@pytest.fixture
async def url(store: ExportStore, storage: LocalDirectoryStorage):  # type: ignore[no-untyped-def]
    app, _ = api_app(store, storage)
    async with served(app) as base:
        yield base


def flip_last(token: str) -> str:
    """``token`` with its last hex digit changed."""
    return token[:-1] + ("1" if token[-1] == "0" else "0")


def client(url: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=url, timeout=10)


async def test_sign_in_sets_both_cookies_and_answers_the_session(url: str) -> None:
    token = token_of(ttl=3600)
    async with client(url) as c:
        response = await sign_in(c, token)
        body = response.json()
        assert response.status_code == 200 and body["code"] == "200", body
        data = body["data"]
        assert data["userId"] == "7" and data["tenantId"] == "0"
        assert data["appCode"] == "PLATFORM" and data["perms"] == ["platform:customer:export"]
        assert data["expiresAt"].endswith("+00:00")
        assert data["csrfToken"] == c.cookies[CSRF_COOKIE]
        assert c.cookies[SESSION_COOKIE] == token
        cookies = {h.split("=", 1)[0]: h for h in response.headers.get_list("set-cookie")}
        session_cookie, csrf_cookie = cookies[SESSION_COOKIE], cookies[CSRF_COOKIE]
        for header in (session_cookie, csrf_cookie):
            assert "SameSite=Strict" in header and "Path=/" in header
            assert "Secure" not in header  # plain HTTP here; Secure when the request is https
            max_age = int(header.split("Max-Age=")[1].split(";")[0])
            assert 3590 <= max_age <= 3600  # the token's remaining lifetime
        assert "HttpOnly" in session_cookie and "HttpOnly" not in csrf_cookie
        assert response.headers["Cache-Control"] == "no-store"

        who = (await c.get(SESSION)).json()
        assert who["code"] == "200" and who["data"] == data  # the CSRF cookie is kept


@pytest.mark.parametrize(
    ("body", "content_type", "status", "code"),
    [
        (b'{"token": "not-a-jwt"}', "application/json", 401, "401"),
        (b'{"token": ""}', "application/json", 200, "400"),
        (b'{"token": 5}', "application/json", 200, "400"),
        (b"{}", "application/json", 200, "400"),
        (b"[]", "application/json", 200, "400"),
        (b'{"token": "x"}', "text/plain", 200, "400"),  # what a cross-site form can send
        (b"token=x", "application/x-www-form-urlencoded", 200, "400"),
    ],
)
async def test_a_bad_sign_in_sets_no_cookie(
    url: str, body: bytes, content_type: str, status: int, code: str
) -> None:
    async with client(url) as c:
        response = await c.post(SESSION, content=body, headers={"Content-Type": content_type})
        assert (response.status_code, response.json()["code"]) == (status, code)
        assert "set-cookie" not in response.headers


async def test_an_expired_token_cannot_sign_in(url: str) -> None:
    async with client(url) as c:
        expired = token_of(now=time.time() - 7200, ttl=3600)
        response = await sign_in(c, expired)
        assert response.status_code == 401 and response.json()["message"] == "token expired"
        assert not c.cookies


async def test_a_token_expiring_after_the_year_9999_is_refused_not_a_500(url: str) -> None:
    """Issue 24 item 3: a validly signed token whose exp lies past 9999 made both session
    routes answer 500 (a date that cannot be shown). It is an invalid token: 401."""
    far = jwt.encode(
        {"sub": "7", "tenant_id": "0", "app_code": "PLATFORM", "exp": 10**12},
        API_SECRET,
        algorithm="HS256",
    )
    async with client(url) as c:
        for response in (
            await sign_in(c, far),
            await c.get(SESSION, headers={"Authorization": f"Bearer {far}"}),
            await c.get(API, headers={"Authorization": f"Bearer {far}"}),
        ):
            assert response.status_code == 401, response.text
            assert response.json()["message"].startswith("invalid token claims: exp must be")
        assert not c.cookies


async def test_no_session_is_401(url: str) -> None:
    async with client(url) as c:
        for response in (await c.get(SESSION), await c.get(API)):
            assert response.status_code == 401 and response.json()["code"] == "401"
            # Both ways in are named: a page user has no bearer token to "miss".
            assert response.json()["message"] == NO_CREDENTIAL_MESSAGE


async def test_a_token_in_the_url_is_never_taken(url: str) -> None:
    token = token_of()
    async with client(url) as c:
        signed = await c.post(SESSION, params={"token": token}, json={})
        assert signed.json()["code"] == "400" and not c.cookies
        for path in (SESSION, API, "/api/platform/v1/files/export-types"):
            response = await c.get(path, params={"token": token, "access_token": token})
            assert response.status_code == 401, path


async def test_the_cookie_reads_but_writes_only_with_the_csrf_token(
    url: str, store: ExportStore
) -> None:
    async with client(url) as c:
        csrf = (await sign_in(c, token_of())).json()["data"]["csrfToken"]
        listed = (await c.get(API)).json()
        assert listed["code"] == "200" and listed["data"]["items"] == []

        body = {"exportType": "CUSTOMER_LIST", "taskName": "mine", "parameters": {}}
        refused = await c.post(API, json=body)
        assert refused.status_code == 403 and refused.json() == CSRF_REFUSED
        wrong = await c.post(API, json=body, headers={"X-CSRF-Token": flip_last(csrf)})
        assert wrong.status_code == 403 and wrong.json() == CSRF_REFUSED
        assert (await c.get(API)).json()["data"]["items"] == []  # nothing was created

        created = (await c.post(API, json=body, headers={"X-CSRF-Token": csrf})).json()
        assert created["code"] == "200", created
        assert created["data"]["taskName"] == "mine"


async def test_a_csrf_token_of_another_session_is_refused(url: str) -> None:
    async with client(url) as a, client(url) as b:
        csrf_a = (await sign_in(a, token_of(7))).json()["data"]["csrfToken"]
        await sign_in(b, token_of(8))
        # b's own cookie sent with a's token in both the cookie and the header.
        b.cookies.set(CSRF_COOKIE, csrf_a)
        response = await b.post(
            API,
            json={"exportType": "CUSTOMER_LIST", "taskName": "x", "parameters": {}},
            headers={"X-CSRF-Token": csrf_a},
        )
        assert response.status_code == 403 and response.json() == CSRF_REFUSED


async def test_the_bearer_header_wins_over_the_cookie(url: str) -> None:
    async with client(url) as c:
        await sign_in(c, token_of(7))
        who = (await c.get(SESSION, headers=headers(user=9))).json()["data"]
        assert who["userId"] == "9" and who["csrfToken"] is None
        # With the header, no CSRF token is needed, cookie or not.
        created = await c.post(
            API,
            json={"exportType": "CUSTOMER_LIST", "taskName": "by header", "parameters": {}},
            headers=headers(user=9),
        )
        assert created.json()["code"] == "200"
        bad_header = await c.get(API, headers={"Authorization": "Bearer junk"})
        assert bad_header.status_code == 401  # no fall-back to the cookie


async def test_cancel_retry_and_download_honour_the_session(
    url: str, store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    pending = await create(store)
    async with client(url) as c:
        csrf = (await sign_in(c, token_of(7))).json()["data"]["csrfToken"]
        with_csrf = {"X-CSRF-Token": csrf}

        refused = await c.post(f"{API}/{pending.id}/cancel")
        assert refused.status_code == 403 and refused.json() == CSRF_REFUSED
        assert (await store.get_task(pending.id)).status == TaskStatus.PENDING  # type: ignore[union-attr]
        cancelled = (await c.post(f"{API}/{pending.id}/cancel", headers=with_csrf)).json()
        assert cancelled["data"]["status"] == "CANCELLED"

        refused = await c.post(f"{API}/{pending.id}/retry")
        assert refused.status_code == 403 and refused.json() == CSRF_REFUSED
        assert (await store.get_task(pending.id)).status == TaskStatus.CANCELLED  # type: ignore[union-attr]
        retried = (await c.post(f"{API}/{pending.id}/retry", headers=with_csrf)).json()
        assert retried["code"] == "200" and retried["data"]["status"] == "PENDING"

        done = await claim(store, await create(store, params={"n": "done"}))
        key = new_object_key(done.id)
        f = await storage.create(key)
        f.write(b"xlsx bytes")
        f.close()
        assert await complete(
            store,
            done,
            file_name="done.xlsx",
            object_key=key,
            content_type="application/octet-stream",
            size_bytes=10,
        )
        download = await c.get(f"{API}/{done.id}/download")  # a GET: the cookie alone
        assert download.status_code == 200 and download.content == b"xlsx bytes"


async def test_sign_out_needs_the_csrf_token_and_clears_both_cookies(url: str) -> None:
    async with client(url) as c:
        csrf = (await sign_in(c, token_of())).json()["data"]["csrfToken"]
        refused = await c.delete(SESSION)
        assert refused.status_code == 403 and refused.json() == CSRF_REFUSED
        response = await c.delete(SESSION, headers={"X-CSRF-Token": csrf})
        assert response.json()["code"] == "200"
        cleared = response.headers.get_list("set-cookie")
        assert {h.split("=", 1)[0] for h in cleared} == {SESSION_COOKIE, CSRF_COOKIE}
        assert all("Max-Age=0" in h or "expires=Thu, 01 Jan 1970" in h for h in cleared)
        assert not c.cookies
        assert (await c.get(SESSION)).status_code == 401
        # Signing out without a session is not an error.
        assert (await c.delete(SESSION)).json()["code"] == "200"


async def test_the_token_never_reaches_the_log(url: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    token = token_of()
    async with client(url) as c:
        csrf = (await sign_in(c, token)).json()["data"]["csrfToken"]
        await c.get(SESSION)
        await c.get(API)
        await c.post(API, json={"exportType": "NOPE", "taskName": "x", "parameters": {}})
        await c.post(
            API,
            json={"exportType": "CUSTOMER_LIST", "taskName": "x", "parameters": {}},
            headers={"X-CSRF-Token": csrf},
        )
        await c.delete(SESSION, headers={"X-CSRF-Token": csrf})
        await sign_in(c, token + "tampered")
    # The service's records (the test's own HTTP client logs the headers it receives).
    server_side = [
        r.getMessage() + (r.exc_text or "")
        for r in caplog.records
        if not r.name.startswith(("httpx", "httpcore"))
    ]
    assert server_side  # the service did log
    text = "\n".join(server_side)
    assert token not in text and token.split(".")[2] not in text


async def test_over_https_both_cookies_are_secure(
    store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    # A TLS server is not part of the test setup: the app is called as if over https.
    app, _ = api_app(store, storage)
    response = await app.test_client().post(SESSION, json={"token": token_of()}, scheme="https")
    cookies = response.headers.getlist("Set-Cookie")
    assert len(cookies) == 2 and all("Secure" in c for c in cookies)


async def test_cookie_secure_always_behind_a_tls_terminating_proxy(
    store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    """FILE_EXPORT_COOKIE_SECURE=always: the proxy spoke https to the browser and plain
    http to the service, and the cookies still carry Secure (real HTTP, plain)."""
    app, services = api_app(store, storage)
    services.cookie_secure = CookieSecure.ALWAYS
    async with served(app) as base, client(base) as c:
        response = await sign_in(c, token_of())
    cookies = response.headers.get_list("set-cookie")
    assert response.status_code == 200 and len(cookies) == 2
    assert all("Secure" in header for header in cookies), cookies


async def test_cookie_secure_never_leaves_it_off_even_over_https(
    store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    app, services = api_app(store, storage)
    services.cookie_secure = CookieSecure.NEVER
    response = await app.test_client().post(SESSION, json={"token": token_of()}, scheme="https")
    cookies = response.headers.getlist("Set-Cookie")
    assert len(cookies) == 2 and not any("Secure" in c for c in cookies)
