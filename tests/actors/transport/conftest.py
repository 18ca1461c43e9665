"""Fixtures for the RocketMQ transport tests: a real broker, never a mock.

The session fixture starts NameServer + broker with ``deploy/rocketmq/broker.sh start``
unless they already run, then provisions a topic prefix unique to this session, so
messages left by an earlier session (or a developer's service on the same dev broker)
never reach these tests. If the broker cannot start, every test here fails: CI must run
them, never skip them. Under ``deploy/dev test`` the broker already runs (the test command
starts it and stops it afterwards if it started it); a bare ``pytest`` that starts it here
leaves it running for the next session: stop it with ``deploy/dev services stop``.

``EXPORT_CENTER_TEST_MQ_PREFIX`` names an already provisioned prefix to use instead (for
example ``test-``, which ``broker.sh start`` provisions): it saves the ~20 s of
provisioning while iterating; the tests skip and ack messages of other sessions.

Figures (broker start-up time, provisioning time, native core, service latencies) are
printed in a "RocketMQ figures" section at the end of the run.
"""

from __future__ import annotations

import os
import re
import subprocess
import time

import pytest

from tests.helpers import BROKER_SH, Broker

#: the NameServer broker.sh runs (ROCKETMQ_NAMESRV_PORT moves it, for a second dev broker)
NAME_SERVER = f"127.0.0.1:{os.environ.get('ROCKETMQ_NAMESRV_PORT', '9876')}"
#: broker.sh start fetches ~100 MB of jars on a fresh machine, then starts two JVMs.
START_TIMEOUT_SECONDS = 900
PROVISION_TIMEOUT_SECONDS = 300

#: figures recorded by tests, printed by ``pytest_terminal_summary``
FIGURES: dict[str, str] = {}


def pytest_configure(config: pytest.Config) -> None:
    # Registered here as well as in pyproject so --strict-markers accepts it either way.
    config.addinivalue_line("markers", "rocketmq: needs the real RocketMQ broker (broker.sh)")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if FIGURES:
        terminalreporter.section("RocketMQ figures")
        for name, value in FIGURES.items():
            terminalreporter.write_line(f"{name}: {value}")


def _run(args: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [str(BROKER_SH), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"broker.sh {' '.join(args)} did not finish in {timeout:g}s: {exc}")


@pytest.fixture(scope="session")
def rocketmq_broker() -> Broker:
    """A running broker with a fresh topic prefix provisioned; fails (never skips) if the
    broker cannot be started or provisioned."""
    reuse = os.environ.get("EXPORT_CENTER_TEST_MQ_PREFIX")
    prefix = reuse or f"it{int(time.time())}{os.getpid()}-"
    env = {**os.environ, "MQ_TOPIC_PREFIX": prefix}
    t0 = time.monotonic()
    if _run(["status"], env, 120).returncode == 0:
        FIGURES["broker start-up time"] = "already running (not measured)"
        if reuse:
            FIGURES["topic prefix"] = f"{prefix} (EXPORT_CENTER_TEST_MQ_PREFIX, not provisioned)"
            return Broker(NAME_SERVER, prefix)
        proc = _run(["provision"], env, PROVISION_TIMEOUT_SECONDS)
        action = "provision"
    else:
        proc = _run(["start"], env, START_TIMEOUT_SECONDS)  # start provisions the prefix
        action = "start"
        startup = re.search(r"start-up time ([0-9.]+) s", proc.stderr + proc.stdout)
        if startup:
            FIGURES["broker start-up time"] = (
                f"{startup.group(1)} s (NameServer launch to broker registered)"
            )
    if proc.returncode != 0:
        pytest.fail(
            f"deploy/rocketmq/broker.sh {action} failed (exit {proc.returncode}):\n"
            f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}",
            pytrace=False,
        )
    provisioned = re.search(r"provisioned in ([0-9]+)s", proc.stderr)
    if provisioned:
        FIGURES["topic provisioning time"] = f"{provisioned.group(1)} s (prefix {prefix})"
    FIGURES["broker.sh total"] = f"{time.monotonic() - t0:.1f} s ({action})"
    return Broker(NAME_SERVER, prefix)


@pytest.fixture
def figures() -> dict[str, str]:
    """Where a test records a figure for the end-of-run summary."""
    return FIGURES
