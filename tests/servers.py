"""Servers inside the test: the API app over a store, recording transports, the RocketMQ
test broker, JSON logs, and small WSGI / raw TCP servers on a thread."""

from __future__ import annotations

import importlib.util
import io
import json
import logging
import re
import socket
import socketserver
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from functools import partial

import trio
from hypercorn.config import Config as HypercornConfig
from quart_trio import QuartTrio

from actors.core.definitions import ExportDefinition, Registry
from actors.core.principal import AppCode
from actors.plumbing.logs import LIBRARY_LOGGERS, configure_logging
from actors.plumbing.metrics import Metrics
from actors.plumbing.registry_source import RegistryHolder
from actors.plumbing.wakeup import Wakeup
from actors.storage.local import LocalDirectoryStorage
from db.store import ExportStore
from tests.helpers import REPO
from web.app import create_app
from web.auth import issue_token
from web.dependencies import Dependencies
from web.server import WebServer

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
    user: int = 7,
    perms: tuple[str, ...] = ("platform:customer:export",),
    tenant: int = 0,
    name: str | None = None,
) -> dict[str, str]:
    """The ``Authorization`` header of ``user`` (of ``tenant``, called ``name``) for
    :func:`api_app`."""
    token = issue_token(
        API_SECRET,
        user_id=user,
        tenant_id=tenant,
        app_code=AppCode.PLATFORM,
        perms=perms,
        name=name,
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
) -> tuple[QuartTrio, Dependencies]:
    """The API app over ``store`` and ``storage``, ready (as after start-up), with a
    registry of ``definition`` alone and tokens signed with ``secret``.

    Returns:
        The app (``app.test_client()`` calls it without a server) and its deps
        (``deps.registry`` to change the registry, ``deps.ready`` ...).
    """
    deps = Dependencies(
        store=store,
        storage=storage,
        registry=RegistryHolder(Registry({definition.export_type: definition})),
        metrics=Metrics(),
        wakeup=Wakeup(),
        jwt_secret=secret,
    )
    if runs is not None:
        deps.runs = runs
    deps.ready.set()
    return create_app(deps), deps


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
    """Capture this process's log as JSON lines (``actors.plumbing.logs``, as production).

    Args:
        level: the root level.
        debug_loggers: logger names (dots as ``__``) also set to DEBUG, e.g.
            ``actors__pipeline__provider__client=True``; each must name a module (our
            loggers are named after theirs), so a module moved away fails here instead
            of leaving the test reading a logger nobody writes to.

    Yields:
        A function returning the lines written so far, each parsed (every line must be
        one JSON object). The handler and levels are restored afterwards.
    """
    root = logging.getLogger()
    names = [n.replace("__", ".") for n, on in debug_loggers.items() if on]
    for name in names:
        assert importlib.util.find_spec(name) is not None, f"no module {name}: no logger"
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
