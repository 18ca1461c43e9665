"""The embedded in-process command bus.

It models the parts of a broker the design depends on, so embedded mode exercises the same
paths as RocketMQ: at-least-once delivery, redelivery of a rejected message with
``reconsume_times + 1`` up to ``max_reconsume_times`` (the rule of
``actors.core.dead_letter``), then the dead-letter channel
(``%DLQ%<group>``). Messages live in memory: a crash loses them, which is exactly the
case the outbox and the reconciler exist for (§4.2: the bus is only a fast path).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import trio

from actors.core.dead_letter import goes_to_dead_letter
from actors.core.errors import TransportSendError
from actors.core.ports.transport import OutgoingMessage


@dataclass(slots=True)
class _Message:
    message_id: str
    topic: str
    tag: str
    key: str
    body: str
    properties: Mapping[str, str]
    reconsume_times: int = 0


@dataclass(slots=True)
class EmbeddedDelivery:
    """A delivery from the embedded bus; see ``actors.core.ports.transport.Delivery``."""

    _bus: EmbeddedBus
    _message: _Message
    _dead: bool = False
    _settled: bool = field(default=False)

    @property
    def body(self) -> str:
        return self._message.body

    @property
    def properties(self) -> Mapping[str, str]:
        return self._message.properties

    @property
    def reconsume_times(self) -> int:
        return self._message.reconsume_times

    @property
    def message_id(self) -> str:
        return self._message.message_id

    async def ack(self) -> None:
        self._settled = True

    async def reject(self) -> None:
        if self._settled:
            return
        self._settled = True
        if not self._dead:
            self._bus._redeliver(self._message)


class EmbeddedBus:
    """In-memory command bus with broker-like redelivery and a dead-letter channel.

    Args:
        max_reconsume_times: redeliveries of a rejected message before it is dead-lettered
            (RocketMQ ``maxReconsumeTimes``; the seed uses 2, §8.1).
    """

    def __init__(self, max_reconsume_times: int = 2) -> None:
        self.max_reconsume_times = max_reconsume_times
        self._send, self._recv = trio.open_memory_channel[_Message](math.inf)
        self._dlq_send, self._dlq_recv = trio.open_memory_channel[_Message](math.inf)
        self._ids = itertools.count(1)
        self._closed = False
        #: every message sent, for tests and diagnostics (bodies are tiny)
        self.sent: list[OutgoingMessage] = []
        self.dead_lettered = 0

    async def start(self) -> None:
        """Nothing to connect: the bus is ready once built (``CommandTransport`` lifecycle)."""

    async def send(self, message: OutgoingMessage) -> None:
        if self._closed:
            raise TransportSendError("embedded bus is closed")
        self.sent.append(message)
        self._send.send_nowait(
            _Message(
                f"emb-{next(self._ids)}",
                message.topic,
                message.tag,
                message.key,
                message.body,
                dict(message.properties),
            )
        )

    def _redeliver(self, message: _Message) -> None:
        if goes_to_dead_letter(message.reconsume_times, self.max_reconsume_times):
            self.dead_lettered += 1
            self._dlq_send.send_nowait(message)
        else:
            message.reconsume_times += 1
            self._send.send_nowait(message)

    async def receive(self) -> EmbeddedDelivery:
        return EmbeddedDelivery(self, await self._recv.receive())

    async def receive_dead_letter(self) -> EmbeddedDelivery:
        # A DLQ handler never dead-letters again (§9.4.3): rejecting a DLQ delivery
        # is a no-op here; the handler retries its own database work instead.
        return EmbeddedDelivery(self, await self._dlq_recv.receive(), _dead=True)

    def pending(self) -> int:
        """Messages waiting for a consumer."""
        return self._recv.statistics().current_buffer_used

    async def aclose(self) -> None:
        self._closed = True
