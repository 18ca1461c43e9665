"""What tests share besides fixtures: builders, constants and clients.

Fixtures live in ``conftest.py`` files; everything a test imports from another test file
lives here, so no test imports a ``conftest`` or a ``test_*`` module. Stand-alone helpers
with a subject of their own stay beside this module: ``tests/mock_clock.py`` (holding the
autojump clock during real IO), ``tests/faults.py`` (a database that fails on demand),
``deploy/bench/history.py`` (a finished history of tasks) and ``tests/own_mariadb.py`` (a
throwaway MariaDB server).

The DB clock follows trio's clock (``trio_db_clock``), so tests on pytest-trio's mock
clock move database time and test time together: a lease that expires after 300 s of mock
time has expired in the DB as well, with no wall-clock waiting.
"""

from __future__ import annotations

import importlib.util
import io
import json
import logging
import os
import re
import socket
import socketserver
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
import trio
from hypercorn.config import Config as HypercornConfig
from quart_trio import QuartTrio

from actors.core.limits import normalise_parameters
from actors.core.models import (
    AppCode,
    ExportDefinition,
    OutboxRow,
    OutboxStatus,
    Principal,
    Registry,
    Task,
    TaskStatus,
)
from actors.core.outcomes import ExportResult, NewTask
from actors.pipeline.context import RunContext
from actors.pipeline.storage import LocalDirectoryStorage, new_object_key
from actors.runtime import Runtime, serve
from actors.service.config import Settings, load_settings
from actors.service.logs import LIBRARY_LOGGERS, configure_logging
from actors.service.metrics import Metrics
from actors.service.registry_source import RegistryHolder
from actors.service.wakeup import ClaimRounds, Wakeup
from actors.supervised.claim_gate import ClaimGate
from actors.supervised.consumer import ConsumerSlot
from actors.supervised.execution import TaskExecutor
from actors.supervised.local_claims import LocalClaims
from actors.transport.embedded import EmbeddedBus
from db.mysql import MysqlDatabase
from db.store import ExportStore
from web.app import create_app
from web.auth import issue_token
from web.server import WebServer
from web.services import Services

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


async def start_file(store: ExportStore, storage: LocalDirectoryStorage, ctx: RunContext) -> str:
    """What the real pipeline does first: record the key, create the file (a few bytes)."""
    key = new_object_key(ctx.task.id)
    assert await store.record_object_key(ctx.task, ctx.owner, key)
    f = await storage.create(key)
    ctx.object_key = key
    f.write(b"partial xlsx bytes")
    f.close()
    return key


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


# --- the real ``export-center serve`` process -------------------------------------------

PROCESS_SECRET = "process-test-secret-" + "y" * 32
READY = re.compile(r"ready at (http://127\.0\.0\.1:\d+)")


class ServeProcess:
    """``python -m actors`` in a process of its own, its log in ``log``; ``env`` adds to
    (or overrides) the environment, and a ``None`` value removes the variable. The demo
    Provider is mounted unless ``env`` says otherwise (on MySQL or RocketMQ it is off by
    default)."""

    def __init__(self, data_dir: Path, log: Path, **env: str | None) -> None:
        self.log = log
        full_env = {
            **os.environ,
            "FILE_EXPORT_DATA_DIR": str(data_dir),
            "FILE_EXPORT_HTTP_BIND": "127.0.0.1:0",
            "FILE_EXPORT_JWT_SECRET": PROCESS_SECRET,
            "FILE_EXPORT_INSTANCE_ID": f"proc-{log.stem}",
            "FILE_EXPORT_DEMO_PROVIDER": "true",
        }
        for name, value in env.items():
            if value is None:
                full_env.pop(name, None)
            else:
                full_env[name] = value
        self._log_file = open(log, "w")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "actors"],
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log_file,
        )
        self.url = ""

    async def ready(self, timeout: float = 30) -> str:
        with trio.fail_after(timeout):
            while not (m := READY.search(self.log.read_text())):
                assert self.proc.poll() is None, self.log.read_text()
                await trio.sleep(0.05)
        self.url = m.group(1)
        return self.url

    async def wait(self, timeout: float = 30) -> int:
        with trio.fail_after(timeout):
            while (code := self.proc.poll()) is None:
                await trio.sleep(0.05)
        return code

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._log_file.close()


def process_client(url: str) -> httpx.AsyncClient:
    """An HTTP client of a ``ServeProcess`` at ``url`` (user 5 of tenant 0)."""
    token = issue_token(
        PROCESS_SECRET,
        user_id=5,
        tenant_id=0,
        app_code=AppCode.PLATFORM,
        perms=["platform:customer:export"],
    )
    return httpx.AsyncClient(base_url=url, timeout=10, headers={"Authorization": f"Bearer {token}"})


async def poll_task(url: str, task_id: str, until: set[str], timeout: float = 60) -> dict:
    """Poll the task on the ``ServeProcess`` at ``url`` until its status is in ``until``."""
    async with process_client(url) as c:
        with trio.fail_after(timeout):
            while True:
                task = (await c.get(f"{API}/{task_id}")).json()["data"]
                if task["status"] in until:
                    return task
                await trio.sleep(0.05)


# --- the example Provider of docs/provider-guide.md ---------------------------------------

EXAMPLE_PROVIDER = Path(__file__).resolve().parents[1] / "examples/provider/minimal_provider.py"


def load_example_provider() -> ModuleType:
    """``examples/provider/minimal_provider.py`` imported as a module (it is no package)."""
    spec = importlib.util.spec_from_file_location("minimal_provider", EXAMPLE_PROVIDER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextmanager
def example_provider_process(token: str, log: Path) -> Iterator[str]:
    """The example Provider run as its README says, in a process of its own; yields its
    base URL. Its request log goes to ``log``."""
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, str(EXAMPLE_PROVIDER), "0"],
            env={**os.environ, "INTERNAL_SERVICE_TOKEN": token},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()  # the bound URL, or "" when it exited
            match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
            assert match, line + log.read_text()
            yield match.group(1)
        finally:
            proc.kill()
            proc.wait(30)
            assert proc.stdout is not None
            proc.stdout.close()


#: ``export-center demo-provider`` run by the CLI group itself (``python -m actors`` only serves).
DEMO_PROVIDER_COMMAND = [
    sys.executable,
    "-c",
    "from actors.cli.main import main; main()",
    "demo-provider",
]


@contextmanager
def demo_provider_process(token: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``export-center demo-provider`` in a process of its own on a free port; yields the
    process and its base URL (read from its first stderr line). Killed at the end unless it
    already exited (a test may stop it itself)."""
    proc = subprocess.Popen(
        [*DEMO_PROVIDER_COMMAND, "--bind", "127.0.0.1:0"],
        env={**os.environ, "INTERNAL_SERVICE_TOKEN": token},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # the bound URL, or "" when it exited
        match = re.search(r"demo Provider listening on (http://127\.0\.0\.1:\d+)", line)
        assert match, line + proc.stderr.read()
        yield proc, match.group(1)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
        assert proc.stderr is not None
        proc.stderr.close()


# --- the API app over a store (no server) ---------------------------------------------

API_SECRET = "api-test-secret-" + "z" * 32
DEFINITION = ExportDefinition(
    "CUSTOMER_LIST",
    "demo-service",
    "/internal/exports/v1/CUSTOMER_LIST/batches",
    "platform:customer:export",
    AppCode.PLATFORM,
)


def headers(
    user: int = 7, perms: tuple[str, ...] = ("platform:customer:export",), tenant: int = 0
) -> dict[str, str]:
    """The ``Authorization`` header of ``user`` (of ``tenant``) for :func:`api_app`."""
    token = issue_token(
        API_SECRET, user_id=user, tenant_id=tenant, app_code=AppCode.PLATFORM, perms=perms
    )
    return {"Authorization": f"Bearer {token}"}


class WokenRuns:
    """A ``runs`` port for :func:`api_app` that records the runs the API asked to wake."""

    def __init__(self) -> None:
        self.ids: list[int] = []

    def cancelled(self, task_id: int) -> None:
        self.ids.append(task_id)


def api_app(
    store: ExportStore,
    storage: LocalDirectoryStorage,
    *,
    definition: ExportDefinition = DEFINITION,
    secret: str = API_SECRET,
    runs: WokenRuns | None = None,
) -> tuple[QuartTrio, Services]:
    """The API app over ``store`` and ``storage``, ready (as after start-up), with a
    registry of ``definition`` alone and tokens signed with ``secret``.

    Returns:
        The app (``app.test_client()`` calls it without a server) and its services
        (``services.registry`` to change the registry, ``services.ready`` ...).
    """
    services = Services(
        store=store,
        storage=storage,
        registry=RegistryHolder(Registry({definition.export_type: definition})),
        metrics=Metrics(),
        wakeup=Wakeup(),
        jwt_secret=secret,
    )
    if runs is not None:
        services.runs = runs
    services.ready.set()
    return create_app(services), services


@asynccontextmanager
async def served(app: QuartTrio, graceful_timeout: float = 1.0) -> AsyncIterator[str]:
    """Serve ``app`` over real HTTP (``web.server.WebServer`` on a free port of
    127.0.0.1) until the block ends; yields the base URL."""
    config = HypercornConfig()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.graceful_timeout = graceful_timeout
    server = WebServer(app, config)
    urls = server.bind()
    stop = trio.Event()
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(partial(server.serve, stop.wait))
            try:
                yield urls[0]
            finally:
                stop.set()
    finally:
        server.close()


# --- transports -----------------------------------------------------------------------


@dataclass
class RecordingDelivery:
    """A ``Delivery`` that records its ack or reject in ``events``."""

    body: str
    properties: dict[str, str] = field(default_factory=dict)
    reconsume_times: int = 0
    message_id: str = "m-1"
    events: list[str] = field(default_factory=list)

    async def ack(self) -> None:
        self.events.append("ack")

    async def reject(self) -> None:
        self.events.append("reject")


BROKER_SH = REPO / "deploy" / "rocketmq" / "broker.sh"


@dataclass(frozen=True)
class Broker:
    """The RocketMQ broker the tests use (the ``rocketmq_broker`` fixture).

    Attributes:
        name_server: ``host:port`` of the NameServer.
        topic_prefix: ``MQ_TOPIC_PREFIX`` provisioned for this session.
    """

    name_server: str
    topic_prefix: str


# --- structured logs ------------------------------------------------------------------


@contextmanager
def json_log(level: str = "INFO", **debug_loggers: bool) -> Iterator[Callable[[], list[dict]]]:
    """Capture this process's log as JSON lines (``actors.service.logs``, as production).

    Args:
        level: the root level.
        debug_loggers: logger names (dots as ``__``) also set to DEBUG, e.g.
            ``actors__pipeline__provider_client=True``.

    Yields:
        A function returning the lines written so far, each parsed (every line must be
        one JSON object). The handler and levels are restored afterwards.
    """
    root = logging.getLogger()
    names = [n.replace("__", ".") for n, on in debug_loggers.items() if on]
    saved = root.level, {n: logging.getLogger(n).level for n in (*LIBRARY_LOGGERS, *names)}
    buffer = io.StringIO()
    handler = configure_logging(level, stream=buffer, fmt="json")
    for name in names:
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        yield lambda: [json.loads(line) for line in buffer.getvalue().splitlines()]
    finally:
        root.removeHandler(handler)
        root.setLevel(saved[0])
        for name, lvl in saved[1].items():
            logging.getLogger(name).setLevel(lvl)


@contextmanager
def serving_in_thread(server: socketserver.BaseServer) -> Iterator[str]:
    """Serve ``server`` (a standard-library HTTP or WSGI server bound to 127.0.0.1) on a
    daemon thread until the block ends; yields its base URL, ``http://127.0.0.1:<port>``.
    The server is shut down and closed afterwards."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(30)
        server.server_close()


def read_http_request(conn: socket.socket, buffered: bytes = b"") -> bytes | None:
    """Read one whole HTTP request with a ``Content-Length`` body from ``conn`` (``buffered``:
    bytes already read); return the bytes after it, ``None`` at EOF before a request."""
    while b"\r\n\r\n" not in buffered:
        data = conn.recv(65536)
        if not data:
            return None
        buffered += data
    head, _, rest = buffered.partition(b"\r\n\r\n")
    found = re.search(rb"(?i)content-length: *(\d+)", head)
    length = int(found.group(1)) if found else 0
    while len(rest) < length:
        rest += conn.recv(65536)
    return rest[length:]


@contextmanager
def serving_raw_tcp(handle: Callable[[socket.socket, int], None]) -> Iterator[int]:
    """A TCP server on 127.0.0.1 that runs ``handle(connection, number)`` on a thread per
    connection (numbered from 0) until the block ends; yields its port. For peers that
    misbehave below HTTP (resets, early closes, not HTTP at all)."""
    listener = socket.create_server(("127.0.0.1", 0))
    threads: list[threading.Thread] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # closed
            thread = threading.Thread(target=handle, args=(conn, len(threads)), daemon=True)
            threads.append(thread)
            thread.start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.shutdown(socket.SHUT_RDWR)  # wakes the accept (a close alone does not)
        listener.close()
        acceptor.join(5)
        for thread in threads:
            thread.join(5)
