"""A RocketMQ delivery: what a consumer slot or the DLQ handler receives, and how a
poison command is addressed to the dead-letter topic.

A delivery is built on a native callback thread from a copy of the native message and
decided (ack / reject) on the trio thread; the callback thread waits for that decision
(:mod:`actors.transport.rocketmq.bridge`).
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Mapping

from actors.core.command_message import COMMAND_TAG, LOCATING_PROPERTIES
from actors.transport.rocketmq.native import NativeMessage

#: Diagnostic properties the application DLQ path adds to a dead-lettered message.
PROP_ORIGIN_MESSAGE_ID = "dlqOriginMessageId"
PROP_ORIGIN_TOPIC = "dlqOriginTopic"
PROP_RECONSUME_TIMES = "dlqReconsumeTimes"
PROP_EMPTY_BODY = "dlqEmptyBody"
DEAD_LETTER_PROPERTIES = (
    PROP_ORIGIN_MESSAGE_ID,
    PROP_ORIGIN_TOPIC,
    PROP_RECONSUME_TIMES,
    PROP_EMPTY_BODY,
)


class Decision(enum.Enum):
    """What the trio side decided about a delivery."""

    ACK = "ack"
    REJECT = "reject"
    RELEASE = "release"  # the transport is closing: give the message back to the broker


class RocketMQDelivery:
    """One delivery from a RocketMQ push consumer; see ``actors.core.ports.transport.Delivery``.

    Every field is a copy made on the native callback thread. ``ack`` / ``reject`` only
    record the decision and wake that thread, which returns the consume status; the first
    decision wins and later calls are no-ops.

    Attributes:
        body: the message body as text (bodies are NUL-terminated JSON, docs/rocketmq.md).
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
        self._decision: Decision | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_native(cls, message: NativeMessage, *, dead_letter: bool) -> RocketMQDelivery:
        """The delivery of a copied native message.

        For a dead-letter delivery, ``message_id`` and ``reconsume_times`` are those of the
        original command (from the ``dlq*`` properties), as the DLQ handler's audit log
        wants (§9.4.2); ``topic`` is the original topic of a retried message.
        """
        properties = message.properties
        message_id = message.message_id
        reconsume_times = message.reconsume_times
        if dead_letter:
            message_id = properties.get(PROP_ORIGIN_MESSAGE_ID) or message_id
            try:
                reconsume_times = int(properties.get(PROP_RECONSUME_TIMES, reconsume_times))
            except ValueError:
                pass
        return cls(
            body=message.body.decode("utf-8", errors="replace"),
            properties=properties,
            reconsume_times=reconsume_times,
            message_id=message_id,
            topic=message.retry_topic or message.topic,
            raw_body=message.body,
            tag=message.tag,
            keys=message.keys,
        )

    def decide(self, decision: Decision) -> bool:
        """Record ``decision`` unless one was made already; thread-safe. Returns whether it
        was recorded."""
        with self._lock:
            if self._decision is not None:
                return False
            self._decision = decision
        self._settled.set()
        return True

    def wait_for_decision(self, timeout: float) -> Decision | None:
        """Block the calling (native) thread up to ``timeout`` seconds for the decision;
        ``None`` if there is none yet."""
        if self._settled.wait(timeout):
            return self._decision
        return None

    @property
    def settled(self) -> bool:
        """Whether ``ack``, ``reject`` or the closing transport has decided this delivery."""
        return self._decision is not None

    async def ack(self) -> None:
        """Consumed: the callback returns ``CONSUME_SUCCESS`` and the offset advances."""
        self.decide(Decision.ACK)

    async def reject(self) -> None:
        """Reconsume later (§6.4: an undecodable body). The broker redelivers with
        ``reconsume_times + 1``; at the limit the transport dead-letters the message
        itself. On the dead-letter channel this only asks for a redelivery (§9.4.3)."""
        self.decide(Decision.REJECT)

    def dead_letter_copy(self) -> tuple[str | None, str, bytes, list[tuple[str, str]]]:
        """The message that carries this delivery to the dead-letter topic.

        Returns:
            ``(keys, tag, body, properties)``: the original keys (``None`` if it had
            none), tag (``EXPORT_TASK`` if it had none) and body — ``b"{}"`` for an empty
            body, which the broker refuses, marked with ``dlqEmptyBody`` (the DLQ handler
            reads only the properties) — and the original properties followed by the
            ``dlq*`` diagnostics: origin message id, origin topic, reconsume count.
        """
        properties = list(self.properties.items())
        if not self._raw_body:
            properties.insert(0, (PROP_EMPTY_BODY, "true"))
        properties += [
            (PROP_ORIGIN_MESSAGE_ID, self.message_id),
            (PROP_ORIGIN_TOPIC, self.topic),
            (PROP_RECONSUME_TIMES, str(self.reconsume_times)),
        ]
        return (self._keys or None, self._tag or COMMAND_TAG, self._raw_body or b"{}", properties)


def copied_properties(dead_letter: bool) -> tuple[str, ...]:
    """The properties a consume callback copies: the locating ones, plus the ``dlq*``
    diagnostics on the dead-letter channel."""
    return LOCATING_PROPERTIES + (DEAD_LETTER_PROPERTIES if dead_letter else ())
