"""The command transport's port: what a publisher sends and a consumer slot receives
(``actors/transport``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class OutgoingMessage:
    """A command to send.

    Attributes:
        topic: the command topic, ``${MQ_TOPIC_PREFIX}file-export-command-v1``.
        tag: the message tag, ``EXPORT_TASK``.
        key: the message key (the task id).
        body: the JSON text body of the command.
        properties: the locating properties (``eventId``, ``taskId``, ``dispatchVersion``,
            ``schemaVersion``), strings.
    """

    topic: str
    tag: str
    key: str
    body: str
    properties: Mapping[str, str] = field(default_factory=dict)


class Delivery(Protocol):
    """One delivery of a message to a consumer.

    Exactly one of ``ack`` or ``reject`` must be called; later calls are no-ops. ``reject``
    means "reconsume later": the transport redelivers with ``reconsume_times + 1`` until
    the limit of :func:`actors.core.dead_letter.goes_to_dead_letter`, then moves the message
    to the dead-letter channel. Rejecting a delivery of the dead-letter channel itself never
    dead-letters again.
    """

    @property
    def body(self) -> str:
        """The message body as text."""
        ...

    @property
    def properties(self) -> Mapping[str, str]:
        """The locating properties present on the message."""
        ...

    @property
    def reconsume_times(self) -> int:
        """Earlier deliveries of this message: 0 on the first."""
        ...

    @property
    def message_id(self) -> str:
        """The transport's id of the message, for logs."""
        ...

    async def ack(self) -> None:
        """Consumed: the message will not be delivered again."""
        ...

    async def reject(self) -> None:
        """Reconsume later (only for an undecodable command)."""
        ...


class CommandTransport(Protocol):
    """The command bus the publisher, the consumer slots and the DLQ handler use.

    Lifecycle: ``start`` once before any other call, ``aclose`` once at the end — also when
    ``start`` raised, so a half-started transport is cleaned up. Nothing above the
    transport knows which implementation runs.
    """

    async def start(self) -> None:
        """Connect and start consuming.

        Raises:
            TransportStartError: the transport cannot start (unreachable broker, bad
                group); the service does not start.
        """
        ...

    async def send(self, message: OutgoingMessage) -> None:
        """Send one message.

        Raises:
            TransportSendError: the message did not reach the broker (the publisher backs
                the outbox row off and sends it again later).
        """
        ...

    async def receive(self) -> Delivery:
        """Wait for the next command delivery (called by a free consumer slot, which is
        where backpressure comes from)."""
        ...

    async def receive_dead_letter(self) -> Delivery:
        """Wait for the next dead-lettered message (the DLQ handler's subscription)."""
        ...

    async def aclose(self) -> None:
        """Stop consuming and release the connection; idempotent. Deliveries not yet
        acked or rejected go back to the broker (at-least-once)."""
        ...
