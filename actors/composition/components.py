"""The whole service over an open database, built and checked, nothing started:
:class:`Components`, made by :func:`build_components` from the pieces of its sibling
modules (the storage and transport adapters, the registry, hypercorn's configuration) and
the actors, the Provider client, the web app and its server.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from actors.composition.adapters import build_transport, build_transport_link, open_storage
from actors.composition.http_server import hypercorn_config
from actors.composition.registry import allowed_services, read_registry
from actors.composition.tokens import build_openid, build_token_verifier
from actors.core.db_retry import DbRetryPolicy
from actors.core.health import Component, HealthBoard
from actors.core.ports.storage import ExportStorage
from actors.core.ports.transport import CommandTransport
from actors.credentials import provider_service_token, resolve_jwt_secret
from actors.pipeline.provider.client import ProviderClient
from actors.pipeline.runner import ExportRunner
from actors.pipeline.worker.pool import WorkerPool
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.plumbing.provider_map_source import ProviderMapSource, open_provider_map
from actors.plumbing.registry_source import RegistryHolder, default_registry_path
from actors.plumbing.wakeup import ClaimRounds, CommitWakeup, Wakeup
from actors.supervised.claim_gate import ClaimGate
from actors.supervised.consumer import ConsumerSlot
from actors.supervised.dlq import DlqHandler
from actors.supervised.local_claims import LocalClaims
from actors.supervised.publisher import Publisher
from actors.supervised.reconciler import Reconciler
from actors.supervised.sampler import GaugeSampler
from db.database import Database
from db.ids import IdGenerator
from db.store import ExportStore

if TYPE_CHECKING:
    from quart_trio import QuartTrio

    from actors.transport.rocketmq.link import TransportLink
    from web.dependencies import Dependencies
    from web.server import WebServer

log = logging.getLogger(__name__)


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
        db: the open database (see :func:`actors.composition.database.open_database`).
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
        openid=build_openid(settings),
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
        # One per instance: fair share, and no claim while the storage is not known to work.
        gate = ClaimGate(store, settings, lambda: health.get(Component.STORAGE).up is True)
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
            store,
            storage,
            registry,
            metrics,
            settings.metrics_sample_seconds,
            health,
            on_storage_up=rounds.set,  # claims paused for the storage resume at once
        ),
        slots=slots,
        workers=workers,
        health=health,
        rounds=rounds,
        link=link,
    )
