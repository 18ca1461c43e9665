"""The HTTP server: hypercorn's trio server, hardened per connection, restartable.

Why not plain ``hypercorn.trio.serve``: in hypercorn 0.18.0 (the latest release; upstream
main has the same code) ``TCPServer._close`` calls ``stream.send_eof()`` without taking
the connection's ``send_lock``. When h11 rejects a request — e.g. a malformed chunked body
— while the app is already answering without reading the body, the error response's
``send_all`` meets that ``send_eof`` and raises ``trio.BusyResourceError``. Nothing in
hypercorn catches it: it leaves the connection task, ends ``serve`` and, when the server
ran in the root nursery, the whole process (README, "Hostile HTTP clients").

Two layers remove that class of fault:

* :class:`GuardedTCPServer` closes the race (``send_eof`` under the send lock) and
  contains whatever else a single connection raises: logged with the peer address, the
  connection closed, the server untouched. No input from one client can end the server.
* :class:`WebServer` owns the listening sockets across restarts and the runtime runs it
  under :func:`actors.plumbing.supervisor.supervise` in its own nursery: if the server itself ever
  fails, it is restarted with back-off on the same sockets (connections wait in the
  listen backlog meanwhile), counted in ``export_actor_restarts_total{actor="web"}``, and
  no consumer slot, lease or export notices.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import trio
from hypercorn.config import Config, Sockets
from hypercorn.trio.lifespan import Lifespan
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.typing import ConnectionState, LifespanState
from hypercorn.utils import ShutdownError, raise_shutdown, repr_socket_addr, wrap_app

log = logging.getLogger(__name__)

#: How long closing a connection waits for a send in progress before closing anyway, s.
CLOSE_LOCK_SECONDS = 5.0


class GuardedTCPServer(TCPServer):
    """One HTTP connection, as hypercorn's ``TCPServer`` with two guards.

    1. ``send_eof`` runs under ``send_lock`` like every ``send_all`` (the upstream race),
       so a send and the close never overlap.
    2. Any exception of this connection is logged (WARNING, with the peer) and contained:
       the stream is closed and nothing propagates to the server.
    """

    async def run(self) -> None:
        peer = _peer(self.stream)  # before the socket may be closed
        try:
            await super().run()
        except Exception as exc:
            # One client's connection failed in a way hypercorn did not expect. It must
            # not end the server: log it, make sure the stream is closed, carry on.
            log.warning(
                "HTTP connection from %s failed and was closed: %s",
                peer,
                _describe(exc),
                exc_info=log.isEnabledFor(logging.DEBUG),
            )
            with trio.CancelScope(shield=True):
                await _aclose_quietly(self.stream)

    async def _close(self) -> None:
        holder = self.send_lock.statistics().owner
        if holder is trio.lowlevel.current_task():
            # Called from inside a send (a broken peer during send_all): already serial.
            await super()._close()
            return
        with trio.CancelScope(shield=True):
            with trio.move_on_after(CLOSE_LOCK_SECONDS):
                async with self.send_lock:
                    await super()._close()
                    return
            # A send is stuck on a peer that does not read: closing the stream ends it.
            await _aclose_quietly(self.stream)


async def _aclose_quietly(stream: Any) -> None:
    try:
        await stream.aclose()
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass


def _describe(exc: BaseException) -> str:
    """``Type: message`` of each leaf exception (nurseries wrap them in groups)."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


def _peer(stream: trio.abc.Stream) -> str:
    # Plain HTTP only (TLS ends at the load balancer), but hypercorn types the stream as
    # possibly TLS: anything without a socket is named by what it is.
    if not isinstance(stream, trio.SocketStream):
        return f"a {type(stream).__name__} peer"
    try:
        host, port = stream.socket.getpeername()[:2]
    except OSError:  # the peer is already gone
        return "an unknown peer"
    return f"{host}:{port}"


def _listeners(sockets: Sockets) -> list[trio.SocketListener]:
    # trio closes its listeners when serving ends; each serve gets duplicates so the
    # listening sockets themselves (and connections waiting in their backlog) survive.
    return [
        trio.SocketListener(trio.socket.from_stdlib_socket(sock.dup()))
        for sock in sockets.insecure_sockets
    ]


class WebServer:
    """The service's HTTP server: bind once, serve (and re-serve after a failure).

    Args:
        app: the ASGI app (the Quart app of :func:`web.app.create_app`).
        config: hypercorn settings; only plain-HTTP binds are supported (TLS ends at the
            load balancer, as the deployment guide says).

    :meth:`bind` creates the listening sockets (raises ``OSError`` when the address is
    taken or invalid); :meth:`serve` serves on them until ``shutdown_trigger`` returns and
    may be called again after it failed — the sockets stay open in between.
    """

    def __init__(self, app: Any, config: Config) -> None:
        self.config = config
        self.app = wrap_app(app, config.wsgi_max_body_size, None)
        self._sockets: Sockets | None = None
        self.urls: list[str] = []

    def bind(self) -> list[str]:
        """Open the listening sockets; returns the URLs (``http://host:port``)."""
        self._sockets = self.config.create_sockets()
        for sock in self._sockets.insecure_sockets:
            sock.listen(self.config.backlog)
        self.urls = [
            f"http://{repr_socket_addr(s.family, s.getsockname())}"
            for s in self._sockets.insecure_sockets
        ]
        return self.urls

    def close(self) -> None:
        """Close the listening sockets (after the last :meth:`serve`)."""
        if self._sockets is not None:
            for sock in self._sockets.insecure_sockets:
                sock.close()
            self._sockets = None

    async def serve(
        self,
        shutdown_trigger: Callable[[], Awaitable[Any]],
        *,
        task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve until ``shutdown_trigger()`` returns, then drain for up to
        ``config.graceful_timeout`` seconds. Mirrors ``hypercorn.trio.run.worker_serve``
        with :class:`GuardedTCPServer` and sockets that outlive one call.

        Raises:
            RuntimeError: :meth:`bind` was not called.
            Whatever the server fails with as a whole (the caller supervises).
        """
        if self._sockets is None:
            raise RuntimeError("WebServer.bind() must be called before serve()")
        lifespan_state: LifespanState = {}
        lifespan = Lifespan(self.app, self.config, lifespan_state)
        context = WorkerContext(None)
        listeners = _listeners(self._sockets)
        async with trio.open_nursery() as lifespan_nursery:
            await lifespan_nursery.start(lifespan.handle_lifespan)
            await lifespan.wait_for_startup()
            async with trio.open_nursery() as server_nursery:
                for url in self.urls:
                    log.info("Running on %s", url)
                task_status.started(self.urls)
                try:
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(raise_shutdown, shutdown_trigger)
                        nursery.start_soon(raise_shutdown, context.terminate.wait)
                        nursery.start_soon(
                            partial(
                                trio.serve_listeners,
                                partial(
                                    GuardedTCPServer,
                                    self.app,
                                    self.config,
                                    context,
                                    ConnectionState(lifespan_state.copy()),
                                ),
                                listeners,
                                handler_nursery=server_nursery,
                            )
                        )
                        await trio.sleep_forever()
                except BaseExceptionGroup as group:
                    _, others = group.split((ShutdownError, KeyboardInterrupt))
                    if others is not None:
                        raise others from None
                finally:
                    await context.terminated.set()
                    server_nursery.cancel_scope.deadline = (
                        trio.current_time() + self.config.graceful_timeout
                    )
            await lifespan.wait_for_shutdown()
            lifespan_nursery.cancel_scope.cancel()
