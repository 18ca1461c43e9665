"""The native façade: every call into PyPI ``rocketmq`` 0.4.4 and its bundled C++ core.

No other module of this package touches the client library. Every call here blocks; the
transport makes them on worker threads (``trio.to_thread``) or on a native callback
thread, never on the trio thread. The library is imported lazily: only the RocketMQ mode
needs it, and its wheel exists only for Linux x86-64.

Errors of the library (``rocketmq.exceptions.RocketMQException``) leave this module as
:class:`NativeClientError`, so callers need not import the library to catch them.
"""

from __future__ import annotations

import enum
import importlib.util
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

#: The signature of a native push-consumer callback: (consumer handle, message pointer)
#: -> ``ConsumeStatus`` as an int.
NativeCallback = Callable[[int | None, int | None], int]


class NativeClientError(Exception):
    """A call into the native client failed (``RocketMQException`` of the library)."""


class ConsumeStatus(enum.IntEnum):
    """Return values of a native push-consumer callback (the C enum ``CConsumeStatus``).

    ``rocketmq`` 0.4.4 exports no public name for it (only ``rocketmq.ffi._CConsumeStatus``).
    """

    CONSUME_SUCCESS = 0
    RECONSUME_LATER = 1


@dataclass(frozen=True, slots=True)
class NativeMessage:
    """What a consume callback copies out of a native message (its pointer dies when the
    callback returns).

    Attributes:
        body: the raw body bytes (``b""`` when empty).
        properties: the requested properties present on the message (the core returns
            ``""`` for an absent one; those are left out).
        reconsume_times: earlier deliveries of the message.
        message_id: the broker message id.
        topic: the topic it was delivered from (``%RETRY%<group>`` for a retry).
        retry_topic: the original topic of a retried message (``RETRY_TOPIC``), or ``""``.
        tag: the message tag.
        keys: the message keys.
    """

    body: bytes
    properties: Mapping[str, str]
    reconsume_times: int
    message_id: str
    topic: str
    retry_topic: str
    tag: str
    keys: str


@dataclass(frozen=True, slots=True)
class SendReceipt:
    """The broker's answer to a synchronous send: the message id, and whether the status
    was ``SEND_OK`` (any other status means stored on the master, but a flush or slave
    guarantee was not confirmed)."""

    message_id: str
    ok: bool
    status: str


#: RocketMQ's system property naming the original topic of a retried message.
_RETRY_TOPIC_PROPERTY = "RETRY_TOPIC"


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


def _text(value: bytes | str | None) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


class NativeClient:
    """The client library's calls, as this package uses them.

    Creating it imports the library.

    Raises:
        ModuleNotFoundError: the ``rocketmq`` package is not installed.
    """

    def __init__(self) -> None:
        from rocketmq import client, exceptions, ffi

        self._api = SimpleNamespace(
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

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except self._api.RocketMQException as exc:
            raise NativeClientError(str(exc)) from exc

    # -- clients -------------------------------------------------------------------------

    def create_producer(
        self, group: str, instance_name: str, name_server: str, send_timeout_ms: int
    ) -> Any:
        """A producer of ``group``, not started.

        Raises:
            NativeClientError: the core refused a setting.
        """
        api = self._api
        with self._errors():
            producer = api.Producer(group, timeout=send_timeout_ms)
            # 0.4.4 has no Python method for this; the C function exists in the core.
            api.ffi_check(api.dll.SetProducerInstanceName(producer._handle, instance_name.encode()))
            producer.set_namesrv_addr(name_server)
        return producer

    def create_push_consumer(
        self,
        group: str,
        instance_name: str,
        name_server: str,
        threads: int,
        on_created: Callable[[Any], None],
    ) -> Any:
        """A clustering push consumer of ``group`` taking one message per callback, not
        subscribed nor started. ``on_created`` receives it as soon as it exists, so the
        caller can shut it down even if a later setting fails.

        Raises:
            NativeClientError: the core refused a setting.
        """
        api = self._api
        with self._errors():
            consumer = api.PushConsumer(group, message_model=api.MessageModel.CLUSTERING)
            on_created(consumer)
            consumer.set_namesrv_addr(name_server)
            consumer.set_instance_name(instance_name)
            consumer.set_thread_count(threads)
            consumer.set_message_batch_max_size(1)  # §8.1 consumeMessageBatchMaxSize = 1
        return consumer

    def make_callback(self, callback: NativeCallback) -> Any:
        """Wrap ``callback`` as a ctypes callback for :meth:`subscribe`.

        Keep the returned object referenced for the consumer's whole life: a collected
        callback segfaults.
        """
        return self._api.MSG_CALLBACK_FUNC(callback)

    def subscribe(self, consumer: Any, topic: str, expression: str, native_callback: Any) -> None:
        """Subscribe ``consumer`` to ``topic`` / ``expression`` with our own callback (from
        :meth:`make_callback`).

        Not ``PushConsumer.subscribe``: the 0.4.4 wrapper re-raises inside the ctypes
        callback, which leaves the returned status undefined. Our callback never raises
        and returns the status itself.

        Raises:
            NativeClientError: the core refused the subscription.
        """
        api = self._api
        with self._errors():
            api.ffi_check(api.dll.Subscribe(consumer._handle, topic.encode(), expression.encode()))
            api.ffi_check(api.dll.RegisterMessageCallback(consumer._handle, native_callback))

    def start(self, client: Any) -> None:
        """Start a producer or consumer (blocks while it connects).

        Raises:
            NativeClientError: the client could not start.
        """
        with self._errors():
            client.start()

    def close_consumer(self, consumer: Any) -> None:
        """Shut a consumer down and destroy it; a no-op if already destroyed.

        Destroys it here, on the calling worker thread, and clears the handle, so the
        wrapper's ``__del__`` (shutdown + destroy) cannot run later on the trio thread or
        at exit.
        """
        api = self._api
        if consumer._handle is None:
            return
        consumer.shutdown()
        handle, consumer._handle = consumer._handle, None
        api.ffi_check(api.dll.DestroyPushConsumer(handle))

    def close_producer(self, producer: Any) -> None:
        """Shut a producer down and destroy it; a no-op if already destroyed."""
        api = self._api
        if producer._handle is None:
            return
        producer.shutdown()
        handle, producer._handle = producer._handle, None
        api.ffi_check(api.dll.DestroyProducer(handle))

    # -- messages ------------------------------------------------------------------------

    def send(
        self,
        producer: Any,
        *,
        topic: str,
        tag: str,
        keys: str | None,
        body: bytes,
        properties: Iterable[tuple[str, str]],
    ) -> SendReceipt:
        """Send one message synchronously (the producer's native timeout applies).

        Args:
            keys: the message keys; ``None`` sets none.
            body: the body; the core takes it as a NUL-terminated string.

        Raises:
            NativeClientError: the broker did not store the message.
        """
        api = self._api
        native = api.Message(topic)
        if keys is not None:
            native.set_keys(keys)
        native.set_tags(tag)
        native.set_body(body)
        for name, value in properties:
            native.set_property(name, value)
        with self._errors():
            result = producer.send_sync(native)
        return SendReceipt(result.msg_id, result.status == api.SendStatus.OK, str(result.status))

    def read_message(self, message: int, names: Iterable[str]) -> NativeMessage:
        """Copy a native message during its callback.

        Args:
            message: the message pointer the callback received.
            names: the properties to copy.
        """
        native = self._api.RecvMessage(message)
        properties: dict[str, str] = {}
        for name in names:
            value = native.get_property(name)
            if value:  # the core returns "" for an absent property
                properties[name] = _text(value)
        return NativeMessage(
            body=native.body or b"",
            properties=properties,
            reconsume_times=int(native.reconsume_times),
            message_id=_text(native.id),
            topic=_text(native.topic),
            retry_topic=_text(native.get_property(_RETRY_TOPIC_PROPERTY)),
            tag=_text(native.tags),
            keys=_text(native.keys),
        )
