"""The page's settings in actors/plumbing/config.py: FILE_EXPORT_COOKIE_SECURE and
FILE_EXPORT_PROGRESS_POLL_SECONDS are read from the environment and checked at start."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.composition.tokens import build_token_verifier
from actors.core.admission import CreateLimits
from actors.core.errors import ConfigError
from actors.core.http.session import CookieSecure
from actors.plumbing.config_loading import load_settings


@pytest.mark.parametrize(
    ("raw", "mode"),
    [("auto", CookieSecure.AUTO), ("Always", CookieSecure.ALWAYS), (" never ", CookieSecure.NEVER)],
)
def test_cookie_secure_is_read(
    monkeypatch: pytest.MonkeyPatch, raw: str, mode: CookieSecure
) -> None:
    monkeypatch.setenv("FILE_EXPORT_COOKIE_SECURE", raw)
    assert load_settings().cookie_secure == mode


def test_cookie_secure_refuses_other_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FILE_EXPORT_COOKIE_SECURE", "yes")
    with pytest.raises(ConfigError, match="FILE_EXPORT_COOKIE_SECURE"):
        load_settings()


@pytest.mark.parametrize(("raw", "seconds"), [("0.25", 0.25), ("1", 1.0), ("60", 60.0)])
def test_progress_poll_is_read(monkeypatch: pytest.MonkeyPatch, raw: str, seconds: float) -> None:
    monkeypatch.setenv("FILE_EXPORT_PROGRESS_POLL_SECONDS", raw)
    assert load_settings().progress_poll_seconds == seconds


@pytest.mark.parametrize("raw", ["0", "-1", "60.5", "3600", "soon"])
def test_progress_poll_refuses_out_of_range(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("FILE_EXPORT_PROGRESS_POLL_SECONDS", raw)
    with pytest.raises(ConfigError, match="FILE_EXPORT_PROGRESS_POLL_SECONDS"):
        load_settings()


def test_create_limits_come_from_their_three_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The API's create and the CLI's manual retry are admitted against the same limits."""
    monkeypatch.setenv("FILE_EXPORT_MAX_ACTIVE_TASKS_PER_USER", "7")
    monkeypatch.setenv("FILE_EXPORT_MAX_ACTIVE_TASKS_PER_TYPE", "9")
    monkeypatch.setenv("FILE_EXPORT_TYPE_RESERVED_PLACES", "2")
    assert load_settings().create_limits == CreateLimits(
        max_active_per_user=7, max_active_per_type=9, type_reserved_places=2
    )


def test_identity_provider_settings_build_the_verifier_or_say_what_is_wrong(
    tmp_path: Path,
) -> None:
    """Issue 24 item 7: FILE_EXPORT_JWT_* become the API's token verifier."""
    secret = "s" * 32
    verifier = build_token_verifier(
        load_settings(
            data_dir=tmp_path,
            jwt_jwks_url="https://idp.test/jwks",
            jwt_issuer="https://idp.test/",
            jwt_claim_user="uid",
        ),
        secret,
    )
    assert verifier.uses_identity_provider and verifier.algorithms == ("RS256", "ES256")
    assert (verifier.issuer, verifier.claim_names.user) == ("https://idp.test/", "uid")
    assert build_token_verifier(load_settings(data_dir=tmp_path), secret).algorithms == ("HS256",)
    with pytest.raises(ConfigError, match="FILE_EXPORT_JWT_PUBLIC_KEY_FILE"):
        build_token_verifier(
            load_settings(data_dir=tmp_path, jwt_public_key_file=tmp_path / "missing.pem"),
            secret,
        )
    with pytest.raises(ConfigError, match="HS algorithms"):
        build_token_verifier(
            load_settings(
                data_dir=tmp_path, jwt_jwks_url="https://idp.test/jwks", jwt_algorithms="HS256"
            ),
            secret,
        )
    with pytest.raises(ConfigError, match="JWKS_URL and FILE_EXPORT_JWT_PUBLIC_KEY_FILE"):
        load_settings(
            data_dir=tmp_path,
            jwt_jwks_url="https://idp.test/jwks",
            jwt_public_key_file=tmp_path / "k.pem",
        )
