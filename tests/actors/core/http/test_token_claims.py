"""A token's claims read one way only (issue 24 items 3 and 6): the table of what is
accepted and what is refused, without IO."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from actors.core.http.token_claims import (
    MAX_EXP,
    MAX_ID,
    ClaimError,
    ClaimNames,
    duplicated_claims,
    parse_claims,
    parse_id,
)
from actors.core.principal import AppCode

GOOD = {
    "sub": "300",
    "tenant_id": "1",
    "app_code": "PLATFORM",
    "perms": ["a"],
    "exp": 2_000_000_000,
}


@pytest.mark.parametrize(
    ("value", "expected"),
    [("0", 0), ("300", 300), (300, 300), (0, 0), (str(MAX_ID), MAX_ID), (MAX_ID, MAX_ID)],
)
def test_canonical_ids_are_read(value: Any, expected: int) -> None:
    assert parse_id(value, "sub") == expected


@pytest.mark.parametrize(
    "value",
    [
        "٣٠٠",  # Arabic-Indic digits
        "３００",  # full-width digits
        "3_0_0",
        " 300",
        "300 ",
        "0300",
        "+300",
        "-1",
        "",
        "1e3",
        str(MAX_ID + 1),
        MAX_ID + 1,
        -1,
        True,
        False,
        1.9,
        1.0,
        None,
        [300],
        {"id": 300},
    ],
)
def test_every_other_spelling_of_an_id_is_refused(value: Any) -> None:
    with pytest.raises(ClaimError, match="^sub must be"):
        parse_id(value, "sub")


def test_good_claims_give_the_principal_and_the_expiry() -> None:
    principal, exp = parse_claims(GOOD)
    assert (principal.user_id, principal.tenant_id, principal.app_code) == (
        300,
        1,
        AppCode.PLATFORM,
    )
    assert principal.perms == frozenset({"a"}) and exp == 2_000_000_000


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tenant_id": True}, "tenant_id must be an id"),
        ({"tenant_id": 1.9}, "tenant_id must be an id"),
        ({"tenant_id": "1_0"}, "tenant_id must be an id"),
        ({"sub": "３００"}, "sub must be an id"),
        ({"app_code": "platform"}, "app_code must be one of PLATFORM, MERCHANT"),
        ({"app_code": ["PLATFORM"]}, "app_code must be one of"),
        ({"perms": "a b"}, "perms must be a list of strings"),
        ({"perms": ["a", 1]}, "perms must be a list of strings"),
        ({"exp": MAX_EXP + 1}, "exp must be a time no later than 9999-12-31"),
        ({"exp": 10**20}, "exp must be a time no later than"),
        ({"exp": float("inf")}, "exp must be a time"),
        ({"exp": float("nan")}, "exp must be a time"),
        ({"exp": True}, "exp must be a time"),
        ({"exp": "2000000000"}, "exp must be a time"),
        ({"name": 7}, "name must be a string"),
        ({"name": ["Li Lei"]}, "name must be a string"),
    ],
)
def test_malformed_claims_are_refused_naming_the_claim(
    change: dict[str, Any], message: str
) -> None:
    with pytest.raises(ClaimError, match=message):
        parse_claims({**GOOD, **change})


@pytest.mark.parametrize("missing", ["sub", "tenant_id", "app_code", "exp"])
def test_a_missing_claim_is_named(missing: str) -> None:
    claims = {k: v for k, v in GOOD.items() if k != missing}
    with pytest.raises(ClaimError, match=f"^the token has no {missing} claim$"):
        parse_claims(claims)


def test_absent_permissions_are_none_and_the_latest_expiry_is_accepted() -> None:
    claims = {k: v for k, v in GOOD.items() if k != "perms"}
    principal, exp = parse_claims({**claims, "exp": MAX_EXP})
    assert principal.perms == frozenset() and exp == MAX_EXP


def test_claim_names_follow_the_identity_provider() -> None:
    names = ClaimNames(user="uid", tenant="org", app="aud_app", perms="roles")
    claims = {"uid": 5, "org": "7", "aud_app": "MERCHANT", "roles": ["r"], "exp": 1}
    principal, _ = parse_claims(claims, names)
    assert (principal.user_id, principal.tenant_id, principal.perms) == (5, 7, frozenset({"r"}))
    with pytest.raises(ClaimError, match="the token has no uid claim"):
        parse_claims(GOOD, names)


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("Li Lei", "Li Lei"),
        ("  李雷  ", "李雷"),  # trimmed
        ("two\nlines", "two\\nlines"),  # one line: control characters escaped
        ("x" * 100, "x" * 64),  # cut to the column
        ("", None),
        ("   ", None),
        (None, None),
    ],
)
def test_the_optional_name_is_what_people_see(name: Any, shown: str | None) -> None:
    claims = {**GOOD, "name": name}
    assert parse_claims(claims)[0].name == shown
    assert parse_claims(GOOD)[0].name is None  # absent: the page shows the id


def _token(payload: str) -> str:
    """A compact JWT with this payload text (the signature is not read here)."""
    encoded = base64.urlsafe_b64encode(payload.encode()).rstrip(b"=").decode()
    return f"eyJhbGciOiJIUzI1NiJ9.{encoded}.c2ln"


@pytest.mark.parametrize(
    ("payload", "twice"),
    [
        ('{"sub": "1", "tenant_id": "0", "tenant_id": "7"}', ["tenant_id"]),
        ('{"sub": "1", "sub": "1"}', ["sub"]),  # even the same value: one spelling only
        ('{"perms": ["a"], "x": {"y": 1, "y": 2}}', ["y"]),  # at any depth
        ('{"sub": "1", "tenant_id": "0"}', []),
        ("not json", []),  # the token library refuses it
    ],
)
def test_a_claim_given_twice_is_found(payload: str, twice: list[str]) -> None:
    """Issue 35 item 8: ``tenant_id`` twice must not quietly read as the last one."""
    assert duplicated_claims(_token(payload)) == twice
    assert duplicated_claims("no-dots") == []
