"""``export-center token`` signs with the server's secret or refuses (issue 26 item 9):
run where the data directory has no dev secret, it used to make one silently, and the
server refused every token signed with it."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from actors.cli.main import main
from actors.credentials import dev_secret_path
from actors.plumbing.config_loading import load_settings
from web.auth import principal_from_token

ARGS = ["token", "--user", "42", "--tenant", "0", "--app", "PLATFORM"]


def run(tmp_path: Path, *extra: str, **env: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        main, [*ARGS, *extra], env={"FILE_EXPORT_DATA_DIR": str(tmp_path), **env}
    )
    return result.exit_code, result.stdout, result.stderr


def test_without_a_dev_secret_it_refuses_and_makes_none(tmp_path: Path) -> None:
    code, out, err = run(tmp_path)
    assert code == 1 and out == ""
    assert "no dev secret in" in err and "--new-secret" in err
    assert not dev_secret_path(load_settings(data_dir=tmp_path)).exists()


def test_with_the_server_s_dev_secret_it_signs_and_says_which(tmp_path: Path) -> None:
    code, _, _ = run(tmp_path, "--new-secret")
    assert code == 0
    secret = dev_secret_path(load_settings(data_dir=tmp_path)).read_text().strip()
    code, out, err = run(tmp_path)
    assert code == 0 and "signed with the dev secret in" in err
    assert principal_from_token(secret, out.strip())[0].user_id == 42


def test_with_the_shared_secret_it_signs_with_it(tmp_path: Path) -> None:
    secret = "s" * 32
    code, out, err = run(tmp_path, FILE_EXPORT_JWT_SECRET=secret)
    assert code == 0 and err.strip() == "signed with FILE_EXPORT_JWT_SECRET"
    assert principal_from_token(secret, out.strip())[0].user_id == 42
