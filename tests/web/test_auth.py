"""Bearer authentication (§12)."""

from __future__ import annotations

import jwt
import pytest

from actors.core.principal import AppCode
from web.auth import issue_token, principal_from_header
from web.errors import ApiError

SECRET = "auth-test-secret-" + "k" * 32


def test_round_trip_and_case_insensitive_scheme() -> None:
    token = issue_token(SECRET, user_id=5, tenant_id=9, app_code=AppCode.MERCHANT, perms=["a:b:c"])
    for scheme in ("Bearer", "bearer", "BEARER"):
        p = principal_from_header(SECRET, f"{scheme} {token}")
        assert (p.user_id, p.tenant_id, p.app_code, p.perms) == (
            5,
            9,
            AppCode.MERCHANT,
            frozenset({"a:b:c"}),
        )


@pytest.mark.parametrize(
    "claims",
    [
        {"sub": "5", "exp": 4_000_000_000, "app_code": "PLATFORM"},  # no tenant_id
        {"sub": "5", "exp": 4_000_000_000, "tenant_id": "0"},  # no app_code
        {"sub": str(2**70), "exp": 4_000_000_000, "tenant_id": "0", "app_code": "PLATFORM"},
        {"sub": "5", "exp": 4_000_000_000, "tenant_id": "-1", "app_code": "PLATFORM"},
        {"sub": "5", "exp": 1, "tenant_id": "0", "app_code": "PLATFORM"},  # expired
        {"sub": "5", "exp": 4_000_000_000, "tenant_id": "0", "app_code": "ROOT"},
    ],
)
def test_incomplete_or_hostile_claims_are_401(claims: dict) -> None:
    token = jwt.encode(claims, SECRET, algorithm="HS256")
    with pytest.raises(ApiError) as err:
        principal_from_header(SECRET, f"Bearer {token}")
    assert err.value.http_status == 401


@pytest.mark.parametrize("header", [None, "", "Basic abc", "Bearer ", "Bearer garbage"])
def test_missing_or_malformed_headers_are_401(header: str | None) -> None:
    with pytest.raises(ApiError) as err:
        principal_from_header(SECRET, header)
    assert err.value.http_status == 401


@pytest.mark.parametrize(
    ("token", "message"),
    [
        # bytes that are not UTF-8 in the header: PyJWT's text names the codec and offset
        ("abc.def.ghi", "invalid token: not a well-formed JWT (header.payload.signature)"),
        ("garbage", "invalid token: not a well-formed JWT (header.payload.signature)"),
        (
            jwt.encode({"sub": "5"}, "another-secret-" + "z" * 32, algorithm="HS256"),
            "invalid token: signature does not match",
        ),
        (
            jwt.encode({"sub": "5", "tenant_id": "0"}, SECRET, algorithm="HS256"),
            'invalid token: Token is missing the "exp" claim',
        ),
    ],
)
def test_a_refused_token_is_named_in_words_not_in_decoder_internals(
    token: str, message: str
) -> None:
    with pytest.raises(ApiError) as err:
        principal_from_header(SECRET, f"Bearer {token}")
    assert (err.value.http_status, err.value.message) == (401, message)


def test_a_signed_token_naming_a_claim_twice_is_401() -> None:
    """Issue 35 item 8: a payload with ``tenant_id`` twice is signed correctly, and PyJWT
    would read its last value; one claim must read one way only, so it is refused."""
    payload = (
        b'{"sub": "5", "exp": 4000000000, "app_code": "PLATFORM",'
        b' "tenant_id": "0", "tenant_id": "9"}'
    )
    token = jwt.api_jws.encode(payload, SECRET, algorithm="HS256")
    with pytest.raises(ApiError) as err:
        principal_from_header(SECRET, f"Bearer {token}")
    assert err.value.http_status == 401
    assert err.value.message == "invalid token claims: tenant_id is given twice"
