"""The adapters behind two ports, as the settings name them: where export files live
(``FILE_EXPORT_STORAGE``: a local directory or an S3-compatible bucket) and the command
transport (``FILE_EXPORT_TRANSPORT``: the embedded bus or RocketMQ, with the link that
connects and watches it). A client that exists only in one mode (boto3, the native
RocketMQ library) is imported only in that mode; nothing here talks to a bucket or a
broker, so an outage never stops the start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from actors.core.errors import ConfigError
from actors.core.health import Component, HealthBoard
from actors.core.ports.storage import ExportStorage
from actors.core.ports.transport import CommandTransport
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.storage.local import LocalDirectoryStorage
from actors.transport.embedded import EmbeddedBus

if TYPE_CHECKING:
    from actors.transport.rocketmq.link import TransportLink


def open_storage(settings: Settings) -> ExportStorage:
    """The export file storage the settings name: the local directory
    (``FILE_EXPORT_STORAGE_DIR``) or the S3-compatible bucket (``FILE_EXPORT_S3_*``; its
    client is imported only then). Nothing is sent to a bucket here: a wrong endpoint or
    credentials show in the storage probe (health, ``export_storage_writable``), not as a
    crash at start.

    Raises:
        ConfigError: the local directory cannot be made.
    """
    config = settings.object_store
    if config is not None:
        from actors.storage.s3 import S3Storage

        return S3Storage(config)
    try:
        return LocalDirectoryStorage(settings.resolved_storage_dir)
    except OSError as exc:
        raise ConfigError(f"FILE_EXPORT_STORAGE_DIR: {exc}") from None


def build_transport(settings: Settings) -> CommandTransport:
    """The command transport ``FILE_EXPORT_TRANSPORT`` names, not yet started.

    Nothing here talks to a broker: the RocketMQ transport is connected later, in the
    background, by its ``TransportLink`` (a broker outage never stops the start).

    Raises:
        ConfigError: the RocketMQ settings are missing or malformed (a malformed
            ``ROCKETMQ_NAME_SERVER`` refuses the start; an unreachable one does not).
    """
    if settings.transport == "rocketmq":
        # Imported only in this mode: the native client exists only for Linux x86-64.
        from actors.core.rocketmq.topic_check import parse_name_server
        from actors.transport.rocketmq import RocketMQTransport

        try:
            parse_name_server(settings.rocketmq_name_server or "")
        except ValueError as exc:
            raise ConfigError(f"ROCKETMQ_NAME_SERVER: {exc}") from None
        return RocketMQTransport.from_settings(settings)
    return EmbeddedBus(settings.max_reconsume_times)


def build_transport_link(
    settings: Settings,
    transport: CommandTransport,
    health: HealthBoard,
    metrics: Metrics,
    on_up: Callable[[], None],
) -> TransportLink | None:
    """The actor that connects and watches the RocketMQ transport; ``None`` for the
    embedded bus, which is always up (started by the runtime before anything runs) and
    reported so here."""
    if settings.transport != "rocketmq":
        health.report(Component.TRANSPORT, True)
        return None
    from actors.transport.rocketmq import RocketMQTransport
    from actors.transport.rocketmq.link import TransportLink

    assert isinstance(transport, RocketMQTransport)
    return TransportLink(
        transport,
        name_server=settings.rocketmq_name_server or "",
        consumer_enabled=bool(settings.consumer_enabled),
        health=health,
        set_gauge=metrics.transport_up.set,
        on_up=on_up,
        check_seconds=settings.transport_check_seconds,
    )
