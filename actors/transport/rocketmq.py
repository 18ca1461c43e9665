"""The RocketMQ command transport (seed §6, §8.1, §9.4) on the Remoting protocol.

It implements ``actors.core.ports.CommandTransport`` with PyPI ``rocketmq`` 0.4.4, whose
wheel bundles the 2018 C++ client core (``librocketmq.so``). Names follow §6.2 with
``MQ_TOPIC_PREFIX``:

============================  =============================================
topic                         ``${prefix}file-export-command-v1``, tag ``EXPORT_TASK``
producer group                ``${prefix}file-export-publisher-v1``
worker consumer group         ``${prefix}file-export-worker-v1`` (clustering)
dead-letter topic             ``%DLQ%${prefix}file-export-worker-v1``
DLQ handler consumer group    ``${prefix}file-export-dlq-handler-v1``
============================  =============================================

Threading model (the hazards are in ``ROCKETMQ.md``):

* ``send`` runs the blocking native send on a worker thread (``trio.to_thread``) with a
  3000 ms native timeout, below the outbox lease (§7.4).
* Push-consumer callbacks run on native threads. A callback copies everything it needs out
  of the message (the pointer dies when it returns), hands a delivery to trio through an
  unbuffered channel with ``trio.from_thread.run`` and then blocks until the trio side has
  called ``ack()`` or ``reject()``. So a native thread is held only until a free consumer
  slot has taken the delivery and acked it right after its claim (DESIGN §3, ack early),
  and slots, not the native thread pool, are the backpressure.
* The callback never raises: the 0.4.4 wrapper's ``subscribe`` would re-raise inside the
  ctypes callback and leave the returned status undefined, so our own callback is
  registered directly and returns ``CONSUME_SUCCESS`` or ``RECONSUME_LATER`` itself.

Poison messages are dead-lettered by the application, not the broker: the old core cannot
set ``maxReconsumeTimes`` and does not send ``originTopic`` in its send-back, which broker
5.x's own DLQ branch expects. Observed with broker 5.3.1: once ``retryMaxTimes`` is reached,
``consumerSendMsgBack`` fails with a NullPointerException (``TopicValidator.isSystemTopic``
on the missing topic), the core still advances the offset, and the message is lost, in
neither the retry nor the DLQ topic. When a delivery is rejected for the third time (seed
``maxReconsumeTimes`` = 2, §8.1), the callback sends its body and properties to
``%DLQ%<worker group>`` and returns ``CONSUME_SUCCESS``; the broker's ``retryMaxTimes`` for
the worker group is provisioned well above 2, so its own branch is never reached first.
"""

from __future__ import annotations

import atexit
import enum
import importlib.util
import itertools
import logging
import os
import re
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import trio

from actors.config import Settings
from actors.core.dead_letter import goes_to_dead_letter
from actors.core.errors import ConfigError, TransportSendError, TransportStartError
from actors.core.models import COMMAND_TAG, LOCATING_PROPERTIES
from actors.core.ports import OutgoingMessage

log = logging.getLogger("actors.transport.rocketmq")

#: Native send timeout in milliseconds: far below the 60 s outbox lease (§7.4).
SEND_TIMEOUT_MS = 3000
#: Upper bound in seconds for each native client's shutdown in ``aclose``.
CLOSE_TIMEOUT_SECONDS = 30.0
#: How often (seconds) a blocked native callback checks that the trio run still exists.
_LIVENESS_POLL_SECONDS = 1.0

#: Diagnostic properties the application DLQ path adds to a dead-lettered message.
PROP_ORIGIN_MESSAGE_ID = "dlqOriginMessageId"
PROP_ORIGIN_TOPIC = "dlqOriginTopic"
PROP_RECONSUME_TIMES = "dlqReconsumeTimes"
PROP_EMPTY_BODY = "dlqEmptyBody"
_DEAD_LETTER_PROPERTIES = (
    PROP_ORIGIN_MESSAGE_ID,
    PROP_ORIGIN_TOPIC,
    PROP_RECONSUME_TIMES,
    PROP_EMPTY_BODY,
)
#: RocketMQ's system property naming the original topic of a retried message.
_RETRY_TOPIC_PROPERTY = "RETRY_TOPIC"

_instance_counter = itertools.count(1)

# Transports started and not yet closed: an exit hook shuts down what a crashed program left
# running, because native threads calling into a finalising interpreter crash it.
_live: set[RocketMQTransport] = set()
_live_lock = threading.Lock()


class RocketMQTransportError(TransportStartError):
    """The native client could not be created or started (bad group, name server, …)."""


class ConsumeStatus(enum.IntEnum):
    """Return values of a native push-consumer callback (the C enum ``CConsumeStatus``).

    ``rocketmq`` 0.4.4 exports no public name for it (only ``rocketmq.ffi._CConsumeStatus``).
    """

    CONSUME_SUCCESS = 0
    RECONSUME_LATER = 1


class _Decision(enum.Enum):
    ACK = "ack"
    REJECT = "reject"
    RELEASE = "release"  # the transport is closing: give the message back to the broker


def producer_group(topic_prefix: str) -> str:
    """The producer group of §6.2, e.g. ``test-file-export-publisher-v1``."""
    return f"{topic_prefix}file-export-publisher-v1"


def dlq_handler_group(topic_prefix: str) -> str:
    """The DLQ handler's consumer group (§9.4.2), e.g. ``test-file-export-dlq-handler-v1``."""
    return f"{topic_prefix}file-export-dlq-handler-v1"


def dead_letter_topic(worker_group: str) -> str:
    """RocketMQ's dead-letter topic of a consumer group: ``%DLQ%<group>`` (§9.4.3)."""
    return f"%DLQ%{worker_group}"


def native_core_info() -> dict[str, Any]:
    """Describe the native core bundled in the installed ``rocketmq`` package.

    Reads the file without loading it, so it also works where the library cannot load.

    Returns:
        ``path`` (str) of ``librocketmq.so`` inside the package, ``exists`` (bool),
        ``size_bytes`` (int, 0 if missing), ``has_origin_topic`` (bool: the byte string
        ``b"originTopic"`` occurs in it, i.e. its send-back can carry the field broker
        5.x's DLQ branch reads), ``has_max_reconsume_times`` (bool, same for
        ``b"maxReconsumeTimes"``), and ``version`` / ``build_date`` (str or ``None``) from
        the core's embedded ``VERSION: …, BUILD DATE: …`` banner.

    Raises:
        ModuleNotFoundError: the ``rocketmq`` package is not installed.
    """
    spec = importlib.util.find_spec("rocketmq")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the 'rocketmq' package (PyPI rocketmq==0.4.4) is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "librocketmq.so"
    data = path.read_bytes() if path.is_file() else b""
    banner = re.search(rb"VERSION: ([0-9][0-9.]*), BUILD DATE: ([0-9-]+)", data)
    return {
        "path": str(path),
        "exists": path.is_file(),
        "size_bytes": len(data),
        "has_origin_topic": b"originTopic" in data,
        "has_max_reconsume_times": b"maxReconsumeTimes" in data,
        "version": banner.group(1).decode() if banner else None,
        "build_date": banner.group(2).decode() if banner else None,
    }


def _client_api() -> SimpleNamespace:
    """Import the native client lazily: only the RocketMQ mode needs it, and its wheel
    exists only for Linux x86-64."""
    from rocketmq import client, exceptions, ffi

    return SimpleNamespace(
        Producer=client.Producer,
        PushConsumer=client.PushConsumer,
        Message=client.Message,
        RecvMessage=client.RecvMessage,
        SendStatus=client.SendStatus,
        MessageModel=ffi.MessageModel,
        MSG_CALLBACK_FUNC=ffi.MSG_CALLBACK_FUNC,
        dll=ffi.dll,
        ffi_check=exceptions.ffi_check,
        RocketMQException=exceptions.RocketMQException,
    )


def _text(value: bytes | str | None) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


class RocketMQDelivery:
    """One delivery from a RocketMQ push consumer; see ``actors.core.ports.Delivery``.

    Every field is a copy made on the native callback thread. ``ack`` / ``reject`` only
    record the decision and wake that thread, which returns the consume status; the first
    decision wins and later calls are no-ops.

    Attributes:
        body: the message body as text (bodies are NUL-terminated JSON, ROCKETMQ.md).
        properties: the locating properties present on the message (§6.4); a dead-letter
            delivery also carries the ``dlq*`` diagnostic properties.
        reconsume_times: earlier deliveries of this message (0 on the first); for a
            dead-letter delivery, the count the message had when it was dead-lettered.
        message_id: the broker message id; for a dead-letter delivery, the id of the
            original command message, so it matches the worker's logs.
        topic: the topic it was delivered from.
    """

    __slots__ = (
        "body",
        "properties",
        "reconsume_times",
        "message_id",
        "topic",
        "_raw_body",
        "_tag",
        "_keys",
        "_settled",
        "_decision",
        "_lock",
    )

    def __init__(
        self,
        *,
        body: str,
        properties: Mapping[str, str],
        reconsume_times: int,
        message_id: str,
        topic: str,
        raw_body: bytes,
        tag: str,
        keys: str,
    ) -> None:
        self.body = body
        self.properties: Mapping[str, str] = dict(properties)
        self.reconsume_times = reconsume_times
        self.message_id = message_id
        self.topic = topic
        self._raw_body = raw_body
        self._tag = tag
        self._keys = keys
        self._settled = threading.Event()
        self._decision: _Decision | None = None
        self._lock = threading.Lock()

    def _decide(self, decision: _Decision) -> bool:
        """Record ``decision`` unless one was made already; thread-safe. Returns whether it
        was recorded."""
        with self._lock:
            if self._decision is not None:
                return False
            self._decision = decision
        self._settled.set()
        return True

    @property
    def settled(self) -> bool:
        """Whether ``ack``, ``reject`` or the closing transport has decided this delivery."""
        return self._decision is not None

    async def ack(self) -> None:
        """Consumed: the callback returns ``CONSUME_SUCCESS`` and the offset advances."""
        self._decide(_Decision.ACK)

    async def reject(self) -> None:
        """Reconsume later (§6.4: an undecodable body). The broker redelivers with
        ``reconsume_times + 1``; at the limit the transport dead-letters the message
        itself. On the dead-letter channel this only asks for a redelivery (§9.4.3)."""
        self._decide(_Decision.REJECT)


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
        self.close_timeout = close_timeout
        self.consume_commands = consume_commands
        self.consume_dead_letters = consume_dead_letters
        #: commands moved to the dead-letter topic by this process (§9.4)
        self.dead_lettered = 0
        #: native clients whose shutdown did not finish within ``close_timeout``
        self.abandoned: list[str] = []

        # Unbuffered: a native thread stays in its callback until a slot takes the delivery.
        self._commands_send, self._commands_recv = trio.open_memory_channel[RocketMQDelivery](0)
        self._dead_send, self._dead_recv = trio.open_memory_channel[RocketMQDelivery](0)
        self._api: SimpleNamespace | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._producer: Any = None
        # (label, consumer) in start order; consumers and their ctypes callbacks are kept
        # referenced for the transport's whole life: a collected callback segfaults.
        self._consumers: list[tuple[str, Any]] = []
        self._callbacks: list[Any] = []
        self._state_lock = threading.Lock()
        self._closing = False
        self._outstanding: set[RocketMQDelivery] = set()
        self._blocked = 0
        self._close_started = False
        self._closed = trio.Event()

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
        return self._blocked

    def _instance_name(self, role: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_.-]", "_", self.instance_id) or "export-center"
        return f"{base}-{os.getpid()}-{next(_instance_counter)}-{role}"

    async def start(self) -> None:
        """Create and start the producer, the worker consumer and the DLQ handler consumer.

        Native ``start`` calls run on worker threads. Call ``aclose`` afterwards even when
        this raises.

        Raises:
            RocketMQTransportError: a native client could not be created or started.
            ModuleNotFoundError: the ``rocketmq`` package is not installed.
        """
        if self._token is not None:
            raise RuntimeError("RocketMQTransport.start() called twice")
        self._token = trio.lowlevel.current_trio_token()
        api = self._api = _client_api()
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
            producer = api.Producer(self.producer_group, timeout=SEND_TIMEOUT_MS)
            # 0.4.4 has no Python method for this; the C function exists in the core.
            api.ffi_check(
                api.dll.SetProducerInstanceName(
                    producer._handle, self._instance_name("producer").encode()
                )
            )
            producer.set_namesrv_addr(self.name_server)
            self._producer = producer
            await trio.to_thread.run_sync(producer.start)
            if self.consume_commands:
                await self._start_consumer(
                    "worker",
                    self.worker_group,
                    self.command_topic,
                    COMMAND_TAG,
                    self.consumer_concurrency,
                    self._on_command,
                )
            if self.consume_dead_letters:
                # "*": whatever lands in the DLQ must be handled, whatever its tag.
                await self._start_consumer(
                    "dlq-handler",
                    self.dlq_handler_group,
                    self.dead_letter_topic,
                    "*",
                    1,
                    self._on_dead_letter,
                )
        except api.RocketMQException as exc:
            raise RocketMQTransportError(f"RocketMQ client start failed: {exc}") from exc
        log.info(
            "RocketMQ transport started: name server %s, topic %s, groups %s / %s / %s",
            self.name_server,
            self.command_topic,
            self.producer_group,
            self.worker_group,
            self.dlq_handler_group,
        )

    async def _start_consumer(
        self,
        label: str,
        group: str,
        topic: str,
        expression: str,
        threads: int,
        callback: Callable[[int | None, int | None], int],
    ) -> None:
        api = self._api
        assert api is not None
        consumer = api.PushConsumer(group, message_model=api.MessageModel.CLUSTERING)
        self._consumers.append((label, consumer))
        consumer.set_namesrv_addr(self.name_server)
        consumer.set_instance_name(self._instance_name(label))
        consumer.set_thread_count(threads)
        consumer.set_message_batch_max_size(1)  # §8.1 consumeMessageBatchMaxSize = 1
        # Not PushConsumer.subscribe: its wrapper re-raises inside the ctypes callback.
        api.ffi_check(api.dll.Subscribe(consumer._handle, topic.encode(), expression.encode()))
        native_callback = api.MSG_CALLBACK_FUNC(callback)
        self._callbacks.append(native_callback)
        api.ffi_check(api.dll.RegisterMessageCallback(consumer._handle, native_callback))
        await trio.to_thread.run_sync(consumer.start)

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
            outstanding = self._stop_callbacks()
            # A callback blocked in the hand-over now fails at once; new ones see _closing.
            await self._commands_recv.aclose()
            await self._dead_recv.aclose()
            for delivery in outstanding:
                delivery._decide(_Decision.RELEASE)
            # Consumers first: their callbacks may still use the producer (DLQ path).
            for label, consumer in reversed(self._consumers):
                await self._run_native_close(label, self._close_consumer, consumer)
            if self._producer is not None:
                await self._run_native_close("producer", self._close_producer, self._producer)
            with _live_lock:
                _live.discard(self)
            self._closed.set()
        log.info("RocketMQ transport closed")

    def _stop_callbacks(self) -> list[RocketMQDelivery]:
        """Make every later callback return ``RECONSUME_LATER`` at once; returns the
        deliveries handed to trio and not yet decided."""
        with self._state_lock:
            self._closing = True
            return list(self._outstanding)

    def _close_at_exit(self) -> None:
        """Blocking close for the exit hook, when trio is gone and ``aclose`` never ran.
        Callbacks waiting for a decision notice the finished run within
        ``_LIVENESS_POLL_SECONDS``, so the native shutdowns can join their threads."""
        for delivery in self._stop_callbacks():
            delivery._decide(_Decision.RELEASE)
        closers: list[tuple[str, Callable[[Any], None], Any]] = [
            (label, self._close_consumer, consumer) for label, consumer in self._consumers[::-1]
        ]
        if self._producer is not None:
            closers.append(("producer", self._close_producer, self._producer))
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

    def _close_consumer(self, consumer: Any) -> None:
        api = self._api
        assert api is not None
        if consumer._handle is None:
            return
        consumer.shutdown()
        # Destroy here, on this worker thread, and clear the handle so the wrapper's
        # __del__ (shutdown + destroy) cannot run later on the trio thread or at exit.
        handle, consumer._handle = consumer._handle, None
        api.ffi_check(api.dll.DestroyPushConsumer(handle))

    def _close_producer(self, producer: Any) -> None:
        api = self._api
        assert api is not None
        if producer._handle is None:
            return
        producer.shutdown()
        handle, producer._handle = producer._handle, None
        api.ffi_check(api.dll.DestroyProducer(handle))

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
        if self._producer is None or self._closing:
            raise TransportSendError("RocketMQ transport is not running")
        await trio.to_thread.run_sync(self._send_blocking, message)

    def _send_blocking(self, message: OutgoingMessage) -> None:
        api = self._api
        assert api is not None
        if "\x00" in message.body:
            # The core takes bodies as NUL-terminated strings; JSON text never has one.
            raise TransportSendError("message body contains a NUL character")
        native = api.Message(message.topic)
        native.set_keys(message.key)
        native.set_tags(message.tag)
        native.set_body(message.body.encode("utf-8"))
        for name, value in message.properties.items():
            native.set_property(name, value)
        try:
            result = self._producer.send_sync(native)
        except api.RocketMQException as exc:
            raise TransportSendError(f"send to {message.topic} failed: {exc}") from exc
        if result.status != api.SendStatus.OK:
            # Stored on the master, only a flush/slave guarantee was not confirmed.
            log.warning("send %s to %s returned %s", result.msg_id, message.topic, result.status)

    async def receive(self) -> RocketMQDelivery:
        """Wait for the next command delivery (a free consumer slot calls this).

        Raises:
            trio.ClosedResourceError: the transport is closed.
            RuntimeError: built with ``consume_commands=False``.
        """
        if not self.consume_commands:
            raise RuntimeError("this RocketMQ transport does not consume commands")
        return await self._commands_recv.receive()

    async def receive_dead_letter(self) -> RocketMQDelivery:
        """Wait for the next message on ``%DLQ%<worker group>`` (the DLQ handler).

        Raises:
            trio.ClosedResourceError: the transport is closed.
            RuntimeError: built with ``consume_dead_letters=False``.
        """
        if not self.consume_dead_letters:
            raise RuntimeError("this RocketMQ transport does not consume dead letters")
        return await self._dead_recv.receive()

    # -- native callbacks (native threads) -----------------------------------------------

    def _on_command(self, _consumer: int | None, message: int | None) -> int:
        return self._callback(message, dead_letter=False)

    def _on_dead_letter(self, _consumer: int | None, message: int | None) -> int:
        return self._callback(message, dead_letter=True)

    def _callback(self, message: int | None, *, dead_letter: bool) -> int:
        # Never raise: an exception escaping a ctypes callback leaves the status undefined.
        try:
            return int(self._consume(message, dead_letter))
        except BaseException:
            try:
                log.exception("RocketMQ consume callback failed; reconsuming later")
            except BaseException:
                pass
            return int(ConsumeStatus.RECONSUME_LATER)

    def _consume(self, message: int | None, dead_letter: bool) -> ConsumeStatus:
        if self._closing or message is None:
            return ConsumeStatus.RECONSUME_LATER
        delivery = self._copy(message, dead_letter)
        with self._state_lock:
            if self._closing:
                return ConsumeStatus.RECONSUME_LATER
            self._outstanding.add(delivery)
            self._blocked += 1
        try:
            channel = self._dead_send if dead_letter else self._commands_send
            try:
                trio.from_thread.run(_hand_over, channel, delivery, trio_token=self._token)
            except BaseException as exc:
                # The transport is closing (channel closed) or the trio run is gone.
                if isinstance(exc, trio.RunFinishedError):
                    self._stop_callbacks()  # no trio any more: stop trying at once
                log.info(
                    "delivery %s not handed over (%r); reconsume later", delivery.message_id, exc
                )
                return ConsumeStatus.RECONSUME_LATER
            decision = self._wait_for_decision(delivery)
        finally:
            with self._state_lock:
                self._outstanding.discard(delivery)
                self._blocked -= 1
        if decision is _Decision.ACK:
            return ConsumeStatus.CONSUME_SUCCESS
        if decision is _Decision.REJECT and not dead_letter:
            if goes_to_dead_letter(delivery.reconsume_times, self.max_reconsume_times):
                return self._dead_letter(delivery)
        # REJECT below the limit, REJECT on the DLQ (retried without limit, never a
        # second-level DLQ, §9.4.3), or RELEASE at shutdown.
        return ConsumeStatus.RECONSUME_LATER

    def _copy(self, message: int, dead_letter: bool) -> RocketMQDelivery:
        """Copy a native message; its pointer is only valid during the callback."""
        api = self._api
        assert api is not None
        native = api.RecvMessage(message)
        raw_body = native.body or b""
        names = LOCATING_PROPERTIES + (_DEAD_LETTER_PROPERTIES if dead_letter else ())
        properties: dict[str, str] = {}
        for name in names:
            value = native.get_property(name)
            if value:  # the core returns "" for an absent property
                properties[name] = _text(value)
        reconsume_times = int(native.reconsume_times)
        message_id = _text(native.id)
        topic = _text(native.topic)
        retry_topic = _text(native.get_property(_RETRY_TOPIC_PROPERTY))
        if dead_letter:
            # Report the original message, as the DLQ handler's audit log wants (§9.4.2).
            message_id = properties.get(PROP_ORIGIN_MESSAGE_ID) or message_id
            try:
                reconsume_times = int(properties.get(PROP_RECONSUME_TIMES, reconsume_times))
            except ValueError:
                pass
        return RocketMQDelivery(
            body=raw_body.decode("utf-8", errors="replace"),
            properties=properties,
            reconsume_times=reconsume_times,
            message_id=message_id,
            topic=retry_topic or topic,
            raw_body=raw_body,
            tag=_text(native.tags),
            keys=_text(native.keys),
        )

    def _wait_for_decision(self, delivery: RocketMQDelivery) -> _Decision:
        # aclose releases every outstanding delivery; the liveness check covers a trio run
        # that ended without aclose, so a native thread is never parked for ever.
        while not delivery._settled.wait(_LIVENESS_POLL_SECONDS):
            if not self._trio_alive():
                delivery._decide(_Decision.RELEASE)
        assert delivery._decision is not None
        return delivery._decision

    def _trio_alive(self) -> bool:
        try:
            trio.from_thread.run_sync(_noop, trio_token=self._token)
        except trio.RunFinishedError:
            return False
        return True

    def _dead_letter(self, delivery: RocketMQDelivery) -> ConsumeStatus:
        """Move a poison command to ``%DLQ%<worker group>`` (§9.4); runs on the callback's
        native thread. ``CONSUME_SUCCESS`` once the DLQ has it; ``RECONSUME_LATER`` if the
        send fails, so the message comes back and the move is tried again."""
        api = self._api
        assert api is not None
        native = api.Message(self.dead_letter_topic)
        if delivery._keys:
            native.set_keys(delivery._keys)
        native.set_tags(delivery._tag or COMMAND_TAG)
        # The broker refuses an empty body; the DLQ handler reads only the properties.
        native.set_body(delivery._raw_body or b"{}")
        if not delivery._raw_body:
            native.set_property(PROP_EMPTY_BODY, "true")
        for name, value in delivery.properties.items():
            native.set_property(name, value)
        native.set_property(PROP_ORIGIN_MESSAGE_ID, delivery.message_id)
        native.set_property(PROP_ORIGIN_TOPIC, delivery.topic)
        native.set_property(PROP_RECONSUME_TIMES, str(delivery.reconsume_times))
        try:
            result = self._producer.send_sync(native)
        except Exception as exc:
            log.error(
                "could not move poison message %s to %s (%s); it will be redelivered",
                delivery.message_id,
                self.dead_letter_topic,
                exc,
            )
            return ConsumeStatus.RECONSUME_LATER
        with self._state_lock:
            self.dead_lettered += 1
        log.error(
            "poison message %s (task %s) moved to %s as %s after %d deliveries",
            delivery.message_id,
            delivery.properties.get("taskId", "?"),
            self.dead_letter_topic,
            result.msg_id,
            delivery.reconsume_times + 1,
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


async def _hand_over(
    channel: trio.MemorySendChannel[RocketMQDelivery], delivery: RocketMQDelivery
) -> None:
    await channel.send(delivery)


def _noop() -> None:
    return None


@asynccontextmanager
async def open_rocketmq_transport(
    settings: Settings, **overrides: Any
) -> AsyncIterator[RocketMQTransport]:
    """Start a ``RocketMQTransport`` from settings and close it on exit.

    Args:
        settings: uses ``rocketmq_name_server``, ``topic_prefix``, ``command_topic``,
            ``worker_group``, ``consumer_concurrency``, ``max_reconsume_times``,
            ``instance_id`` and ``consumer_enabled`` (no worker consumer when false).
        **overrides: constructor arguments to override (tests: ``close_timeout``).

    Yields:
        The started transport.

    Raises:
        ConfigError: ``ROCKETMQ_NAME_SERVER`` is missing.
        RocketMQTransportError: a native client could not start.
    """
    transport = RocketMQTransport.from_settings(settings, **overrides)
    try:
        await transport.start()
        yield transport
    finally:
        await transport.aclose()
