"""A test that hangs fails alone, after its timeout, and the session goes on
(``tests/trio_timeout.py``; pytest-timeout, ``timeout`` in ``pyproject.toml``).

The probes end at once unless ``EXPORT_CENTER_TEST_HANG=1``; the last test runs them in
a fresh pytest with it set and a 5 s timeout (the session's own set-up must fit in it on
a loaded machine): the trio probe and the sync probe each fail
with a timeout, and the trio test after them still runs (a timeout raised inside the trio
run loop used to leave it broken: every later trio test failed with "Attempted to call
run() from inside a run()").
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import trio

from tests.helpers import REPO

HANG = os.environ.get("EXPORT_CENTER_TEST_HANG") == "1"


async def test_probe_a_trio_test_that_hangs() -> None:
    if HANG:
        await trio.sleep_forever()


def test_probe_a_sync_test_that_hangs() -> None:
    if HANG:
        time.sleep(600)


async def test_probe_a_trio_test_after_them() -> None:
    await trio.sleep(0)


def test_a_hung_test_fails_alone_and_the_run_goes_on(tmp_path: Path) -> None:
    probes = [
        f"{__file__}::test_probe_a_trio_test_that_hangs",
        f"{__file__}::test_probe_a_sync_test_that_hangs",
        f"{__file__}::test_probe_a_trio_test_after_them",
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
        + ["--timeout=5", "--basetemp", str(tmp_path / "inner"), *probes],
        cwd=REPO,
        env={**env, "EXPORT_CENTER_TEST_HANG": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = run.stdout + run.stderr
    assert "2 failed, 1 passed" in run.stdout, out[-4000:]
    assert "Timeout (>5s): the trio run was interrupted" in out, out[-4000:]
    assert "Timeout (>5.0s) from pytest-timeout" in out, out[-4000:]
    assert "run() from inside a run()" not in out
