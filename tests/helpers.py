"""What tests share besides fixtures: builders, constants and clients.

Fixtures live in ``conftest.py`` files; everything a test imports from another test file
lives here, so no test imports a ``conftest`` or a ``test_*`` module. Stand-alone helpers
with a subject of their own stay beside this module: ``tests/mock_clock.py`` (holding the
autojump clock during real IO), ``tests/faults.py`` (a database that fails on demand),
``tests/history.py`` (a finished history of tasks, which the benchmarks load too),
``tests/s3_helpers.py`` (the S3 server and a bucket per test), ``tests/own_mariadb.py`` (a
throwaway MariaDB server), ``tests/processes.py`` (the service and Providers as processes)
and ``tests/servers.py`` (servers inside the test: the API app, transports, logs).

The DB clock follows trio's clock (``trio_db_clock``), so tests on pytest-trio's mock
clock move database time and test time together: a lease that expires after 300 s of mock
time has expired in the DB as well, with no wall-clock waiting.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from actors.core.limits import normalise_parameters
from actors.core.models import OutboxRow, OutboxStatus, Task, TaskStatus
from actors.core.outcomes import ExportResult, NewTask
from actors.core.principal import AppCode, Principal
from actors.pipeline.attempt import RunContext
from actors.plumbing.config import Settings
from actors.plumbing.config_loading import load_settings
from actors.plumbing.metrics import Metrics
from actors.plumbing.wakeup import ClaimRounds
from actors.runtime import Runtime, serve
from actors.storage.local import LocalDirectoryStorage
from actors.supervised.claim_gate import ClaimGate
from actors.supervised.consumer import ConsumerSlot
from actors.supervised.execution import TaskExecutor
from actors.supervised.local_claims import LocalClaims
from actors.transport.embedded import EmbeddedBus
from db.mysql import MysqlDatabase
from db.store import ExportStore
from web.auth import issue_token

REPO = Path(__file__).resolve().parents[1]

# --- database and store ---------------------------------------------------------------

#: 2027-01-15T08:00:00Z: DB time at trio time 0 in tests.
DB_EPOCH_MS = 1_800_000_000_000
TOPIC = "test-file-export-command-v1"


def trio_db_clock() -> int:
    """DB clock in epoch ms that follows trio's (mock) clock."""
    return DB_EPOCH_MS + int(trio.current_time() * 1000)


#: The MariaDB the test command starts (deploy/mariadb/server.sh); override to use another.
#: Each test session gets its own database, so concurrent runs cannot reset each other's.
MYSQL_TEST_URL = (
    os.environ.get(
        "EXPORT_CENTER_TEST_MYSQL_URL",
        "mysql://export_center:export_center@127.0.0.1:3307/export_center_test",
    )
    + f"_{os.getpid()}"
)


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


def make_settings(tmp_path: Path, **overrides: Any) -> Settings:
    """Settings for tests: short timings, isolated data directory, the demo Provider mounted
    whatever the store and transport (its default is off on MySQL or RocketMQ)."""
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
        "demo_provider": True,
    }
    base.update(overrides)
    return load_settings(**base)


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


async def complete(
    store: ExportStore, running: Task, owner: str = "owner-a", **fields: Any
) -> bool:
    """The final commit of ``running`` (claimed by ``owner``): a one-row file
    ``exports/<id>/f.xlsx`` kept an hour, unless ``fields`` say otherwise (any keyword of
    ``complete_task``). Returns whether the fenced write matched."""
    file: dict[str, Any] = {
        "file_name": "f.xlsx",
        "object_key": f"exports/{running.id}/f.xlsx",
        "content_type": "x",
        "size_bytes": 1,
        "rows": 1,
        "retention_seconds": 3600,
    }
    return await store.complete_task(running, owner, **{**file, **fields})


async def claimed(store: ExportStore, settings: Settings, **kw: Any) -> Task:
    """A new task claimed by ``settings.instance_id`` with the settings' lease and
    duration (what a consumer slot of that instance holds)."""
    return await claim(
        store,
        await create(store),
        settings.instance_id,
        lease=settings.task_lease_seconds,
        max_duration=settings.max_duration_minutes * 60,
        **kw,
    )


async def start_file(ctx: RunContext) -> str:
    """What the real pipeline does first: record the key, create the file (a few bytes)."""
    with await ctx.file.create() as f:
        f.write(b"partial xlsx bytes")
    assert ctx.file.key is not None
    return ctx.file.key


def make_slot(
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
    pipeline: Callable[[RunContext], Awaitable[ExportResult]],
    *,
    transport: EmbeddedBus | None = None,
    local: LocalClaims | None = None,
    rounds: ClaimRounds | None = None,
    gate: ClaimGate | None = None,
    name: str = "slot-0",
) -> ConsumerSlot:
    """A consumer slot ``slot-0`` over ``store`` running ``pipeline``, with a fixed
    jitter (``rand`` 0.5) so back-off figures are exact; an in-process bus unless given."""
    return ConsumerSlot(
        name,
        store,
        transport or EmbeddedBus(),
        storage,
        settings,
        metrics,
        pipeline,
        trio.Event(),
        rand=lambda: 0.5,
        local=local,
        rounds=rounds,
        gate=gate,
    )


def make_executor(
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
    pipeline: Callable[[RunContext], Awaitable[ExportResult]],
    *,
    local: LocalClaims | None = None,
) -> TaskExecutor:
    """The executor a consumer slot over ``store`` would hand its claimed tasks to, running
    ``pipeline``, with a fixed jitter (``rand`` 0.5) so back-off figures are exact."""
    return TaskExecutor(
        store,
        storage,
        settings,
        metrics,
        pipeline,
        local if local is not None else LocalClaims(),
        rand=lambda: 0.5,
    )


def task_value(**overrides: Any) -> Task:
    """A ``Task`` value for pure tests (no database)."""
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


def outbox_row_value(version: int = 1, **overrides: Any) -> OutboxRow:
    """An ``OutboxRow`` value for pure tests (no database): the SENT command of task 1's
    ``version``, due and sent 5 s before DB time ``DB_EPOCH_MS``, unless ``overrides``
    say otherwise (any field of ``OutboxRow``)."""
    before = datetime.fromtimestamp(DB_EPOCH_MS / 1000, tz=UTC) - timedelta(seconds=5)
    fields: dict[str, Any] = dict(
        id=10 + version,
        event_id=f"e{version}",
        task_id=1,
        dispatch_version=version,
        topic="t",
        tag="EXPORT_TASK",
        message_key="1",
        payload_json="{}",
        status=OutboxStatus.SENT,
        attempt_count=1,
        next_retry_at=before,
        lease_owner=None,
        lease_until=None,
        sent_at=before,
        last_error=None,
    )
    return OutboxRow(**{**fields, **overrides})


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


# --- the whole service in this test's loop ----------------------------------------------

API = "/api/platform/v1/files/export-tasks"


def client_for(
    rt: Runtime,
    *,
    user: int = 1001,
    tenant: int = 0,
    perms: tuple[str, ...] = ("platform:customer:export",),
) -> httpx.AsyncClient:
    """An HTTP client of the running service ``rt`` with a token for ``user``."""
    token = issue_token(
        rt.jwt_secret, user_id=user, tenant_id=tenant, app_code=AppCode.PLATFORM, perms=perms
    )
    return httpx.AsyncClient(
        base_url=rt.base_url, timeout=10, headers={"Authorization": f"Bearer {token}"}
    )


async def wait_for_status(
    client: httpx.AsyncClient, task_id: str, *statuses: str, timeout: float = 30
) -> dict[str, Any]:
    """Poll the task until it reaches one of ``statuses`` (a condition wait, bounded)."""
    with trio.fail_after(timeout):
        while True:
            task = (await client.get(f"{API}/{task_id}")).json()["data"]
            if task["status"] in statuses:
                return task
            await trio.sleep(0.05)


def metric_value(text: str, series: str) -> float:
    """A series' value in a Prometheus text exposition, e.g.
    ``export_consumer_no_claim_total{reason="storage_unavailable"}``; 0 when absent."""
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0
