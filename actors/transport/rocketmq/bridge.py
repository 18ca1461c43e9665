"""The callback↔trio bridge: native consume callbacks hand deliveries to trio and wait.

Push-consumer callbacks run on native threads. A callback copies everything it needs out
of the message (the pointer dies when it returns), hands a delivery to trio through an
unbuffered channel with ``trio.from_thread.run`` and then blocks until the trio side has
called ``ack()`` or ``reject()``. So a native thread is held only until a free consumer
slot has taken the delivery and acked it right after its claim (ack early, §8.1), and
slots, not the native thread pool, are the backpressure.

The callback never raises: an exception escaping a ctypes callback leaves the returned
status undefined, so every failure returns ``RECONSUME_LATER``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import trio

from actors.core.dead_letter import goes_to_dead_letter
from actors.transport.rocketmq.delivery import Decision, RocketMQDelivery
from actors.transport.rocketmq.native import ConsumeStatus

log = logging.getLogger(__name__)

#: How often (seconds) a blocked native callback checks that the trio run still exists.
LIVENESS_POLL_SECONDS = 1.0


class CallbackBridge:
    """Carries deliveries from native callback threads to trio, and decisions back.

    Args:
        read: copies the native message of a callback into a delivery (callback thread);
            arguments: the message pointer and whether it came from the dead-letter topic.
        dead_letter: moves a command rejected for the last time to the dead-letter topic
            (callback thread); returns the consume status to report.
        max_reconsume_times: redeliveries of a rejected command before it is
            dead-lettered (:func:`actors.core.dead_letter.goes_to_dead_letter`).
    """

    def __init__(
        self,
        *,
        read: Callable[[int, bool], RocketMQDelivery],
        dead_letter: Callable[[RocketMQDelivery], ConsumeStatus],
        max_reconsume_times: int,
    ) -> None:
        self._read = read
        self._dead_letter = dead_letter
        self.max_reconsume_times = max_reconsume_times
        # Unbuffered: a native thread stays in its callback until a slot takes the delivery.
        self._commands_send, self._commands_recv = trio.open_memory_channel[RocketMQDelivery](0)
        self._dead_send, self._dead_recv = trio.open_memory_channel[RocketMQDelivery](0)
        self._token: trio.lowlevel.TrioToken | None = None
        self._state_lock = threading.Lock()
        self._closing = False
        self._outstanding: set[RocketMQDelivery] = set()
        self._blocked = 0

    # -- trio side -----------------------------------------------------------------------

    def bind(self) -> None:
        """Attach to the calling trio run; call on the trio thread before any consumer
        starts."""
        self._token = trio.lowlevel.current_trio_token()

    @property
    def bound(self) -> bool:
        """Whether :meth:`bind` was called."""
        return self._token is not None

    @property
    def closing(self) -> bool:
        """Whether :meth:`stop` was called: every later callback reconsumes at once."""
        return self._closing

    @property
    def blocked(self) -> int:
        """Native callbacks currently waiting for trio (hand-over or decision)."""
        return self._blocked

    async def receive(self) -> RocketMQDelivery:
        """The next command delivery. Raises ``trio.ClosedResourceError`` once closed."""
        return await self._commands_recv.receive()

    async def receive_dead_letter(self) -> RocketMQDelivery:
        """The next dead-letter delivery. Raises ``trio.ClosedResourceError`` once closed."""
        return await self._dead_recv.receive()

    def stop(self) -> list[RocketMQDelivery]:
        """Make every later callback return ``RECONSUME_LATER`` at once; returns the
        deliveries handed to trio and not yet decided. Thread-safe."""
        with self._state_lock:
            self._closing = True
            return list(self._outstanding)

    async def close_channels(self) -> None:
        """Close the hand-over channels: a callback blocked in a hand-over fails at once."""
        await self._commands_recv.aclose()
        await self._dead_recv.aclose()

    # -- native callback threads ---------------------------------------------------------

    def on_command(self, _consumer: int | None, message: int | None) -> int:
        """The worker consumer's native callback."""
        return self._callback(message, dead_letter=False)

    def on_dead_letter(self, _consumer: int | None, message: int | None) -> int:
        """The DLQ handler consumer's native callback."""
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
        delivery = self._read(message, dead_letter)
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
                    self.stop()  # no trio any more: stop trying at once
                log.info(
                    "delivery %s not handed over (%r); reconsume later", delivery.message_id, exc
                )
                return ConsumeStatus.RECONSUME_LATER
            decision = self._wait_for_decision(delivery)
        finally:
            with self._state_lock:
                self._outstanding.discard(delivery)
                self._blocked -= 1
        if decision is Decision.ACK:
            return ConsumeStatus.CONSUME_SUCCESS
        if decision is Decision.REJECT and not dead_letter:
            if goes_to_dead_letter(delivery.reconsume_times, self.max_reconsume_times):
                return self._dead_letter(delivery)
        # REJECT below the limit, REJECT on the DLQ (retried without limit, never a
        # second-level DLQ, §9.4.3), or RELEASE at shutdown.
        return ConsumeStatus.RECONSUME_LATER

    def _wait_for_decision(self, delivery: RocketMQDelivery) -> Decision:
        # aclose releases every outstanding delivery; the liveness check covers a trio run
        # that ended without aclose, so a native thread is never parked for ever.
        while True:
            decision = delivery.wait_for_decision(LIVENESS_POLL_SECONDS)
            if decision is not None:
                return decision
            if not self._trio_alive():
                delivery.decide(Decision.RELEASE)

    def _trio_alive(self) -> bool:
        try:
            trio.from_thread.run_sync(_noop, trio_token=self._token)
        except trio.RunFinishedError:
            return False
        return True


async def _hand_over(
    channel: trio.MemorySendChannel[RocketMQDelivery], delivery: RocketMQDelivery
) -> None:
    await channel.send(delivery)


def _noop() -> None:
    return None
