"""Ports: the interfaces the actors and the web side depend on, implemented further out.

Modelled on httpx's ``_transports/base.py``: each port is a small ``Protocol`` that states
what a caller may rely on, and the outer layers plug in implementations —
``actors.transport.embedded`` / ``actors.transport.rocketmq`` for the command transport,
``actors.pipeline.storage`` for export files, ``actors.metrics``, ``actors.registry_source``
and ``actors.wakeup`` for what the web side uses. Nothing here does IO or imports an event
loop, so ``web`` can depend on these ports and on ``db`` alone.

Attributes a caller only reads are declared as read-only properties: a class with a plain
attribute or a property both satisfy them, so every implementation type-checks as its port
without casts.

Transport errors live in the error tree (:mod:`actors.core.errors`): a send that did not
reach the broker raises :class:`~actors.core.errors.TransportSendError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import BinaryIO, Protocol

from actors.core.models import Registry

__all__ = [
    "ApiMetrics",
    "CommandTransport",
    "Counter",
    "Delivery",
    "ExportStorage",
    "LabelledCounter",
    "OutgoingMessage",
    "PublisherWakeup",
    "RegistryView",
    "StoredObject",
]


# -- command transport -------------------------------------------------------------------


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


# -- export file storage -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoredObject:
    """A stored file seen by a listing: key, size in bytes, modification time (epoch s)."""

    key: str
    size: int
    mtime: float


class ExportStorage(Protocol):
    """Where export files live. Consumers, API and reconciler depend only on this.

    Keys are service-generated ``exports/{taskId}/{uuid}.xlsx`` (see
    ``actors.pipeline.storage``); an implementation refuses any other key.
    """

    async def create(self, key: str) -> BinaryIO:
        """Create the object for writing and return a seekable binary file (sync API, to
        be written from a worker thread). Fails if it exists.

        Raises:
            StorageUnavailableError: the storage cannot be written now.
        """
        ...

    async def size(self, key: str) -> int | None:
        """Size in bytes, or ``None`` if the object does not exist."""
        ...

    def load(self, key: str) -> AsyncIterator[bytes]:
        """Stream the object's bytes. Raises FileNotFoundError if it does not exist."""
        ...

    async def delete(self, key: str) -> bool:
        """Delete the object; True if it existed. Deleting a missing object is not an error
        (a retried cleanup must be idempotent)."""
        ...

    async def list_objects(self) -> list[StoredObject]:
        """Every object under ``exports/`` (for the reconciler's orphan scan)."""
        ...


# -- what the web side uses ----------------------------------------------------------------


class RegistryView(Protocol):
    """The export-type registry in force (``actors.registry_source.RegistryHolder``).

    Readers take ``current`` once per decision and use that object throughout, so they never
    see a mix of an old and a reloaded registry.
    """

    @property
    def current(self) -> Registry:
        """The registry in force now."""
        ...


class PublisherWakeup(Protocol):
    """The API's side of the publisher's wake-up signal (``actors.wakeup.Wakeup``)."""

    def set(self) -> None:
        """Wake the publisher now: a create or retry has just committed its outbox row."""
        ...


class Counter(Protocol):
    """A monotonic counter (one labelled child of a prometheus ``Counter``)."""

    def inc(self, amount: float = 1) -> None:
        """Add ``amount`` (≥ 0)."""
        ...


class LabelledCounter(Protocol):
    """A counter with labels (a prometheus ``Counter`` declared with label names)."""

    def labels(self, *values: str) -> Counter:
        """The child counter for these label values, in declaration order."""
        ...


class ApiMetrics(Protocol):
    """The metrics the HTTP side records and serves (``actors.metrics.Metrics``)."""

    @property
    def task_created(self) -> LabelledCounter:
        """``export_task_created_total{type}``: tasks created through the API."""
        ...

    def exposition(self) -> bytes:
        """Every metric of this instance in the Prometheus text format, for ``/metrics``."""
        ...
