"""Shared fixtures.

The DB clock follows trio's clock (``db_clock``), so tests on pytest-trio's mock clock move
database time and test time together (DESIGN §7): a lease that expires after 300 s of mock
time has expired in the DB as well, with no wall-clock waiting.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
import trio_asyncio

from actors.config import Settings, load_settings
from actors.core.ids import IdGenerator
from actors.core.limits import normalise_parameters
from actors.core.models import AppCode, Principal, Task
from actors.core.outcomes import NewTask
from actors.metrics import Metrics
from actors.pipeline.storage import LocalDirectoryStorage
from actors.runtime import Runtime, serve
from db.mysql import MysqlDatabase
from db.sqlite import SqliteDatabase, wall_clock_ms
from db.store import ExportStore
from tests.mock_clock import held_to_thread, hold_mock_clock

#: 2027-01-15T08:00:00Z: DB time at trio time 0 in tests.
DB_EPOCH_MS = 1_800_000_000_000
TOPIC = "test-file-export-command-v1"


def trio_db_clock() -> int:
    """DB clock in epoch ms that follows trio's (mock) clock."""
    return DB_EPOCH_MS + int(trio.current_time() * 1000)


@pytest.fixture
def db_clock() -> Callable[[], int]:
    return trio_db_clock


#: The MariaDB the test command starts (deploy/mariadb/server.sh); override to use another.
#: Each test session gets its own database, so concurrent runs cannot reset each other's.
MYSQL_TEST_URL = (
    os.environ.get(
        "EXPORT_CENTER_TEST_MYSQL_URL",
        "mysql://export_center:export_center@127.0.0.1:3307/export_center_test",
    )
    + f"_{os.getpid()}"
)


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


async def reset_mysql(db: MysqlDatabase) -> None:
    """Apply the schema (idempotent) and empty the tables for one test."""
    try:
        await db.migrate()
    except OSError as exc:
        pytest.fail(
            f"MariaDB at {MYSQL_TEST_URL} is unreachable ({exc}); "
            "start it with deploy/mariadb/server.sh start"
        )
    async with db.transaction() as tx:
        for table in ("file_export_task_event", "file_export_outbox", "file_export_task"):
            await tx.execute(f"DELETE FROM {table}")


async def run_inline(fn: Callable[..., Any], *args: Any) -> Any:
    """Run a blocking call on the trio thread: keeps the autojump clock deterministic."""
    return fn(*args)


@pytest.fixture
def storage(tmp_path: Path) -> LocalDirectoryStorage:
    """Real local storage; file IO inline so mock-clock tests stay deterministic."""
    return LocalDirectoryStorage(tmp_path / "files", offload=run_inline)


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()


def make_settings(tmp_path: Path, **overrides: Any) -> Settings:
    """Settings for tests: short timings, isolated data directory."""
    base: dict[str, Any] = {
        "data_dir": tmp_path,
        "http_bind": "127.0.0.1:0",
        "jwt_secret": "test-secret-" + "x" * 32,
        "instance_id": "test-instance",
        "provider_urls": {},
        "registry": None,
        "database_url": f"sqlite:///{tmp_path}/export-center.db",
        "storage_dir": tmp_path / "files",
        "transport": "embedded",
    }
    base.update(overrides)
    return load_settings(**base)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(
        tmp_path,
        task_lease_seconds=10,
        task_heartbeat_seconds=2,
        max_duration_minutes=1,
        retry_backoff_seconds=(60, 900),
    )


def principal(
    user_id: int = 7,
    *,
    tenant_id: int = 0,
    app: AppCode = AppCode.PLATFORM,
    perms: tuple[str, ...] = ("platform:customer:export",),
) -> Principal:
    return Principal(user_id, tenant_id, app, frozenset(perms))


def new_task(
    user_id: int = 7,
    *,
    export_type: str = "CUSTOMER_LIST",
    params: dict[str, Any] | None = None,
    max_attempts: int = 3,
    tenant_id: int = 0,
) -> NewTask:
    return NewTask(
        export_type,
        "Customers",
        "XLSX",
        normalise_parameters(params if params is not None else {"n": user_id}),
        principal(user_id, tenant_id=tenant_id),
        max_attempts,
    )


async def create(store: ExportStore, **kwargs: Any) -> Task:
    """Create a task and return it (asserts it was created, not a duplicate)."""
    result = await store.create_task(new_task(**kwargs))
    assert result.task is not None, result.outcome
    return result.task


async def claim(
    store: ExportStore,
    task: Task,
    owner: str = "owner-a",
    *,
    lease: float = 10,
    max_duration: float = 60,
) -> Task:
    """Claim ``task`` at its current version; asserts the claim succeeded."""
    result = await store.claim_task(task.id, task.dispatch_version, owner, lease, max_duration)
    assert result.task is not None, result.no_claim
    return result.task


def task_value(**overrides: Any) -> Task:
    """A ``Task`` value for pure tests (no database)."""
    from datetime import UTC, datetime

    from actors.core.models import TaskStatus

    now = datetime.fromtimestamp(DB_EPOCH_MS / 1000, tz=UTC)
    fields: dict[str, Any] = dict(
        id=1,
        task_no="EXP1",
        export_type="CUSTOMER_LIST",
        task_name="t",
        format="XLSX",
        status=TaskStatus.PENDING,
        parameters_json="{}",
        tenant_id=0,
        app_code="PLATFORM",
        requested_by=7,
        dispatch_version=1,
        attempt_count=0,
        max_attempts=3,
        next_retry_at=now,
        lease_owner=None,
        lease_until=None,
        last_heartbeat_at=None,
        execution_deadline_at=None,
        processed_rows=0,
        total_rows=None,
        file_name=None,
        object_key=None,
        content_type=None,
        size_bytes=None,
        failure_message=None,
        requested_at=now,
        started_at=None,
        completed_at=None,
        expires_at=None,
    )
    fields.update(overrides)
    return Task(**fields)


@pytest.fixture
def autojump_clock(monkeypatch: pytest.MonkeyPatch) -> trio.testing.MockClock:
    """pytest-trio's autojump clock (threshold 0) for SQLite and MariaDB alike.

    It never jumps while real IO is pending (``tests/mock_clock.py``): the ``store``
    fixture holds it around every MariaDB call, and ``trio.to_thread.run_sync`` is
    patched here to hold it while a worker thread runs.
    """
    monkeypatch.setattr(trio.to_thread, "run_sync", held_to_thread(trio.to_thread.run_sync))
    return trio.testing.MockClock(autojump_threshold=0)


async def exec_sql(store: ExportStore, sql: str, params: dict[str, Any] | None = None) -> int:
    """Run a test's own SQL (``:name`` params, ``{now}``) rendered for the store's dialect."""
    async with store.db.transaction() as tx:
        return await tx.execute(store.db.dialect.render(sql), params or {})


@asynccontextmanager
async def running_service(settings: Settings) -> AsyncIterator[Runtime]:
    """The whole service (``actors.runtime.serve``) in this test's trio loop, until the
    block ends: yields its ``Runtime`` once it is ready, then asks it to stop."""
    async with trio.open_nursery() as nursery:
        rt: Runtime = await nursery.start(
            lambda task_status: serve(
                settings, install_signal_handlers=False, task_status=task_status
            )
        )
        yield rt
        rt.request_stop()
