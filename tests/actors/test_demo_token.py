"""The demo administrator's token of an embedded instance with the dev secret (issue 24
item 5): it is written to a file only its owner can read, never to the log, where every
credential-shaped value is masked anyway."""

from __future__ import annotations

import logging
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest

from actors.plumbing.config_loading import load_settings
from actors.runtime import DEMO_TOKEN_FILE, _announce
from web.auth import principal_from_token

SECRET = "s" * 32


def test_the_token_goes_to_a_private_file_and_the_log_says_where(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = load_settings(data_dir=tmp_path)
    rt = SimpleNamespace(base_url="http://127.0.0.1:8080", slots=[], jwt_secret=SECRET)
    with caplog.at_level(logging.INFO, logger="actors.runtime"):
        _announce(settings, rt, True)  # type: ignore[arg-type]
    path = tmp_path / DEMO_TOKEN_FILE
    token = path.read_text().strip()
    principal, _ = principal_from_token(SECRET, token)
    assert principal.user_id == 1
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert token not in text and str(path) in text


def test_without_the_dev_secret_no_token_is_written(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path)
    rt = SimpleNamespace(base_url="http://127.0.0.1:8080", slots=[], jwt_secret=SECRET)
    _announce(settings, rt, False)  # type: ignore[arg-type]
    assert not (tmp_path / DEMO_TOKEN_FILE).exists()
