"""The native clients of one transport: its producer and push consumers, created and
started through the native façade (:mod:`~actors.transport.rocketmq.native`), and shut
down within bounds.

What a transport's life asks of them, kept here:

* every native client gets an instance name of its own (the instance id, the pid and a
  counter), so no two clients share one native factory;
* consumers and their ctypes callbacks stay referenced for the transport's whole life: a
  collected callback segfaults;
* consumers shut down before the producer: their callbacks may still use it (the DLQ path);
* each shutdown runs on a worker thread, never on the trio thread (where it would deadlock
  against callbacks waiting for trio), and is abandoned after ``close_timeout`` seconds,
  recorded in ``abandoned``.

:class:`~actors.transport.rocketmq.transport.RocketMQTransport` drives them: it starts and
closes them with its own life cycle, and sends through the producer and reads the messages
its consume callbacks are given with the native façade of the current start.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
from collections.abc import Callable
from typing import Any

import trio

from actors.transport.rocketmq.native import NativeCallback, NativeClient

log = logging.getLogger(__name__)

_instance_counter = itertools.count(1)


class NativeClients:
    """The producer and push consumers of one transport, and the native façade that made
    them (one per start).

    Args:
        instance_id: ``FILE_EXPORT_INSTANCE_ID``; part of each native client's instance
            name.
        name_server: ``host:port`` of the NameServer(s), ``;``-separated.
        close_timeout: upper bound in seconds for each native client's shutdown.
    """

    def __init__(self, *, instance_id: str, name_server: str, close_timeout: float) -> None:
        self.instance_id = instance_id
        self.name_server = name_server
        self.close_timeout = close_timeout
        #: native clients whose shutdown did not finish within ``close_timeout``
        self.abandoned: list[str] = []
        self._native: NativeClient | None = None
        self._producer: Any = None
        # (label, consumer) in start order; consumers and their ctypes callbacks are kept
        # referenced for the transport's whole life: a collected callback segfaults.
        self._consumers: list[tuple[str, Any]] = []
        self._callbacks: list[Any] = []

    def _instance_name(self, role: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_.-]", "_", self.instance_id) or "export-center"
        return f"{base}-{os.getpid()}-{next(_instance_counter)}-{role}"

    async def open(self) -> None:
        """A native façade for a new start; what an earlier, failed start left running is
        shut down first.

        Raises:
            ModuleNotFoundError: the ``rocketmq`` package is not installed.
        """
        if self._native is not None:
            await self.aclose()  # what an earlier, failed start left running
        self._native = NativeClient()

    async def start_producer(self, group: str, send_timeout_ms: int) -> None:
        """Create the producer of ``group`` and start it (on a worker thread).

        Raises:
            NativeClientError: it could not be created or started.
        """
        native = self._native
        assert native is not None
        self._producer = native.create_producer(
            group,
            self._instance_name("producer"),
            self.name_server,
            send_timeout_ms,
        )
        await trio.to_thread.run_sync(native.start, self._producer)

    async def start_consumer(
        self,
        label: str,
        group: str,
        topic: str,
        expression: str,
        threads: int,
        callback: NativeCallback,
    ) -> None:
        """Create a push consumer of ``group`` on ``topic`` (tags ``expression``) with
        ``threads`` consume threads calling ``callback``, and start it (on a worker
        thread).

        Raises:
            NativeClientError: it could not be created or started.
        """
        native = self._native
        assert native is not None
        consumer = native.create_push_consumer(
            group,
            self._instance_name(label),
            self.name_server,
            threads,
            on_created=lambda created: self._consumers.append((label, created)),
        )
        native_callback = native.make_callback(callback)
        self._callbacks.append(native_callback)
        native.subscribe(consumer, topic, expression, native_callback)
        await trio.to_thread.run_sync(native.start, consumer)

    @property
    def native(self) -> NativeClient:
        """The native façade of this start (once :meth:`open` made it): the transport
        sends through it with :attr:`producer` and reads its callbacks' messages."""
        native = self._native
        assert native is not None
        return native

    @property
    def producer(self) -> Any:
        """The producer, once :meth:`start_producer` created it."""
        return self._producer

    async def aclose(self) -> None:
        """Shut the native clients down (consumers first: their callbacks may still use
        the producer, on the DLQ path) and forget them."""
        native = self._native
        if native is None:
            return
        for label, consumer in reversed(self._consumers):
            await self._run_native_close(label, native.close_consumer, consumer)
        if self._producer is not None:
            await self._run_native_close("producer", native.close_producer, self._producer)
        self._consumers.clear()
        self._producer = None

    def close_at_exit(self) -> None:
        """Blocking shutdown for the exit hook, when trio is gone and ``aclose`` never ran
        (the transport has released the callbacks waiting for a decision first)."""
        native = self._native
        if native is None:
            return
        closers: list[tuple[str, Callable[[Any], None], Any]] = [
            (label, native.close_consumer, consumer) for label, consumer in self._consumers[::-1]
        ]
        if self._producer is not None:
            closers.append(("producer", native.close_producer, self._producer))
        for label, close, client in closers:
            try:
                close(client)
            except Exception:
                log.exception("RocketMQ %s shutdown at exit failed", label)

    async def _run_native_close(self, label: str, fn: Callable[[Any], None], client: Any) -> None:
        with trio.move_on_after(self.close_timeout) as scope:
            try:
                await trio.to_thread.run_sync(fn, client, abandon_on_cancel=True)
            except Exception:
                log.exception("RocketMQ %s shutdown failed", label)
        if scope.cancelled_caught:
            self.abandoned.append(label)
            log.error(
                "RocketMQ %s shutdown not done after %gs; abandoned", label, self.close_timeout
            )
