"""The decisions of the page's company sign-in (``actors/core/http/oidc.py``), by table."""

from __future__ import annotations

from typing import Any

import pytest

from actors.core.http.oidc import (
    LoginState,
    SignInProblem,
    callback_problem,
    id_token_problem,
    return_path,
)

SAVED = LoginState(state="st-1", nonce="n-1", verifier="v" * 64, return_to="/?page=2")


@pytest.mark.parametrize(
    ("wanted", "kept"),
    [
        ("/?status=FAILED&page=2", "/?status=FAILED&page=2"),
        ("/", "/"),
        (None, "/"),
        ("", "/"),
        ("https://evil.example/", "/"),  # another site
        ("//evil.example/", "/"),  # scheme-relative: another host to a browser
        ("/\\evil.example/", "/"),  # browsers read a backslash as a slash
        ("/a\\b", "/"),
        ("/\r\nSet-Cookie: x=1", "/"),  # a header injection
        ("javascript:alert(1)", "/"),
        ("/" + "a" * 2000, "/"),  # too long to keep
    ],
)
def test_a_sign_in_comes_back_only_to_a_path_of_this_origin(wanted: str | None, kept: str) -> None:
    assert return_path(wanted) == kept


@pytest.mark.parametrize(
    ("query", "saved", "problem"),
    [
        ({"code": "c", "state": "st-1"}, SAVED, None),
        ({"error": "access_denied", "state": "st-1"}, SAVED, SignInProblem.REFUSED),
        ({"error": "access_denied"}, None, SignInProblem.REFUSED),  # the answer first
        ({"code": "c", "state": "st-1"}, None, SignInProblem.NOT_STARTED),
        ({"code": "c", "state": "forged"}, SAVED, SignInProblem.STATE),
        ({"code": "c"}, SAVED, SignInProblem.STATE),
        ({"state": "st-1"}, SAVED, SignInProblem.CODE),
        ({"code": "", "state": "st-1"}, SAVED, SignInProblem.CODE),
    ],
)
def test_the_providers_answer_is_taken_only_for_this_browsers_sign_in(
    query: dict[str, str], saved: LoginState | None, problem: SignInProblem | None
) -> None:
    assert callback_problem(query, saved) is problem


@pytest.mark.parametrize(
    ("claims", "problem"),
    [
        ({"aud": "ec", "nonce": "n-1"}, None),
        ({"aud": ["ec"], "nonce": "n-1"}, None),
        ({"aud": ["ec", "other"], "azp": "ec", "nonce": "n-1"}, None),
        ({"aud": ["ec", "other"], "nonce": "n-1"}, "azp"),
        ({"aud": "other", "nonce": "n-1"}, "not issued to this client"),
        ({"nonce": "n-1"}, "not issued to this client"),
        ({"aud": "ec", "nonce": "n-2"}, "nonce"),
        ({"aud": "ec"}, "nonce"),
    ],
)
def test_an_id_token_must_be_this_sign_ins_and_this_clients(
    claims: dict[str, Any], problem: str | None
) -> None:
    found = id_token_problem(claims, "n-1", "ec")
    assert (found is None) if problem is None else (found is not None and problem in found)


@pytest.mark.parametrize(
    "payload",
    [None, [], {}, {"s": "a", "n": "b", "v": "c"}, {"s": "a", "n": "b", "v": "c", "r": 5}],
)
def test_a_login_cookie_that_is_not_one_is_no_sign_in(payload: Any) -> None:
    assert LoginState.from_json(payload) is None


def test_a_login_cookie_round_trips_and_its_path_is_checked_again() -> None:
    assert LoginState.from_json(SAVED.to_json()) == SAVED
    hostile = {**SAVED.to_json(), "r": "//evil.example"}
    assert LoginState.from_json(hostile) == LoginState("st-1", "n-1", "v" * 64, "/")
