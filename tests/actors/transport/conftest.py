"""Fixtures of the RocketMQ transport tests: the service on the real broker, and a tap on
what it sends and receives. The broker itself (``rocketmq_broker``) is the session's, for
every directory: ``tests/rocketmq_session.py``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.runtime import Runtime, serve
from actors.transport.rocketmq import RocketMQTransport
from tests.actors.transport.service_rocketmq_helpers import (
    DELIVERY_TIMEOUT,
    BrokerTap,
    ServiceFactory,
    service_settings,
)
from tests.servers import Broker

# -- the service on the RocketMQ transport (test_service_rocketmq*.py) --


@pytest.fixture
def tap(monkeypatch: pytest.MonkeyPatch) -> BrokerTap:
    t = BrokerTap()
    t.install(monkeypatch)
    return t


@pytest.fixture
async def start_service(
    rocketmq_broker: Broker, tmp_path: Path, tap: BrokerTap
) -> AsyncIterator[ServiceFactory]:
    """``await start_service(**settings_overrides)`` runs the service on the RocketMQ
    transport until the test ends (the tap is installed first), returning once its
    transport is connected."""
    started: list[Runtime] = []
    async with trio.open_nursery() as nursery:

        async def start(**overrides: Any) -> Runtime:
            settings = service_settings(rocketmq_broker, tmp_path, **overrides)
            rt: Runtime = await nursery.start(
                partial(serve, settings, install_signal_handlers=False)
            )
            assert isinstance(rt.transport, RocketMQTransport)
            started.append(rt)
            # connected in the background: these tests start once the bus path is there
            link = rt.link
            assert link is not None
            with trio.fail_after(DELIVERY_TIMEOUT):
                while not link.up:
                    await trio.sleep(0.05)
            return rt

        yield start
        for rt in started:
            rt.request_stop()
