"""A TCP relay the test can cut and heal: a service reaches a real server (the S3 server,
MariaDB) through it, and the test takes that server away from the service without
stopping it for anyone else.

Cut, every open connection through the relay is closed and each new one is closed as soon
as it is accepted: to the service the server is unreachable. Frozen, nothing crosses any
more and nothing is closed — a new connection is accepted and never answered, an open one
goes silent: the server is behind a link that drops packets. Healed, connections go
through again. It runs in the test's trio loop on 127.0.0.1; what crosses it is not
touched. (Partitions between hosts use network namespaces and netfilter: ``tests/hosts``.)
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator

import trio


class TcpRelay:
    """The relay's state, as :func:`tcp_relay` yields it.

    Attributes:
        port: where it listens (127.0.0.1).
        accepted: connections accepted so far.
    """

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self.accepted = 0
        self._cut = False
        self._frozen = False
        self._open: set[trio.CancelScope] = set()

    def cut(self) -> None:
        """Close every connection through the relay, and each new one at once."""
        self._cut = True
        for scope in list(self._open):
            scope.cancel()

    def freeze(self) -> None:
        """Forward nothing and close nothing: every connection, open or new, goes silent."""
        self._frozen = True

    def heal(self) -> None:
        """Let connections through again (a connection frozen meanwhile stays silent)."""
        self._cut = False
        self._frozen = False

    async def _serve(self, client: trio.SocketStream) -> None:
        self.accepted += 1
        async with client:
            if self._cut:
                return
            if self._frozen:
                await trio.sleep_forever()
            try:
                server = await trio.open_tcp_stream(*self.target)
            except OSError:
                return
            async with server, trio.open_nursery() as nursery:
                self._open.add(nursery.cancel_scope)
                nursery.start_soon(self._pump, client, server, nursery.cancel_scope)
                nursery.start_soon(self._pump, server, client, nursery.cancel_scope)
            self._open.discard(nursery.cancel_scope)

    async def _pump(
        self, source: trio.SocketStream, sink: trio.SocketStream, scope: trio.CancelScope
    ) -> None:
        """Copy ``source`` to ``sink`` until either side ends; then end the connection."""
        try:
            async for chunk in source:
                if self._frozen:
                    await trio.sleep_forever()  # the link drops it: silence, no close
                await sink.send_all(chunk)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            scope.cancel()


@contextlib.asynccontextmanager
async def tcp_relay(host: str, port: int) -> AsyncIterator[TcpRelay]:
    """Relay 127.0.0.1:<free port> to ``host:port`` until the block ends."""
    relay = TcpRelay((host, port))
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, relay._serve, 0, host="127.0.0.1")
        )
        relay.port = listeners[0].socket.getsockname()[1]
        try:
            yield relay
        finally:
            nursery.cancel_scope.cancel()
