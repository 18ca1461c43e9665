"""Run the service as one nursery tree, and stop it in order.

```
root (signals -> graceful stop)
├── web          supervised HTTP server (web/server.py), stopped through its shutdown trigger
└── actors
    ├── registry     hot reload on file change / SIGHUP
    ├── provider map reload of FILE_EXPORT_PROVIDER_MAP on change (and before each run)
    ├── transport    supervised RocketMQ link: connects, re-checks, reports (not embedded)
    ├── publisher    supervised
    ├── slot ×N      supervised consumer slots
    ├── claim rounds wakes idle slots to claim due tasks from the database
    ├── reconciler   supervised
    ├── dlq handler  supervised
    └── sampler      supervised: queue, outbox and storage gauges, on every instance
```

The services are built beforehand by :mod:`actors.composition`; this module starts them,
waits for SIGTERM/SIGINT or :meth:`Runtime.request_stop`, and stops them with
:func:`stop_in_order`, whose docstring gives the order and the reasons for it.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

import trio

from actors.composition.components import Components, build_components
from actors.composition.database import open_database
from actors.composition.http_server import WEB_GRACEFUL_TIMEOUT_SECONDS
from actors.core.errors import ConfigError, sole_exception
from actors.core.outcomes import AbortReason
from actors.core.ports.storage import ExportStorage
from actors.core.ports.transport import CommandTransport
from actors.core.principal import AppCode
from actors.credentials import write_private
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.plumbing.registry_source import watch_registry
from actors.plumbing.supervisor import supervise
from actors.supervised.consumer import ConsumerSlot
from actors.supervised.reconciler import expire_predecessor_leases
from db.database import Database
from db.sqlite import wall_clock_ms
from db.store import ExportStore

if TYPE_CHECKING:
    from actors.transport.rocketmq.link import TransportLink
    from web.progress_feed import ProgressFeed

log = logging.getLogger(__name__)

DEMO_ADMIN_PERMS = ("platform:customer:export", "platform:download:all")
#: After the grace period, how long aborted exports get to hand their tasks back, seconds.
ABORT_WAIT_SECONDS = 15


@dataclass
class Runtime:
    """Handle to a running service, given to ``nursery.start(serve, …)`` callers."""

    settings: Settings
    urls: list[str]
    store: ExportStore
    storage: ExportStorage
    transport: CommandTransport
    metrics: Metrics
    jwt_secret: str
    stop: trio.Event = field(default_factory=trio.Event)
    slots: list[ConsumerSlot] = field(default_factory=list)
    link: TransportLink | None = None
    #: The one reader of task changes for the progress streams (tests and diagnostics).
    progress_feed: ProgressFeed | None = None

    @property
    def base_url(self) -> str:
        return self.urls[0]

    def request_stop(self) -> None:
        self.stop.set()


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
    c = await build_components(settings, db, instance_clock_ms)
    web_stop = trio.Event()  # hypercorn's shutdown trigger
    try:
        # The embedded bus starts here (nothing to connect); RocketMQ is connected in the
        # background by its link, so a broker outage never stops the start. The finally's
        # aclose() also cleans up a half start.
        if c.link is None:
            await c.transport.start()
        try:
            urls = c.web.bind()
        except (OSError, ValueError) as exc:
            cause = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise ConfigError(
                f"FILE_EXPORT_HTTP_BIND ({settings.http_bind}): cannot listen: {cause}"
            ) from None
        if c.workers is not None:
            await c.workers.fill()  # a worker ready for the first export
        # Before any slot claims: a predecessor's leases (a crash, kill -9) end now.
        await expire_predecessor_leases(c.store, settings)
        async with trio.open_nursery() as root:
            # Supervised like every actor: a failure of the web server restarts it on the
            # same sockets and never cancels the actors beside it (web/server.py).
            root.start_soon(
                partial(supervise, "web", partial(c.web.serve, web_stop.wait), c.metrics)
            )
            if settings.demo_provider:
                from web.demo_provider.data import DEMO_SERVICE

                c.provider_urls.setdefault(DEMO_SERVICE, urls[0])
            rt = Runtime(
                settings,
                urls,
                c.store,
                c.storage,
                c.transport,
                c.metrics,
                c.jwt_secret,
                slots=c.slots,
                link=c.link,
                progress_feed=c.web_deps.progress_feed,
            )
            actors = await root.start(_run_actors, c)
            c.web_deps.ready.set()
            _announce(settings, rt, c.dev_secret)
            task_status.started(rt)
            await _wait_for_stop(rt.stop, install_signal_handlers)
            await stop_in_order(c, actors, web_stop, root.cancel_scope)
    finally:
        c.web.close()
        if c.workers is not None:
            await c.workers.aclose()  # the spare workers: no child outlives the service
        await c.transport.aclose()
    log.info("stopped")


@dataclass
class ActorTree:
    """The running actors' nursery, as :func:`stop_in_order` needs it.

    Attributes:
        scope: cancels every actor.
        slots_done: set once every consumer slot has returned (at once if there are none).
        finished: set once the nursery has exited.
    """

    scope: trio.CancelScope
    slots_done: trio.Event = field(default_factory=trio.Event)
    finished: trio.Event = field(default_factory=trio.Event)


async def _run_actors(c: Components, *, task_status: trio.TaskStatus[ActorTree]) -> None:
    """Run every actor under its supervisor until the tree is cancelled."""
    finished = trio.Event()
    try:
        async with trio.open_nursery() as actors:
            tree = ActorTree(actors.cancel_scope, finished=finished)
            actors.start_soon(
                partial(
                    watch_registry,
                    c.registry,
                    c.registry_path,
                    c.allowed_services,
                    on_reload_failed=lambda err: c.metrics.registry_reload_failures.inc(),
                )
            )
            actors.start_soon(supervise, "provider-map", c.providers.watch, c.metrics)
            if c.link is not None:
                actors.start_soon(supervise, "transport", c.link.run, c.metrics)
            if c.publisher is not None:
                actors.start_soon(supervise, "publisher", c.publisher.run, c.metrics)
            if c.slots:
                actors.start_soon(_run_slots, c.slots, c.metrics, tree.slots_done)
                poll = c.settings.consumer_poll_ms / 1000
                tick = partial(c.rounds.tick, poll)
                actors.start_soon(supervise, "claim-rounds", tick, c.metrics)
            else:
                tree.slots_done.set()
            if c.reconciler is not None:
                actors.start_soon(supervise, "reconciler", c.reconciler.run, c.metrics)
            actors.start_soon(supervise, "dlq-handler", c.dlq_handler.run, c.metrics)
            actors.start_soon(supervise, "sampler", c.sampler.run, c.metrics)
            task_status.started(tree)
    finally:
        finished.set()


async def stop_in_order(
    c: Components, actors: ActorTree, web_stop: trio.Event, root: trio.CancelScope
) -> None:
    """Stop the running service, in the one order that loses no work (SIGTERM/SIGINT).

    1. Stop taking commands: the slots stop receiving and ``/healthz`` answers 503, so a
       load balancer sends traffic elsewhere. Commands not taken stay with the transport
       (and in the outbox), for another instance or the next start.
    2. Let running exports finish within ``FILE_EXPORT_SHUTDOWN_GRACE_SECONDS``: a finished
       file is worth more than a quick exit.
    3. Abort what is still running (``AbortReason.SHUTDOWN``) and give the slots up to
       ``ABORT_WAIT_SECONDS`` to hand their tasks back. A task not handed back keeps its
       lease until it expires; then the reconciler recovers it. Nothing is lost either way.
    4. Cancel the other actors (registry watcher, publisher, reconciler, DLQ handler) and
       wait until they have ended: their state is all in the database, so a cancel loses
       nothing. (Provider connections belong to the runs' worker processes, which ended
       with their runs: none is left open toward this very server's demo Provider.)
    5. Stop the web server through hypercorn's shutdown trigger, never by cancelling it, so
       requests in flight (downloads) complete. It stops after the actors, so ``/healthz``
       and downloads keep answering while exports drain.
    6. Bound the web server's drain to its graceful timeout plus one second: a server
       caught in a restart back-off must not hold the exit.

    Afterwards ``serve`` closes the listening sockets, then the transport last: deliveries
    no one acked go back to the broker, to be delivered again (at-least-once).

    Args:
        c: the running components.
        actors: the actors' nursery.
        web_stop: hypercorn's shutdown trigger.
        root: the scope of the root nursery (the web server and the actors).
    """
    settings = c.settings
    log.info(
        "stopping: no new commands; waiting up to %gs for running exports",
        settings.shutdown_grace_seconds,
    )
    c.stopping.set()
    c.web_deps.stopping = True
    for slot in c.slots:
        slot.stop_receiving()
    with trio.move_on_after(settings.shutdown_grace_seconds):
        await actors.slots_done.wait()
    if not actors.slots_done.is_set():
        log.warning("grace period over: interrupting running exports and handing their tasks back")
        for slot in c.slots:
            if slot.current is not None:
                slot.current.abort(AbortReason.SHUTDOWN)
        with trio.move_on_after(ABORT_WAIT_SECONDS):
            await actors.slots_done.wait()
    actors.scope.cancel()
    await actors.finished.wait()
    web_stop.set()
    root.deadline = trio.current_time() + WEB_GRACEFUL_TIMEOUT_SECONDS + 1


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


#: Where an embedded instance with the dev secret leaves a demo administrator's token,
#: under ``FILE_EXPORT_DATA_DIR``.
DEMO_TOKEN_FILE = "demo-admin-token"


def _announce(settings: Settings, rt: Runtime, dev_secret: bool) -> None:
    log.info(
        "Export Center ready at %s (instance %s, transport %s, %d consumer slots)",
        rt.base_url,
        settings.instance_id,
        settings.transport,
        len(rt.slots),
    )
    if dev_secret:
        from web.auth import issue_token

        token = issue_token(
            rt.jwt_secret, user_id=1, tenant_id=0, app_code=AppCode.PLATFORM, perms=DEMO_ADMIN_PERMS
        )
        # Not in the log: every log line masks tokens (actors/core/text.py), so the one a
        # person needs to sign in waits in a file of their own.
        path = settings.data_dir / DEMO_TOKEN_FILE
        try:
            write_private(path, token + "\n")
        except OSError as exc:
            log.warning("could not write the demo administrator token to %s: %s", path, exc)
        else:
            log.info("demo administrator token (embedded dev secret) written to %s", path)
        log.info("download center: %s/ (sign in with that token)", rt.base_url)
