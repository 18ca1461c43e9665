"""Composition root: build the services and run the whole service as one nursery tree.

```
root (signals -> graceful stop)
├── web          supervised HTTP server (web/server.py), stopped through its shutdown trigger
├── publisher    supervised
├── slot ×N      supervised consumer slots
├── reconciler   supervised
├── dlq handler  supervised
└── registry     hot reload on file change / SIGHUP
```

Stop order on SIGTERM/SIGINT (§14): stop taking commands; let running exports finish
within ``FILE_EXPORT_SHUTDOWN_GRACE_SECONDS``; cancel what is left (its lease expires and
the reconciler recovers it); stop the web server through hypercorn's shutdown trigger; exit.
"""

from __future__ import annotations

import logging
import secrets
import signal
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import trio
import trio_asyncio
from hypercorn.config import Config as HypercornConfig

from actors.claim_gate import ClaimGate
from actors.config import Settings
from actors.consumer import ConsumerSlot
from actors.core.admission import CreateLimits
from actors.core.db_retry import DbRetryPolicy
from actors.core.errors import ConfigError, RegistryError, sole_exception
from actors.core.ids import IdGenerator
from actors.core.models import AppCode
from actors.core.outcomes import AbortReason
from actors.local_claims import LocalClaims
from actors.metrics import Metrics
from actors.pipeline.provider_client import ProviderClient
from actors.pipeline.runner import ExportRunner
from actors.pipeline.storage import LocalDirectoryStorage
from actors.publisher import Publisher
from actors.registry_source import (
    RegistryHolder,
    default_registry_path,
    load_registry_file,
    watch_registry,
)
from actors.supervisor import supervise
from actors.transport.base import CommandTransport
from actors.transport.embedded import EmbeddedBus
from actors.wakeup import Wakeup
from db.database import Database, DatabaseAccessError, DatabaseUnavailableError
from db.mysql import MysqlDatabase
from db.sqlite import SqliteDatabase, wall_clock_ms
from db.store import ExportStore

log = logging.getLogger("actors.runtime")

DEMO_ADMIN_PERMS = ("platform:customer:export", "platform:download:all")


@dataclass
class Runtime:
    """Handle to a running service, given to ``nursery.start(serve, …)`` callers."""

    settings: Settings
    urls: list[str]
    store: ExportStore
    storage: LocalDirectoryStorage
    transport: Any
    metrics: Metrics
    jwt_secret: str
    stop: trio.Event = field(default_factory=trio.Event)
    slots: list[ConsumerSlot] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return self.urls[0]

    def request_stop(self) -> None:
        self.stop.set()


@asynccontextmanager
async def open_database(
    settings: Settings,
    clock_ms: Callable[[], int] | None = None,
    *,
    migrate: bool = False,
) -> AsyncIterator[Database]:
    """Open the database named by ``FILE_EXPORT_DATABASE_URL`` for the block.

    SQLite (embedded) is created and migrated on open. MySQL runs inside a trio-asyncio
    loop opened here as the outermost asyncio context (DESIGN §7); its schema is applied by
    ``export-center migrate`` (``migrate=True``), never implicitly at start-up.

    Args:
        clock_ms: tests only: a DB clock in epoch ms (SQLite's ``db_now_ms()``; MySQL's
            session ``timestamp``). ``None`` = the real clock.

    Raises:
        ConfigError: unsupported or malformed URL, or the database is unreachable.
    """
    url = settings.resolved_database_url
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :] or ":memory:"
        try:
            db = SqliteDatabase(path, clock_ms=clock_ms or wall_clock_ms)
            db.migrate()
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"FILE_EXPORT_DATABASE_URL ({path}): {exc}") from None
        try:
            yield db
        finally:
            await db.aclose()
        return
    if not url.startswith("mysql://"):
        raise ConfigError("FILE_EXPORT_DATABASE_URL must start with sqlite:/// or mysql://")
    try:
        async with trio_asyncio.open_loop() as loop:
            mdb = MysqlDatabase(url, loop, clock_ms=clock_ms)
            try:
                if migrate:
                    await mdb.migrate()
                yield mdb
            except (DatabaseUnavailableError, DatabaseAccessError) as exc:
                raise ConfigError(f"FILE_EXPORT_DATABASE_URL: {exc}") from None
            finally:
                await mdb.aclose()
    except BaseExceptionGroup as group:
        # trio-asyncio's nursery wraps whatever the block raised; callers expect the
        # plain exception (a ConfigError, or a Cancelled that must keep propagating).
        raise sole_exception(group) from None


def resolve_jwt_secret(settings: Settings) -> tuple[str, bool]:
    """The JWT secret, and whether it is the embedded dev secret.

    Without ``FILE_EXPORT_JWT_SECRET`` in embedded mode, a random secret is kept in
    ``<data_dir>/dev-jwt-secret`` (mode 0600) so tokens survive restarts. With the
    RocketMQ transport (production) the variable is required.
    """
    if settings.jwt_secret:
        return settings.jwt_secret, False
    if settings.transport != "embedded":
        raise ConfigError("FILE_EXPORT_JWT_SECRET must be set outside embedded mode")
    path = Path(settings.data_dir) / "dev-jwt-secret"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text(secrets.token_urlsafe(32))
            path.chmod(0o600)
        return path.read_text().strip(), True
    except OSError as exc:
        raise ConfigError(f"FILE_EXPORT_DATA_DIR ({settings.data_dir}): {exc}") from None


def _service_token(settings: Settings) -> str:
    if settings.internal_service_token:
        return settings.internal_service_token
    if settings.provider_urls:
        raise ConfigError(
            "INTERNAL_SERVICE_TOKEN must be set when FILE_EXPORT_PROVIDER_URLS "
            "names real Providers (§10.1)"
        )
    return secrets.token_urlsafe(24)  # only the built-in demo Provider checks it


async def serve(
    settings: Settings,
    *,
    install_signal_handlers: bool = True,
    db_clock_ms: Callable[[], int] | None = None,
    instance_clock_ms: Callable[[], int] = wall_clock_ms,
    task_status: trio.TaskStatus[Runtime] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run the service until SIGTERM/SIGINT or ``Runtime.request_stop()``.

    Args:
        settings: validated settings.
        install_signal_handlers: listen for SIGTERM/SIGINT (main thread only).
        db_clock_ms: tests only: the DB clock (see ``open_database``).
        instance_clock_ms: this process's own clock, epoch ms. It only labels things (ids,
            ``occurredAt``); every scheduling decision uses the DB clock (§8.6). Tests
            inject a skewed one to prove it.
        task_status: receives the ``Runtime`` once the service is ready (``/healthz`` 200).

    Raises:
        ConfigError: invalid configuration, unreachable database or missing guard row;
            nothing was started.
    """
    try:
        async with open_database(settings, db_clock_ms) as db:
            await _serve(settings, db, install_signal_handlers, instance_clock_ms, task_status)
    except BaseExceptionGroup as group:
        raise sole_exception(group) from None


async def _serve(
    settings: Settings,
    db: Database,
    install_signal_handlers: bool,
    instance_clock_ms: Callable[[], int],
    task_status: trio.TaskStatus[Runtime],
) -> None:
    from web.app import Services, create_app  # composition root: the one place that wires web
    from web.demo_provider import DEMO_SERVICE
    from web.server import WebServer

    def label() -> str:
        at = datetime.fromtimestamp(instance_clock_ms() / 1000, tz=UTC)
        return at.isoformat(timespec="milliseconds")

    store = ExportStore(
        db,
        IdGenerator(instance_clock_ms),
        topic=settings.command_topic,
        clock_label=label,
        retry_policy=DbRetryPolicy(budget_seconds=settings.db_retry_seconds),
    )
    await store.check_guard_row()
    if settings.transport == "embedded":
        requeued = await store.requeue_sent_of_pending_tasks()
        if requeued:
            log.info("requeued %d commands the previous in-process bus held", requeued)
    try:
        storage = LocalDirectoryStorage(settings.resolved_storage_dir)
    except OSError as exc:
        raise ConfigError(f"FILE_EXPORT_STORAGE_DIR: {exc}") from None
    metrics = Metrics()
    allowed = set(settings.provider_urls) | ({DEMO_SERVICE} if settings.demo_provider else set())
    registry_path = settings.registry or default_registry_path()
    try:
        registry = RegistryHolder(load_registry_file(registry_path, allowed))
    except RegistryError as exc:
        raise ConfigError(f"FILE_EXPORT_REGISTRY ({registry_path}): {exc}") from None
    jwt_secret, dev_secret = resolve_jwt_secret(settings)
    service_token = _service_token(settings)
    base_urls: dict[str, str] = dict(settings.provider_urls)
    provider = ProviderClient(
        base_urls,
        service_token,
        request_timeout=settings.provider_request_timeout_seconds,
        observer=metrics,
    )
    transport: CommandTransport
    if settings.transport == "rocketmq":
        from actors.transport.rocketmq import RocketMQTransport

        transport = RocketMQTransport.from_settings(settings)
    else:
        transport = EmbeddedBus(settings.max_reconsume_times)
    wakeup = Wakeup()
    services = Services(
        store=store,
        storage=storage,
        registry=registry,
        metrics=metrics,
        wakeup=wakeup,
        jwt_secret=jwt_secret,
        create_limits=CreateLimits(
            max_active_per_user=settings.max_active_per_user,
            max_active_per_type=settings.max_active_per_type,
            type_reserved_places=settings.type_reserved_places,
        ),
    )
    blueprints = []
    if settings.demo_provider:
        from web.demo_provider import create_demo_provider_blueprint

        blueprints.append(
            create_demo_provider_blueprint(
                service_token=service_token, snapshot_secret=secrets.token_bytes(32)
            )
        )
    app = create_app(services, extra_blueprints=blueprints)

    stopping = trio.Event()  # stop taking commands
    web_stop = trio.Event()  # hypercorn shutdown trigger
    runner = ExportRunner(store, storage, provider, registry, settings)
    local = LocalClaims()  # what this process's slots hold; shared with its reconciler
    web: WebServer | None = None
    try:
        if not isinstance(transport, EmbeddedBus):
            # First thing in the try: the finally's aclose() also cleans up a half start.
            try:
                await transport.start()  # type: ignore[attr-defined]
            except Exception as exc:
                raise ConfigError(
                    f"ROCKETMQ_NAME_SERVER ({settings.rocketmq_name_server}): cannot start "
                    f"the RocketMQ clients: {exc}"
                ) from None
        hc = HypercornConfig()
        hc.bind = [settings.http_bind]
        hc.accesslog = None
        hc.errorlog = logging.getLogger("hypercorn.error")
        hc.graceful_timeout = 5
        web = WebServer(app, hc)
        try:
            urls = web.bind()
        except (OSError, ValueError) as exc:
            cause = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise ConfigError(
                f"FILE_EXPORT_HTTP_BIND ({settings.http_bind}): cannot listen: {cause}"
            ) from None
        async with trio.open_nursery() as root:
            # Supervised like every actor: a failure of the web server restarts it on the
            # same sockets and never cancels the actors beside it (web/server.py).
            root.start_soon(partial(supervise, "web", partial(web.serve, web_stop.wait), metrics))
            if settings.demo_provider:
                base_urls.setdefault(DEMO_SERVICE, urls[0])
            rt = Runtime(settings, urls, store, storage, transport, metrics, jwt_secret)

            async with trio.open_nursery() as actors:
                actors.start_soon(
                    partial(
                        watch_registry,
                        registry,
                        registry_path,
                        allowed,
                        on_reload_failed=lambda err: metrics.registry_reload_failures.inc(),
                    )
                )
                if settings.publisher_enabled:
                    publisher = Publisher(store, transport, settings, metrics, wakeup)
                    actors.start_soon(supervise, "publisher", publisher.run, metrics)
                slots_done = trio.Event()
                if settings.consumer_enabled:
                    gate = ClaimGate(store, settings)  # one per instance: fair share
                    rt.slots = [
                        ConsumerSlot(
                            f"slot-{i}",
                            store,
                            transport,
                            storage,
                            settings,
                            metrics,
                            runner,
                            stopping,
                            local=local,
                            gate=gate,
                        )
                        for i in range(settings.consumer_concurrency)
                    ]
                    actors.start_soon(_run_slots, rt.slots, metrics, slots_done)
                else:
                    slots_done.set()
                if settings.reconciler_enabled:
                    from actors.reconciler import Reconciler

                    reconciler = Reconciler(store, storage, settings, metrics, local=local)
                    actors.start_soon(supervise, "reconciler", reconciler.run, metrics)
                from actors.dlq import DlqHandler

                actors.start_soon(
                    supervise, "dlq-handler", DlqHandler(store, transport, metrics).run, metrics
                )

                services.ready.set()
                _announce(settings, rt, dev_secret)
                task_status.started(rt)
                await _wait_for_stop(rt.stop, install_signal_handlers)

                log.info(
                    "stopping: no new commands; waiting up to %gs for running exports",
                    settings.shutdown_grace_seconds,
                )
                stopping.set()
                services.stopping = True  # /healthz answers 503 while draining
                for slot in rt.slots:
                    slot.stop_receiving()
                with trio.move_on_after(settings.shutdown_grace_seconds):
                    await slots_done.wait()
                if not slots_done.is_set():
                    log.warning(
                        "grace period over: interrupting running exports and handing "
                        "their tasks back"
                    )
                    for slot in rt.slots:
                        if slot.current is not None:
                            slot.current.abort(AbortReason.SHUTDOWN)
                    with trio.move_on_after(15):
                        await slots_done.wait()
                actors.cancel_scope.cancel()
            # The Provider client may hold a keep-alive connection to this very server
            # (demo Provider): close it first so hypercorn has nothing to wait for.
            await provider.aclose()
            web_stop.set()
            # The server drains within graceful_timeout; a web server caught in a restart
            # back-off must not hold the exit.
            root.cancel_scope.deadline = trio.current_time() + hc.graceful_timeout + 1
    finally:
        if web is not None:
            web.close()
        await provider.aclose()
        await transport.aclose()
    log.info("stopped")


async def _run_slots(slots: list[ConsumerSlot], metrics: Metrics, done: trio.Event) -> None:
    try:
        async with trio.open_nursery() as n:
            for slot in slots:
                n.start_soon(supervise, slot.name, slot.run, metrics)
    finally:
        done.set()


async def _wait_for_stop(stop: trio.Event, install_signal_handlers: bool) -> None:
    if not install_signal_handlers or threading.current_thread() is not threading.main_thread():
        await stop.wait()
        return
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as n:

            async def on_signal() -> None:
                async for signum in signals:
                    log.info("received %s", signal.Signals(signum).name)
                    stop.set()
                    return

            n.start_soon(on_signal)
            await stop.wait()
            n.cancel_scope.cancel()


def _announce(settings: Settings, rt: Runtime, dev_secret: bool) -> None:
    log.info(
        "Export Center ready at %s (instance %s, transport %s, %d consumer slots)",
        rt.base_url,
        settings.instance_id,
        settings.transport,
        settings.consumer_concurrency if settings.consumer_enabled else 0,
    )
    if dev_secret:
        from web.auth import issue_token

        token = issue_token(
            rt.jwt_secret, user_id=1, tenant_id=0, app_code=AppCode.PLATFORM, perms=DEMO_ADMIN_PERMS
        )
        log.info("demo administrator token (embedded dev secret): %s", token)
