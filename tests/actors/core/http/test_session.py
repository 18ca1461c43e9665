"""The credential decision and the CSRF token (actors/core/http/session.py): table tests."""

from __future__ import annotations

import pytest

from actors.core.http.session import (
    CookieSecure,
    Credential,
    CredentialDecision,
    cookie_secure,
    csrf_key,
    csrf_token_valid,
    decide_credential,
    mint_csrf_token,
)

KEY = csrf_key("session-test-secret-" + "s" * 32)
SESSION = "header.payload.signature-of-session-a"
OTHER_SESSION = "header.payload.signature-of-session-b"
NOW = 1_800_000_000
GOOD = mint_csrf_token(KEY, SESSION, "nonce-a", NOW + 3600)
EXPIRED = mint_csrf_token(KEY, SESSION, "nonce-b", NOW - 1)
FOREIGN = mint_csrf_token(KEY, OTHER_SESSION, "nonce-c", NOW + 3600)
OTHER_KEY = mint_csrf_token(csrf_key("another-secret-" + "x" * 32), SESSION, "n", NOW + 3600)
BEARER = "Bearer some.jwt.value"

BEARER_WINS = CredentialDecision(Credential.BEARER)
SESSION_OK = CredentialDecision(Credential.SESSION)
SESSION_CSRF_REFUSED = CredentialDecision(Credential.SESSION, csrf_ok=False)


@pytest.mark.parametrize(
    ("method", "authorization", "session", "csrf_cookie", "csrf_header", "expected"),
    [
        # The header wins, with or without a cookie, and needs no CSRF token.
        ("POST", BEARER, None, None, None, BEARER_WINS),
        ("POST", BEARER, SESSION, None, None, BEARER_WINS),
        ("DELETE", BEARER, SESSION, GOOD, "wrong", BEARER_WINS),
        ("GET", BEARER, SESSION, None, None, BEARER_WINS),
        # Neither credential.
        ("GET", None, None, None, None, CredentialDecision(Credential.NONE)),
        ("POST", "", "", GOOD, GOOD, CredentialDecision(Credential.NONE)),
        # Cookie with a safe method: no token needed.
        ("GET", None, SESSION, None, None, SESSION_OK),
        ("HEAD", None, SESSION, None, None, SESSION_OK),
        ("get", None, SESSION, None, None, SESSION_OK),
        # Cookie with a state-changing method.
        ("POST", None, SESSION, GOOD, GOOD, SESSION_OK),
        ("DELETE", None, SESSION, GOOD, GOOD, SESSION_OK),
        ("POST", None, SESSION, None, None, SESSION_CSRF_REFUSED),  # no token at all
        ("POST", None, SESSION, GOOD, None, SESSION_CSRF_REFUSED),  # header missing
        ("POST", None, SESSION, None, GOOD, SESSION_CSRF_REFUSED),  # cookie missing
        ("POST", None, SESSION, GOOD, GOOD[:-1] + "x", SESSION_CSRF_REFUSED),  # header differs
        ("POST", None, SESSION, "junk", "junk", SESSION_CSRF_REFUSED),  # not a token
        ("POST", None, SESSION, EXPIRED, EXPIRED, SESSION_CSRF_REFUSED),  # expired
        ("POST", None, SESSION, FOREIGN, FOREIGN, SESSION_CSRF_REFUSED),  # other session
        ("POST", None, SESSION, OTHER_KEY, OTHER_KEY, SESSION_CSRF_REFUSED),  # other key
        ("PUT", None, SESSION, None, None, SESSION_CSRF_REFUSED),
        ("PATCH", None, SESSION, None, None, SESSION_CSRF_REFUSED),
        ("OPTIONS", None, SESSION, None, None, SESSION_CSRF_REFUSED),
    ],
)
def test_decide_credential(
    method: str,
    authorization: str | None,
    session: str | None,
    csrf_cookie: str | None,
    csrf_header: str | None,
    expected: CredentialDecision,
) -> None:
    got = decide_credential(
        method=method,
        authorization=authorization,
        session_cookie=session,
        csrf_cookie=csrf_cookie,
        csrf_header=csrf_header,
        key=KEY,
        now=NOW,
    )
    assert got == expected


@pytest.mark.parametrize(
    ("token", "session", "now", "valid"),
    [
        (GOOD, SESSION, NOW, True),
        (GOOD, SESSION, NOW + 3599, True),
        (GOOD, SESSION, NOW + 3600, False),  # expires at its expiry second
        (GOOD, OTHER_SESSION, NOW, False),
        (FOREIGN, SESSION, NOW, False),
        (EXPIRED, SESSION, NOW, False),
        (GOOD.replace("nonce-a", "nonce-z"), SESSION, NOW, False),  # nonce swapped
        (GOOD.replace(str(NOW + 3600), str(NOW + 99999)), SESSION, NOW, False),  # extended
        ("", SESSION, NOW, False),
        ("a.b", SESSION, NOW, False),
        ("a.b.c.d", SESSION, NOW, False),
        (".1.abc", SESSION, NOW, False),
        ("n.-1.abc", SESSION, NOW, False),
        ("n.9999999999999.abc", SESSION, NOW, False),
        ("ñ.1.abc", SESSION, NOW, False),
    ],
)
def test_csrf_token_valid(token: str, session: str, now: float, valid: bool) -> None:
    assert csrf_token_valid(KEY, session, token, now) is valid


@pytest.mark.parametrize("nonce", ["", "a.b", "ñ"])
def test_mint_refuses_nonces_that_would_break_the_format(nonce: str) -> None:
    with pytest.raises(ValueError):
        mint_csrf_token(KEY, SESSION, nonce, NOW)


def test_the_csrf_key_is_not_the_jwt_secret() -> None:
    assert KEY != ("session-test-secret-" + "s" * 32).encode()
    assert len(KEY) == 32


@pytest.mark.parametrize(
    ("mode", "scheme", "secure"),
    [
        (CookieSecure.AUTO, "https", True),
        (CookieSecure.AUTO, "HTTPS", True),
        (CookieSecure.AUTO, "http", False),  # behind a TLS-terminating proxy: set ALWAYS
        (CookieSecure.ALWAYS, "http", True),
        (CookieSecure.ALWAYS, "https", True),
        (CookieSecure.NEVER, "https", False),
        (CookieSecure.NEVER, "http", False),
    ],
)
def test_cookie_secure(mode: CookieSecure, scheme: str, secure: bool) -> None:
    assert cookie_secure(mode, scheme) is secure
