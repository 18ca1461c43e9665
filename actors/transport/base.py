"""The command transport interface: what the publisher, consumer slots and DLQ handler use.

Two implementations share it: the embedded in-process bus (``embedded.py``) and RocketMQ
(later). Nothing above the transport knows which one runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol


class TransportSendError(Exception):
    """A send did not reach the broker. The publisher backs the outbox row off (§7.4)."""


@dataclass(frozen=True, slots=True)
class OutgoingMessage:
    """A command to send: topic/tag/key per §6.2, JSON text body, locating properties."""

    topic: str
    tag: str
    key: str
    body: str
    properties: Mapping[str, str] = field(default_factory=dict)


class Delivery(Protocol):
    """One delivery of a message to a consumer.

    Exactly one of ``ack`` or ``reject`` must be called. ``reject`` means "reconsume
    later": the transport redelivers with ``reconsume_times + 1`` until the limit, then
    moves the message to the dead-letter channel (§6.4, §8.1 ``maxReconsumeTimes`` = 2).
    """

    body: str
    properties: Mapping[str, str]
    reconsume_times: int
    message_id: str

    async def ack(self) -> None: ...

    async def reject(self) -> None: ...


class CommandTransport(Protocol):
    async def send(self, message: OutgoingMessage) -> None:
        """Send one message. Raises TransportSendError."""
        ...

    async def receive(self) -> Delivery:
        """Wait for the next command delivery (called by a free consumer slot, which is
        where backpressure comes from)."""
        ...

    async def receive_dead_letter(self) -> Delivery:
        """Wait for the next dead-lettered message (the DLQ handler's subscription)."""
        ...

    async def aclose(self) -> None: ...
