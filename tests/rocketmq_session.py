"""The real RocketMQ broker of a test session, never a mock: its fixture and hooks, for every
directory (imported by ``tests/conftest.py``).

The session fixture starts NameServer + broker with ``deploy/rocketmq/broker.sh start``
unless they already run, then provisions a topic prefix unique to this session
(``t<unix seconds>x<random hex>-``), so messages left by an earlier session, another test
run on the same machine at the same time, or a developer's service on the same dev broker
never reach these tests, and these tests never ack theirs. At the end of the session it
deletes that prefix's topics and groups (``broker.sh deprovision``), and those of sessions
older than a day that were killed before their end (``broker.sh sweep``), so the broker
does not collect six topics per run. If the broker cannot start, every test here fails:
CI must run them, never skip them. Under ``deploy/dev test`` the broker already runs (the
test command starts it and stops it afterwards if it started it); a bare ``pytest`` that
starts it here leaves it running for the next session: stop it with
``deploy/dev services stop``.

``EXPORT_CENTER_TEST_MQ_PREFIX`` names an already provisioned prefix to use instead (for
example ``test-``, which ``broker.sh start`` provisions): it saves the ~20 s of
provisioning while iterating, and is never deleted; but two runs that use the same one at
the same time take each other's messages, so the test command does not set it.

Figures (broker start-up time, provisioning time, native core, service latencies) are
printed in a "Figures (RocketMQ, partitions)" section at the end of the run, with those of
the partition tests (tests/system/test_partitions.py).
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import time
from collections.abc import Iterator

import pytest
import trio

from actors.transport.rocketmq.routes import TopicRouteError, fetch_topic_access
from tests.servers import BROKER_SH, Broker

#: the NameServer broker.sh runs (ROCKETMQ_NAMESRV_PORT moves it, for a second dev broker)
NAME_SERVER = f"127.0.0.1:{os.environ.get('ROCKETMQ_NAMESRV_PORT', '9876')}"
#: the broker's listen port (ROCKETMQ_BROKER_PORT, as broker.sh)
BROKER_PORT = int(os.environ.get("ROCKETMQ_BROKER_PORT", "10911"))
#: broker.sh start fetches ~100 MB of jars on a fresh machine, then starts two JVMs.
START_TIMEOUT_SECONDS = 900
PROVISION_TIMEOUT_SECONDS = 300

#: figures recorded by tests, printed by ``pytest_terminal_summary``
FIGURES: dict[str, str] = {}


def write_figures(terminalreporter: pytest.TerminalReporter) -> None:
    """The "Figures" section of the run's summary, when a test recorded any."""
    if FIGURES:
        terminalreporter.section("Figures (RocketMQ, partitions)")
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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that may be the first to need the broker may wait for its first start (jars
    fetched, two JVMs, provisioning): its timeout covers that on top of the default."""
    for item in items:
        if "rocketmq_broker" in getattr(item, "fixturenames", ()):
            item.add_marker(
                pytest.mark.timeout(START_TIMEOUT_SECONDS + PROVISION_TIMEOUT_SECONDS + 300)
            )


def session_prefix() -> str:
    """A topic prefix no other session uses: its start time (for ``broker.sh sweep``) and
    random hex from the operating system (pytest-randomly reseeds ``random`` with the
    order's seed, so a replayed seed would repeat a prefix made from it)."""
    return f"t{int(time.time())}x{secrets.token_hex(4)}-"


@pytest.fixture(scope="session")
def rocketmq_broker() -> Iterator[Broker]:
    """A running broker with a fresh topic prefix provisioned, deleted again at the end of
    the session; fails (never skips) if the broker cannot be started or provisioned."""
    reuse = os.environ.get("EXPORT_CENTER_TEST_MQ_PREFIX")
    prefix = reuse or session_prefix()
    env = {**os.environ, "MQ_TOPIC_PREFIX": prefix}
    t0 = time.monotonic()
    if _run(["status"], env, 120).returncode == 0:
        FIGURES["broker start-up time"] = "already running (not measured)"
        if reuse:
            FIGURES["topic prefix"] = f"{prefix} (EXPORT_CENTER_TEST_MQ_PREFIX, not provisioned)"
            yield Broker(NAME_SERVER, prefix)
            return
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
    yield Broker(NAME_SERVER, prefix)
    if reuse:
        return
    # The session's own topics and groups, then those of killed sessions; a failure is
    # reported in the figures, not as a test failure (every test has passed or failed).
    for args in (["deprovision"], ["sweep"]):
        done = _run(args, env, PROVISION_TIMEOUT_SECONDS)
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        FIGURES[f"broker.sh {args[0]}"] = (
            last if done.returncode == 0 else f"FAILED (exit {done.returncode}): {last}"
        )


#: how long a test waits for the broker to serve the session's topics again
READY_TIMEOUT_SECONDS = 300


def session_topics(prefix: str) -> list[str]:
    """The topics ``init-topics.sh`` provisions for ``prefix`` (its header lists them)."""
    worker, handler = f"{prefix}file-export-worker-v1", f"{prefix}file-export-dlq-handler-v1"
    return [f"{prefix}file-export-command-v1", f"%DLQ%{worker}"] + [
        f"%RETRY%{group}" for group in (worker, handler)
    ]


async def broker_serves(broker: Broker) -> str:
    """ "" when the NameServer routes every topic of the session read-write and the broker
    accepts connections; otherwise what is missing."""
    try:
        for topic in session_topics(broker.topic_prefix):
            access = await fetch_topic_access(broker.name_server, topic, timeout=5)
            if not access.read_write:
                return access.describe()
        stream = await trio.open_tcp_stream("127.0.0.1", BROKER_PORT)
        await stream.aclose()
    except (OSError, TopicRouteError) as exc:
        return str(exc)
    return ""


@pytest.fixture(autouse=True)
def _broker_serving(request: pytest.FixtureRequest) -> None:
    """A test that uses the broker starts only once it serves the session's topics: a test
    that stopped and restarted the shared broker (the outage test), or another test run
    that did, leaves it registering again for a few seconds. A bounded poll of that
    condition, so the tests do not depend on their order."""
    if "rocketmq_broker" not in request.fixturenames:
        return
    broker: Broker = request.getfixturevalue("rocketmq_broker")

    async def wait() -> str:
        missing = ""
        with trio.move_on_after(READY_TIMEOUT_SECONDS):
            while missing := await broker_serves(broker):
                await trio.sleep(0.5)
        return missing

    missing = trio.run(wait)
    if missing:
        pytest.fail(
            f"the broker does not serve this session's topics after "
            f"{READY_TIMEOUT_SECONDS} s: {missing}",
            pytrace=False,
        )


@pytest.fixture
def figures() -> dict[str, str]:
    """Where a test records a figure for the end-of-run summary."""
    return FIGURES
