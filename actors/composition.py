"""Composition: build every component from the settings, before anything runs.

settings → database → store → transport, storage, metrics, registry, Provider client →
the web app and server → the actors (publisher, consumer slots, reconciler, DLQ handler).
Everything is built and checked here, so a configuration error stops the start-up before
any actor or socket exists; :mod:`actors.runtime` then runs what was built as one nursery
tree and stops it in order.

This module and :mod:`actors.runtime` are the composition root: the only code that knows
the concrete classes behind the ports of :mod:`actors.core.ports`, and the only code that
wires ``web`` (imported lazily, so ``export-center migrate`` does not load the web stack).
"""

from __future__ import annotations

import logging
import secrets
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import trio
import trio_asyncio
from hypercorn.config import Config as HypercornConfig

from actors.core.db_retry import DbRetryPolicy
from actors.core.definitions import Registry
from actors.core.errors import ConfigError, RegistryError, sole_exception
from actors.core.health import HealthBoard
from actors.core.ports.storage import ExportStorage
from actors.core.ports.transport import CommandTransport
from actors.credentials import build_token_verifier, provider_service_token, resolve_jwt_secret
from actors.pipeline.provider.client import ProviderClient
from actors.pipeline.runner import ExportRunner
from actors.pipeline.worker.pool import WorkerPool
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.plumbing.provider_map_source import ProviderMapSource, open_provider_map
from actors.plumbing.registry_source import (
    RegistryHolder,
    default_registry_path,
    load_registry_file,
)
from actors.plumbing.wakeup import ClaimRounds, CommitWakeup, Wakeup
from actors.storage.local import LocalDirectoryStorage
from actors.supervised.claim_gate import ClaimGate
from actors.supervised.consumer import ConsumerSlot
from actors.supervised.dlq import DlqHandler
from actors.supervised.local_claims import LocalClaims
from actors.supervised.publisher import Publisher
from actors.supervised.reconciler import Reconciler
from actors.supervised.sampler import GaugeSampler
from actors.transport.embedded import EmbeddedBus
from db.database import Database, DatabaseAccessError, DatabaseUnavailableError
from db.ids import IdGenerator
from db.mysql import MysqlDatabase
from db.sqlite import SqliteDatabase, wall_clock_ms
from db.store import ExportStore

if TYPE_CHECKING:
    from quart_trio import QuartTrio

    from actors.transport.rocketmq.link import TransportLink
    from web.dependencies import Dependencies
    from web.server import WebServer

log = logging.getLogger(__name__)

#: Seconds hypercorn lets in-flight requests finish after its shutdown trigger fired.
WEB_GRACEFUL_TIMEOUT_SECONDS = 5


@dataclass
class Components:
    """Everything the running service is made of, built and checked, nothing started.

    Attributes:
        settings: the validated settings.
        store: the export store over the open database.
        storage: where export files live.
        transport: the command transport, not yet started.
        metrics: this instance's metrics.
        registry: the registry in force, reloaded by the registry watcher.
        registry_path: the registry file the watcher follows.
        allowed_services: Provider services fixed at start; a reload can only pick among
            them.
        provider: the Provider HTTP client.
        providers: where the Provider addresses come from (the map file, watched, or
            the static settings).
        provider_urls: the static base URL of each Provider service
            (``FILE_EXPORT_PROVIDER_URLS``), read by ``provider`` through its map source
            (which answers from ``FILE_EXPORT_PROVIDER_MAP`` first); the demo Provider's is
            added once the server is bound.
        wakeup: the publisher's wake-up, poked by the API after a commit.
        web_deps: what the routes use; ``ready`` / ``stopping`` follow the run.
        web: the HTTP server over the app, not yet bound.
        jwt_secret: the bearer-token secret.
        dev_secret: whether ``jwt_secret`` is the embedded dev secret (then a demo
            administrator token is written to ``<data_dir>/demo-admin-token`` at start).
        stopping: set when consumer slots must stop taking commands.
        publisher: ``None`` when ``FILE_EXPORT_PUBLISHER_ENABLED`` is off.
        slots: the consumer slots; empty when ``FILE_EXPORT_CONSUMER_ENABLED`` is off.
        workers: the spare export worker processes of the slots' runs; ``None`` with
            no slots.
        reconciler: ``None`` when ``FILE_EXPORT_RECONCILER_ENABLED`` is off.
        dlq_handler: the DLQ handler (always on: poison must never pile up).
        sampler: refreshes the queue, outbox and storage gauges (always on: every
            instance reports them).
        health: what the watchers last saw of the database, transport and storage
            (``/healthz/details``).
        rounds: the claim rounds that wake idle slots to claim due tasks from the
            database (every ``FILE_EXPORT_CONSUMER_POLL_MS``, and after a create).
        link: connects and watches the RocketMQ transport; ``None`` for the embedded bus.
    """

    settings: Settings
    store: ExportStore
    storage: ExportStorage
    transport: CommandTransport
    metrics: Metrics
    registry: RegistryHolder
    registry_path: Path
    allowed_services: frozenset[str]
    provider: ProviderClient
    providers: ProviderMapSource
    provider_urls: dict[str, str]
    wakeup: Wakeup
    web_deps: Dependencies
    web: WebServer
    jwt_secret: str
    dev_secret: bool
    stopping: trio.Event
    publisher: Publisher | None
    reconciler: Reconciler | None
    dlq_handler: DlqHandler
    sampler: GaugeSampler
    slots: list[ConsumerSlot] = field(default_factory=list)
    workers: WorkerPool | None = None
    health: HealthBoard = field(default_factory=HealthBoard)
    rounds: ClaimRounds = field(default_factory=ClaimRounds)
    link: TransportLink | None = None


def open_storage(settings: Settings) -> ExportStorage:
    """The export file storage the settings name: the local directory
    (``FILE_EXPORT_STORAGE_DIR``) or the S3-compatible bucket (``FILE_EXPORT_S3_*``; its
    client is imported only then). Nothing is sent to a bucket here: a wrong endpoint or
    credentials show in the storage probe (health, ``export_storage_writable``), not as a
    crash at start.

    Raises:
        ConfigError: the local directory cannot be made.
    """
    config = settings.object_store
    if config is not None:
        from actors.storage.s3 import S3Storage

        return S3Storage(config)
    try:
        return LocalDirectoryStorage(settings.resolved_storage_dir)
    except OSError as exc:
        raise ConfigError(f"FILE_EXPORT_STORAGE_DIR: {exc}") from None


@asynccontextmanager
async def open_database(
    settings: Settings,
    clock_ms: Callable[[], int] | None = None,
    *,
    migrate: bool = False,
) -> AsyncIterator[Database]:
    """Open the database named by ``FILE_EXPORT_DATABASE_URL`` for the block.

    SQLite (embedded) is created and migrated on open. MySQL runs inside a trio-asyncio
    loop opened here as the outermost asyncio context (trio-asyncio requires it); its
    schema is applied by ``export-center migrate`` (``migrate=True``), never implicitly at
    start-up; without ``migrate`` its schema version must be this code's
    (``db.migrations``).

    Args:
        clock_ms: tests only: a DB clock in epoch ms (SQLite's ``db_now_ms()``; MySQL's
            session ``timestamp``). ``None`` = the real clock.

    Raises:
        ConfigError: unsupported or malformed URL, or the database is unreachable.
        SchemaVersionError: (a ConfigError) the schema is newer than this code, or (MySQL)
            older: the message says to run ``export-center migrate``.
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
                else:
                    await mdb.check_schema()  # older or newer than this code: refuse
                yield mdb
            except (DatabaseUnavailableError, DatabaseAccessError) as exc:
                raise ConfigError(f"FILE_EXPORT_DATABASE_URL: {exc}") from None
            finally:
                await mdb.aclose()
    except BaseExceptionGroup as group:
        # trio-asyncio's nursery wraps whatever the block raised; callers expect the
        # plain exception (a ConfigError, or a Cancelled that must keep propagating).
        raise sole_exception(group) from None


def build_transport(settings: Settings) -> CommandTransport:
    """The command transport ``FILE_EXPORT_TRANSPORT`` names, not yet started.

    Nothing here talks to a broker: the RocketMQ transport is connected later, in the
    background, by its ``TransportLink`` (a broker outage never stops the start).

    Raises:
        ConfigError: the RocketMQ settings are missing or malformed (a malformed
            ``ROCKETMQ_NAME_SERVER`` refuses the start; an unreachable one does not).
    """
    if settings.transport == "rocketmq":
        # Imported only in this mode: the native client exists only for Linux x86-64.
        from actors.core.rocketmq.topic_check import parse_name_server
        from actors.transport.rocketmq import RocketMQTransport

        try:
            parse_name_server(settings.rocketmq_name_server or "")
        except ValueError as exc:
            raise ConfigError(f"ROCKETMQ_NAME_SERVER: {exc}") from None
        return RocketMQTransport.from_settings(settings)
    return EmbeddedBus(settings.max_reconsume_times)


def build_transport_link(
    settings: Settings,
    transport: CommandTransport,
    health: HealthBoard,
    metrics: Metrics,
    on_up: Callable[[], None],
) -> TransportLink | None:
    """The actor that connects and watches the RocketMQ transport; ``None`` for the
    embedded bus, which is always up (started by the runtime before anything runs)."""
    if settings.transport != "rocketmq":
        return None
    from actors.transport.rocketmq import RocketMQTransport
    from actors.transport.rocketmq.link import TransportLink

    assert isinstance(transport, RocketMQTransport)
    return TransportLink(
        transport,
        name_server=settings.rocketmq_name_server or "",
        consumer_enabled=bool(settings.consumer_enabled),
        health=health,
        set_gauge=metrics.transport_up.set,
        on_up=on_up,
        check_seconds=settings.transport_check_seconds,
    )


#: The listen backlog of the HTTP server (``hypercorn_config``).
HTTP_BACKLOG = 4096


def hypercorn_config(settings: Settings) -> HypercornConfig:
    """hypercorn's configuration: ``FILE_EXPORT_HTTP_BIND``, our own logging, no access
    log, ``WEB_GRACEFUL_TIMEOUT_SECONDS`` to finish requests after the shutdown trigger."""
    hc = HypercornConfig()
    hc.bind = [settings.http_bind]
    hc.accesslog = None
    hc.errorlog = logging.getLogger("hypercorn.error")
    hc.graceful_timeout = WEB_GRACEFUL_TIMEOUT_SECONDS
    # Connections waiting to be accepted: hypercorn's 100 drops the SYNs of a burst (many
    # pages reconnecting their progress streams after a deploy), and each dropped one
    # waits 1, 3, 7 … s to retry. The kernel caps it at net.core.somaxconn.
    hc.backlog = HTTP_BACKLOG
    return hc


def allowed_services(
    settings: Settings, providers: ProviderMapSource | None = None
) -> frozenset[str]:
    """The Provider services a registry may name, fixed at start (docs/design-rules.md §10.3):
    those of ``FILE_EXPORT_PROVIDER_MAP`` or ``FILE_EXPORT_PROVIDER_URLS``, plus the demo
    Provider's service when it is mounted.

    Args:
        providers: the source built at start; ``None`` reads the settings' (blocking IO).

    Raises:
        ConfigError: see :func:`actors.plumbing.provider_map_source.open_provider_map`.
    """
    from web.demo_provider.data import DEMO_SERVICE

    if providers is None:
        providers = open_provider_map(settings)
    demo = {DEMO_SERVICE} if settings.demo_provider else set()
    return providers.services | demo


def read_registry(settings: Settings, allowed: frozenset[str] | None = None) -> Registry:
    """The registry file in force (``FILE_EXPORT_REGISTRY``, else the built-in demo one),
    read and validated as at start-up. Blocking IO.

    Args:
        allowed: the Provider allowlist; ``None``: :func:`allowed_services`.

    Raises:
        ConfigError: the file is unreadable or breaks a rule; the message names the file.
    """
    registry_path = Path(settings.registry or default_registry_path())
    if allowed is None:
        allowed = allowed_services(settings)
    try:
        return load_registry_file(registry_path, allowed)
    except RegistryError as exc:
        raise ConfigError(f"FILE_EXPORT_REGISTRY ({registry_path}): {exc}") from None


async def build_components(
    settings: Settings, db: Database, instance_clock_ms: Callable[[], int]
) -> Components:
    """Build every service over an open database; start nothing.

    Also checks what must hold before the service starts: the guard row exists, the
    storage directory is usable, the registry file is valid, the secrets are set. In
    embedded mode it first re-queues the commands the previous process's in-memory bus
    held (they died with it).

    Args:
        settings: validated settings.
        db: the open database (see :func:`open_database`).
        instance_clock_ms: this process's clock, epoch ms; it only labels ids and
            ``occurredAt``, never schedules (every time decision uses the DB clock).

    Raises:
        ConfigError: invalid configuration or missing guard row; nothing was started. The
            message bus is not asked anything here: an outage never stops the start.
    """
    from web.app import create_app
    from web.demo_provider.app import create_demo_provider_blueprint
    from web.dependencies import Dependencies
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
    storage = open_storage(settings)
    metrics = Metrics()
    providers = open_provider_map(settings, lambda err: metrics.provider_map_reload_failures.inc())
    allowed = allowed_services(settings, providers)
    registry_path = Path(settings.registry or default_registry_path())
    registry = RegistryHolder(read_registry(settings, allowed))
    jwt_secret, dev_secret = resolve_jwt_secret(settings)
    verifier = build_token_verifier(settings, jwt_secret)
    service_token = provider_service_token(settings)
    provider_urls = providers.static_urls  # the runtime adds the demo Provider's, once bound
    provider = ProviderClient(
        providers,
        service_token,
        request_timeout=settings.provider_request_timeout_seconds,
        observer=metrics,
    )
    transport = build_transport(settings)
    health = HealthBoard()
    wakeup = Wakeup()
    rounds = ClaimRounds()
    link = build_transport_link(settings, transport, health, metrics, wakeup.set)
    bus_up: Callable[[], bool] = (lambda: link.up) if link is not None else (lambda: True)
    local = LocalClaims()  # what this process's slots hold; shared with its reconciler
    web_deps = Dependencies(
        store=store,
        storage=storage,
        registry=registry,
        metrics=metrics,
        # after a create or retry commits: the publisher sends; while the bus is down,
        # idle slots claim it from the database at once
        wakeup=CommitWakeup(wakeup, rounds, bus_up),
        health=health,
        jwt_secret=jwt_secret,
        verifier=verifier,
        runs=local,  # the API wakes this process's run of a task it cancels
        cookie_secure=settings.cookie_secure,
        progress_poll_seconds=settings.progress_poll_seconds,
        create_limits=settings.create_limits,
        metrics_token=settings.metrics_token,
        progress_stream_limits=settings.progress_stream_limits,
        download_url_seconds=(
            settings.download_url_seconds if settings.download_mode == "redirect" else None
        ),
    )
    blueprints = []
    if settings.demo_provider:
        blueprints.append(
            create_demo_provider_blueprint(
                service_token=service_token, snapshot_secret=secrets.token_bytes(32)
            )
        )
    app: QuartTrio = create_app(web_deps, extra_blueprints=blueprints)

    stopping = trio.Event()
    slots: list[ConsumerSlot] = []
    workers: WorkerPool | None = None
    if settings.consumer_enabled:
        workers = WorkerPool(
            nice=settings.worker_nice,
            sched_idle=settings.worker_sched_idle,
            object_store=settings.object_store is not None,
        )
        runner = ExportRunner(store, provider, registry, settings, workers)
        gate = ClaimGate(store, settings)  # one per instance: fair share
        slots = [
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
                rounds=rounds,
            )
            for i in range(settings.consumer_concurrency)
        ]
    return Components(
        settings=settings,
        store=store,
        storage=storage,
        transport=transport,
        metrics=metrics,
        registry=registry,
        registry_path=registry_path,
        allowed_services=allowed,
        provider=provider,
        providers=providers,
        provider_urls=provider_urls,
        wakeup=wakeup,
        web_deps=web_deps,
        web=WebServer(app, hypercorn_config(settings)),
        jwt_secret=jwt_secret,
        dev_secret=dev_secret,
        stopping=stopping,
        publisher=(
            Publisher(
                store,
                transport,
                settings,
                metrics,
                wakeup,
                transport_up=bus_up,
            )
            if settings.publisher_enabled
            else None
        ),
        reconciler=(
            Reconciler(store, storage, settings, metrics, local=local)
            if settings.reconciler_enabled
            else None
        ),
        dlq_handler=DlqHandler(store, transport, metrics),
        sampler=GaugeSampler(
            store, storage, registry, metrics, settings.metrics_sample_seconds, health
        ),
        slots=slots,
        workers=workers,
        health=health,
        rounds=rounds,
        link=link,
    )
