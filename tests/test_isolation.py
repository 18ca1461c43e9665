"""Tests do not leak into each other, and the caller's environment does not reach them
(``tests/isolation.py``, wired in ``tests/conftest.py``; issue 22 item 7).

The first three tests are probes, true on their own; the last one runs them in a fresh
pytest, in this order, with a stray ``FILE_EXPORT_…`` variable and a settings variable
of another family in its environment. Without the fixtures of ``tests/conftest.py`` the
second fails (the first leaves the root logger configured) and so does the third.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from actors.plumbing.config import Settings
from actors.plumbing.logs import LIBRARY_LOGGERS, configure_logging
from tests.helpers import REPO, make_settings
from tests.isolation import settings_variables, stray_settings


def test_probe_a_command_configures_logging_for_the_process() -> None:
    """What ``export-center migrate`` (and every command) does in-process."""
    configure_logging("INFO")
    assert any(getattr(h, "_export_center", False) for h in logging.getLogger().handlers)


def test_probe_the_next_test_finds_logging_as_the_session_set_it() -> None:
    root = logging.getLogger()
    assert not any(getattr(h, "_export_center", False) for h in root.handlers)
    assert root.level == logging.WARNING  # the standard library's default; pytest sets none
    assert logging.getLogger(LIBRARY_LOGGERS[0]).level == logging.NOTSET


def test_probe_settings_come_from_the_test_alone(tmp_path: Path) -> None:
    assert stray_settings() == []
    settings = make_settings(tmp_path)
    assert settings.max_active_per_user == Settings.model_fields["max_active_per_user"].default
    assert settings.mq_topic_prefix is None


def test_no_test_inherits_logging_or_settings_from_the_one_before(tmp_path: Path) -> None:
    probes = [
        f"{__file__}::test_probe_a_command_configures_logging_for_the_process",
        f"{__file__}::test_probe_the_next_test_finds_logging_as_the_session_set_it",
        f"{__file__}::test_probe_settings_come_from_the_test_alone",
    ]
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"},
        "FILE_EXPORT_MAX_ACTIVE_TASKS_PER_USER": "1",
        "mq_topic_prefix": "stray-",  # Settings matches names case-insensitively
    }
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
        + ["--basetemp", str(tmp_path / "inner"), *probes],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "3 passed" in run.stdout


def test_every_settings_variable_is_named_from_the_model() -> None:
    names = settings_variables()
    assert {"FILE_EXPORT_DATA_DIR", "INTERNAL_SERVICE_TOKEN", "MQ_TOPIC_PREFIX"} <= names
    assert "ROCKETMQ_NAME_SERVER" in names
    assert len(names) == len(Settings.model_fields)  # one variable per setting
    assert not any(n.startswith("EXPORT_CENTER_TEST_") for n in names)
