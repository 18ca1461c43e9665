"""Shared fixtures and the hooks of the whole suite (what tests import lives in
``tests/helpers.py``): every test isolated from the caller's settings and from the
logging an earlier test configured (``tests/isolation.py``), the random order's seed
printed last, a trio-safe per-test timeout (``tests/trio_timeout.py``).

The ``db_clock`` fixture follows trio's clock, so tests on pytest-trio's mock clock move
database time and test time together (see ``tests.helpers.trio_db_clock``).
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
import trio_asyncio

from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.runtime import Runtime
from actors.storage.local import LocalDirectoryStorage
from db.ids import IdGenerator
from db.mysql import MysqlDatabase
from db.sqlite import SqliteDatabase, wall_clock_ms
from db.store import ExportStore
from tests import trio_timeout
from tests.helpers import (
    MYSQL_TEST_URL,
    TOPIC,
    make_settings,
    reset_mysql,
    run_inline,
    running_service,
    trio_db_clock,
)
from tests.isolation import LoggingState, stray_settings
from tests.mock_clock import held_to_thread, hold_mock_clock

# A run started as a background job of a script (`cmd &`) inherits SIGINT ignored, and so
# would every process it starts: Ctrl-C would not reach the run, the timeout that stops a
# hung trio test by raising SIGINT (tests/trio_timeout.py) would end the whole session
# instead, and the tests that press Ctrl-C on a child (tests/deploy/test_services.py)
# would press it in vain. With Python's own handler here, children start with SIGINT at
# its default again (exec resets handled signals, not ignored ones).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
from tests.processes import ServeProcess

# The session's RocketMQ broker, for every directory that needs it (the transport tests,
# the partition tests): its fixtures and hooks, registered by being names of this module.
from tests.rocketmq_session import (  # noqa: F401, E402
    _broker_serving,
    figures,
    pytest_collection_modifyitems,
    rocketmq_broker,
    write_figures,
)


@pytest.hookimpl(optionalhook=True)  # pytest-timeout's hook
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> bool | None:
    """pytest-timeout's signal method, made safe for trio tests (``tests/trio_timeout.py``)."""
    return trio_timeout.set_timer(item, settings)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """A timed-out trio test fails alone (``tests/trio_timeout.py``)."""
    return (yield from trio_timeout.interrupt_to_failure(item))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The order's seed, last, also under ``-q`` (which hides pytest-randomly's header):
    a failure that depends on the order replays with the line printed here."""
    write_figures(terminalreporter)
    config = terminalreporter.config
    if config.pluginmanager.hasplugin("randomly") and config.getoption("randomly_reorganize"):
        seed = config.getoption("randomly_seed")
        terminalreporter.write_line(
            f"random order: seed {seed}; replay with --randomly-seed={seed}"
        )


@pytest.fixture(scope="session", autouse=True)
def _no_settings_from_the_caller_for_the_session() -> Iterator[None]:
    """The caller's ``FILE_EXPORT_…``, ``ROCKETMQ_…``, ``MQ_TOPIC_PREFIX`` and every other
    variable Settings reads (the list comes from the model, ``tests/isolation.py``) are
    gone for the whole session, module fixtures included; service processes the tests
    start inherit the cleaned environment. ``EXPORT_CENTER_TEST_…`` ones stay."""
    with pytest.MonkeyPatch.context() as mp:
        for name in stray_settings():
            mp.delenv(name)
        yield


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test leaves the process as it found it (``tests/isolation.py``): no settings
    variable from the caller or an earlier test (a test sets what it needs, with
    ``monkeypatch``), and logging put back afterwards: an in-process ``export-center``
    command configures the root logger for the whole process. Function-scoped, so it
    sees what module fixtures set up (a log watch) and keeps it."""
    for name in stray_settings():
        monkeypatch.delenv(name)
    saved = LoggingState.save()
    yield
    saved.restore()


@pytest.fixture
def db_clock() -> Callable[[], int]:
    return trio_db_clock


@pytest.fixture(scope="session", autouse=True)
def _drop_session_database() -> Iterator[None]:
    yield

    async def drop() -> None:
        async with trio_asyncio.open_loop() as loop:
            await MysqlDatabase(MYSQL_TEST_URL, loop).drop_database()

    try:
        trio.run(drop)
    except Exception:  # MariaDB never used or already gone: nothing to clean
        pass


@pytest.fixture(params=["sqlite", "mariadb"])
async def store(
    request: pytest.FixtureRequest, db_clock: Callable[[], int]
) -> AsyncIterator[ExportStore]:
    """The store on both databases: one contract, two dialects (issue 4).

    MariaDB is not optional: if it is unreachable the test fails (the test command starts
    it with deploy/mariadb/server.sh)."""
    if request.param == "sqlite":
        db = SqliteDatabase(":memory:", clock_ms=db_clock)
        db.migrate()
        yield ExportStore(db, IdGenerator(wall_clock_ms), topic=TOPIC)
        await db.aclose()
        return
    async with trio_asyncio.open_loop() as loop:
        mdb = MysqlDatabase(
            MYSQL_TEST_URL,
            loop,
            query_timeout=None,
            clock_ms=db_clock,
            io_guard=hold_mock_clock,  # no autojump while a query is in flight
        )
        await reset_mysql(mdb)
        yield ExportStore(mdb, IdGenerator(wall_clock_ms), topic=TOPIC)
        await mdb.aclose()


@pytest.fixture
async def mysql_store() -> AsyncIterator[ExportStore]:
    """A clean MariaDB database and a store to inspect it with (real DB clock): for tests
    of several service processes sharing the database."""
    async with trio_asyncio.open_loop() as loop:
        db = MysqlDatabase(MYSQL_TEST_URL, loop)
        await reset_mysql(db)
        yield ExportStore(db, IdGenerator(wall_clock_ms), topic=TOPIC)
        await db.aclose()


@pytest.fixture
def storage(tmp_path: Path) -> LocalDirectoryStorage:
    """Real local storage; file IO inline so mock-clock tests stay deterministic."""
    return LocalDirectoryStorage(tmp_path / "files", offload=run_inline)


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(
        tmp_path,
        task_lease_seconds=10,
        task_heartbeat_seconds=2,
        max_duration_minutes=1,
        retry_backoff_seconds=(60, 900),
    )


@pytest.fixture
def autojump_clock(monkeypatch: pytest.MonkeyPatch) -> trio.testing.MockClock:
    """pytest-trio's autojump clock (threshold 0) for SQLite and MariaDB alike.

    It never jumps while real IO is pending (``tests/mock_clock.py``): the ``store``
    fixture holds it around every MariaDB call, and ``trio.to_thread.run_sync`` is
    patched here to hold it while a worker thread runs.
    """
    monkeypatch.setattr(trio.to_thread, "run_sync", held_to_thread(trio.to_thread.run_sync))
    return trio.testing.MockClock(autojump_threshold=0)


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[Runtime]:
    """The whole service in this test's loop (embedded defaults, short polls, 2 slots)."""
    settings = make_settings(
        tmp_path,
        publisher_poll_ms=200,
        reconciler_poll_ms=500,
        consumer_concurrency=2,
        shutdown_grace_seconds=5,
    )
    async with running_service(settings) as rt:
        yield rt


@pytest.fixture
def processes() -> Iterator[list[ServeProcess]]:
    """``ServeProcess`` instances a test starts (append them): killed at its end."""
    started: list[ServeProcess] = []
    yield started
    for p in started:
        p.close()
