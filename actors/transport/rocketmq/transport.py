"""``RocketMQTransport``: the ``CommandTransport`` over one producer and two push consumers.

Its life cycle (start, send, receive, close) runs on the trio thread; the native clients
are :mod:`~actors.transport.rocketmq.clients`' (created, started and shut down within
bounds, through :mod:`~actors.transport.rocketmq.native` on worker threads), and the
consume callbacks go through :mod:`~actors.transport.rocketmq.bridge` on native threads.
What stays here: the names and switches of one transport, its start and close in order,
sending, receiving, moving a poison command to the dead-letter topic, and the exit hook
that shuts down a transport a crashed program left running.
"""

from __future__ import annotations

import atexit
import logging
import threading
from typing import Any

import trio

from actors.core.command_message import COMMAND_TAG
from actors.core.errors import ConfigError, TransportSendError, TransportStartError
from actors.core.ports.transport import OutgoingMessage
from actors.plumbing.config import Settings
from actors.transport.rocketmq.bridge import CallbackBridge
from actors.transport.rocketmq.clients import NativeClients
from actors.transport.rocketmq.delivery import Decision, RocketMQDelivery, copied_properties
from actors.transport.rocketmq.names import dead_letter_topic, dlq_handler_group, producer_group
from actors.transport.rocketmq.native import ConsumeStatus, NativeClientError, native_core_info

log = logging.getLogger(__name__)

#: Native send timeout in milliseconds: far below the 60 s outbox lease (§7.4).
SEND_TIMEOUT_MS = 3000
#: Upper bound in seconds for each native client's shutdown in ``aclose``.
CLOSE_TIMEOUT_SECONDS = 30.0

# Transports started and not yet closed: an exit hook shuts down what a crashed program left
# running, because native threads calling into a finalising interpreter crash it.
_live: set[RocketMQTransport] = set()
_live_lock = threading.Lock()


class RocketMQTransportError(TransportStartError):
    """The native client could not be created or started (bad group, name server, …)."""


class RocketMQTransport:
    """``CommandTransport`` over RocketMQ: one producer and two push consumers.

    Create it with ``open_rocketmq_transport`` (or call ``start`` and ``aclose``). All
    methods are called from the trio thread; the native callbacks are the only code that
    runs on native threads.

    Args:
        name_server: ``host:port`` of the NameServer(s), ``;``-separated
            (``ROCKETMQ_NAME_SERVER``).
        topic_prefix: ``MQ_TOPIC_PREFIX``; ``""`` in production (§6.2).
        command_topic: the command topic, ``${prefix}file-export-command-v1``.
        worker_group: the worker consumer group, ``${prefix}file-export-worker-v1``.
        consumer_concurrency: native consume threads of the worker consumer
            (``FILE_EXPORT_CONSUMER_CONCURRENCY``, §8.1); each is held while a delivery
            waits for a slot and until the slot acks it.
        max_reconsume_times: redeliveries of a rejected command before the application
            dead-letters it (seed: 2, so the third rejected delivery goes to the DLQ).
        instance_id: ``FILE_EXPORT_INSTANCE_ID``; part of each native client's instance
            name, with the pid and a counter, so no two clients share one native factory.
        close_timeout: upper bound in seconds for each native client's shutdown.
        consume_commands: start the worker consumer. ``False`` for an instance with
            ``FILE_EXPORT_CONSUMER_ENABLED=false`` (ops guide staged switches): a consumer
            that no slot reads would hold the commands it pulls until shutdown.
        consume_dead_letters: start the DLQ handler consumer.
    """

    def __init__(
        self,
        *,
        name_server: str,
        topic_prefix: str,
        command_topic: str,
        worker_group: str,
        consumer_concurrency: int,
        max_reconsume_times: int,
        instance_id: str,
        close_timeout: float = CLOSE_TIMEOUT_SECONDS,
        consume_commands: bool = True,
        consume_dead_letters: bool = True,
    ) -> None:
        if not name_server:
            raise ConfigError("ROCKETMQ_NAME_SERVER must be set for the RocketMQ transport")
        if consumer_concurrency < 1:
            raise ConfigError("FILE_EXPORT_CONSUMER_CONCURRENCY must be at least 1")
        self.name_server = name_server
        self.command_topic = command_topic
        self.worker_group = worker_group
        self.dead_letter_topic = dead_letter_topic(worker_group)
        self.producer_group = producer_group(topic_prefix)
        self.dlq_handler_group = dlq_handler_group(topic_prefix)
        self.consumer_concurrency = consumer_concurrency
        self.max_reconsume_times = max_reconsume_times
        self.instance_id = instance_id
        self.consume_commands = consume_commands
        self.consume_dead_letters = consume_dead_letters
        #: commands moved to the dead-letter topic by this process (§9.4)
        self.dead_lettered = 0

        self._bridge = CallbackBridge(
            read=self._read,
            dead_letter=self._dead_letter,
            max_reconsume_times=max_reconsume_times,
        )
        self._clients = NativeClients(
            instance_id=instance_id, name_server=name_server, close_timeout=close_timeout
        )
        self._count_lock = threading.Lock()
        self._close_started = False
        self._closed = trio.Event()
        self._started = False

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> RocketMQTransport:
        """Build a transport from ``Settings`` (§16.3 names); ``kwargs`` override."""
        values: dict[str, Any] = {
            "name_server": settings.rocketmq_name_server or "",
            "topic_prefix": settings.topic_prefix,
            "command_topic": settings.command_topic,
            "worker_group": settings.worker_group,
            "consumer_concurrency": settings.consumer_concurrency,
            "max_reconsume_times": settings.max_reconsume_times,
            "instance_id": settings.instance_id,
            "consume_commands": bool(settings.consumer_enabled),
        }
        values.update(kwargs)
        return cls(**values)

    # -- life cycle ----------------------------------------------------------------------

    @property
    def blocked_callbacks(self) -> int:
        """Native callbacks currently waiting for trio (hand-over or decision)."""
        return self._bridge.blocked

    @property
    def abandoned(self) -> list[str]:
        """Native clients whose shutdown did not finish within ``close_timeout``."""
        return self._clients.abandoned

    @property
    def started(self) -> bool:
        """Whether ``start`` has succeeded (the native clients run)."""
        return self._started

    async def start(self, consume_commands: bool | None = None) -> None:
        """Create and start the producer, the worker consumer and the DLQ handler consumer.

        Native ``start`` calls run on worker threads. Call ``aclose`` afterwards even when
        this raises. The service does not call this at start-up: its ``TransportLink``
        (``actors.transport.rocketmq.link``) does, once the NameServer routes the topics,
        and again after a failed start (the clients a failed start created are shut down
        first).

        Args:
            consume_commands: start the worker consumer; ``None`` keeps what the
                transport was built with.

        Raises:
            RocketMQTransportError: a native client could not be created or started.
            ModuleNotFoundError: the ``rocketmq`` package is not installed.
        """
        if self._started:
            raise RuntimeError("RocketMQTransport.start() called twice")
        if consume_commands is not None:
            self.consume_commands = consume_commands
        if not self._bridge.bound:
            self._bridge.bind()
        await self._clients.open()  # shuts down what an earlier, failed start left running
        with _live_lock:
            _live.add(self)
        core = native_core_info()
        log.info(
            "RocketMQ native core %s (%s), originTopic in send-back: %s",
            core["version"],
            core["path"],
            core["has_origin_topic"],
        )
        try:
            await self._clients.start_producer(self.producer_group, SEND_TIMEOUT_MS)
            if self.consume_commands:
                await self._start_worker_consumer()
            if self.consume_dead_letters:
                # "*": whatever lands in the DLQ must be handled, whatever its tag.
                await self._clients.start_consumer(
                    "dlq-handler",
                    self.dlq_handler_group,
                    self.dead_letter_topic,
                    "*",
                    1,
                    self._bridge.on_dead_letter,
                )
        except NativeClientError as exc:
            raise RocketMQTransportError(f"RocketMQ client start failed: {exc}") from exc
        self._started = True
        log.info(
            "RocketMQ transport started: name server %s, topic %s, groups %s / %s / %s",
            self.name_server,
            self.command_topic,
            self.producer_group,
            self.worker_group,
            self.dlq_handler_group,
        )

    async def start_command_consumer(self) -> None:
        """Start the worker consumer of a transport that started without it (its
        dead-letter topic was not routed then); the ``TransportLink`` calls this once it
        is. Does nothing when the worker consumer already runs.

        Raises:
            RuntimeError: the transport has not started.
            RocketMQTransportError: the native consumer could not start (tried again at
                the next check).
        """
        if not self._started:
            raise RuntimeError("start the transport first")
        if self.consume_commands:
            return
        try:
            await self._start_worker_consumer()
        except NativeClientError as exc:
            raise RocketMQTransportError(f"RocketMQ worker consumer start failed: {exc}") from exc
        self.consume_commands = True

    async def _start_worker_consumer(self) -> None:
        """Subscribe the worker consumer group to the command topic (``EXPORT_TASK``)."""
        await self._clients.start_consumer(
            "worker",
            self.worker_group,
            self.command_topic,
            COMMAND_TAG,
            self.consumer_concurrency,
            self._bridge.on_command,
        )

    async def aclose(self) -> None:
        """Release blocked callbacks, shut the consumers down, then the producer.

        Idempotent; a second caller waits for the first. Shielded from cancellation so the
        native clients are always shut down before the interpreter exits; each native
        shutdown runs on a worker thread (never on the trio thread, where it would deadlock
        against callbacks waiting for trio) and is abandoned after ``close_timeout``
        seconds, recorded in ``abandoned``. Deliveries not yet acked or rejected go back to
        the broker (``RECONSUME_LATER``): at-least-once, the database absorbs duplicates.
        """
        if self._close_started:
            await self._closed.wait()
            return
        self._close_started = True
        with trio.CancelScope(shield=True):
            outstanding = self._bridge.stop()
            # A callback blocked in the hand-over now fails at once; new ones see closing.
            await self._bridge.close_channels()
            for delivery in outstanding:
                delivery.decide(Decision.RELEASE)
            await self._clients.aclose()
            with _live_lock:
                _live.discard(self)
            self._closed.set()
        log.info("RocketMQ transport closed")

    def _close_at_exit(self) -> None:
        """Blocking close for the exit hook, when trio is gone and ``aclose`` never ran.
        Callbacks waiting for a decision notice the finished run within the bridge's
        liveness poll, so the native shutdowns can join their threads."""
        for delivery in self._bridge.stop():
            delivery.decide(Decision.RELEASE)
        self._clients.close_at_exit()

    # -- CommandTransport --------------------------------------------------------------

    async def send(self, message: OutgoingMessage) -> None:
        """Send one command synchronously (native timeout ``SEND_TIMEOUT_MS``).

        Args:
            message: topic, tag, key (``taskId``), JSON text body and the locating
                properties (§6.4).

        Raises:
            TransportSendError: the broker did not store the message, the body cannot be
                carried (a NUL character) or the transport is closed. The publisher backs
                the outbox row off (§7.4).
        """
        if not self._started or self._bridge.closing:
            raise TransportSendError("RocketMQ transport is not running")
        await trio.to_thread.run_sync(self._send_blocking, message)

    def _send_blocking(self, message: OutgoingMessage) -> None:
        native = self._clients.native
        if "\x00" in message.body:
            # The core takes bodies as NUL-terminated strings; JSON text never has one.
            raise TransportSendError("message body contains a NUL character")
        try:
            receipt = native.send(
                self._clients.producer,
                topic=message.topic,
                tag=message.tag,
                keys=message.key,
                body=message.body.encode("utf-8"),
                properties=message.properties.items(),
            )
        except NativeClientError as exc:
            raise TransportSendError(f"send to {message.topic} failed: {exc}") from exc
        if not receipt.ok:
            # Stored on the master, only a flush/slave guarantee was not confirmed.
            log.warning(
                "send %s to %s returned %s", receipt.message_id, message.topic, receipt.status
            )

    async def receive(self) -> RocketMQDelivery:
        """Wait for the next command delivery (a free consumer slot calls this).

        Before the transport has started, and when it runs without the worker consumer
        (``consume_commands`` false), nothing arrives: the caller waits until cancelled
        (a slot meanwhile claims due tasks from the database).

        Raises:
            trio.ClosedResourceError: the transport is closed.
        """
        return await self._bridge.receive()

    async def receive_dead_letter(self) -> RocketMQDelivery:
        """Wait for the next message on ``%DLQ%<worker group>`` (the DLQ handler).

        Raises:
            trio.ClosedResourceError: the transport is closed.
            RuntimeError: built with ``consume_dead_letters=False``.
        """
        if not self.consume_dead_letters:
            raise RuntimeError("this RocketMQ transport does not consume dead letters")
        return await self._bridge.receive_dead_letter()

    # -- called by the bridge on native callback threads ---------------------------------

    def _read(self, message: int, dead_letter: bool) -> RocketMQDelivery:
        """Copy a native message; its pointer is only valid during the callback."""
        copied = self._clients.native.read_message(message, copied_properties(dead_letter))
        return RocketMQDelivery.from_native(copied, dead_letter=dead_letter)

    def _dead_letter(self, delivery: RocketMQDelivery) -> ConsumeStatus:
        """Move a poison command to ``%DLQ%<worker group>`` (§9.4); runs on the callback's
        native thread. ``CONSUME_SUCCESS`` once the DLQ has it; ``RECONSUME_LATER`` if the
        send fails, so the message comes back and the move is tried again."""
        native = self._clients.native
        keys, tag, body, properties = delivery.dead_letter_copy()
        try:
            receipt = native.send(
                self._clients.producer,
                topic=self.dead_letter_topic,
                tag=tag,
                keys=keys,
                body=body,
                properties=properties,
            )
        except Exception as exc:
            log.error(
                "could not move a poison message to the dead-letter topic; it will be redelivered",
                extra={
                    "messageId": delivery.message_id,
                    "topic": self.dead_letter_topic,
                    "error": str(exc),
                },
            )
            return ConsumeStatus.RECONSUME_LATER
        with self._count_lock:
            self.dead_lettered += 1
        log.error(
            "poison message moved to the dead-letter topic",
            extra={
                "taskId": delivery.properties.get("taskId", "?"),
                "messageId": delivery.message_id,
                "topic": self.dead_letter_topic,
                "deadLetterId": receipt.message_id,
                "deliveries": delivery.reconsume_times + 1,
            },
        )
        return ConsumeStatus.CONSUME_SUCCESS


@atexit.register
def _close_leftover_transports() -> None:
    with _live_lock:
        leftovers = list(_live)
        _live.clear()
    for transport in leftovers:
        log.warning("RocketMQ transport was not closed; shutting it down at exit")
        transport._close_at_exit()
