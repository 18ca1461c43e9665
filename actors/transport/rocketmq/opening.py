"""``open_rocketmq_transport``: a started ``RocketMQTransport`` for the length of a block."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from actors.plumbing.config import Settings
from actors.transport.rocketmq.transport import RocketMQTransport


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
