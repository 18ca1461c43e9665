"""A level-triggered wake-up signal: the API pokes the publisher after a commit (§7.4)."""

from __future__ import annotations

from collections.abc import Callable

import trio


class Wakeup:
    """``set()`` from anywhere in the trio loop; ``wait(timeout)`` returns early if set
    since the last wait, else after ``timeout`` seconds (the polling fallback)."""

    def __init__(self) -> None:
        self._event = trio.Event()

    def set(self) -> None:
        self._event.set()

    async def wait(self, timeout: float) -> bool:
        """Return True if woken, False on timeout. Clears the signal."""
        with trio.move_on_after(timeout):
            await self._event.wait()
        woken = self._event.is_set()
        if woken:
            self._event = trio.Event()
        return woken


class ClaimRounds:
    """Rounds in which the idle consumer slots of one instance look for due tasks in the
    database (docs/architecture.md, "The life of a task").

    A round starts every ``FILE_EXPORT_CONSUMER_POLL_MS`` (``tick``, from the runtime's
    poll loop), or at once when this instance committed a task while the bus is down
    (``set``, through ``CommitWakeup`` after a create or retry). Every idle slot wakes;
    the claim gate reads the database once per round when nothing is due
    (``ClaimGate.claim_next``), so the cost of a round does not grow with the number of
    slots.
    """

    def __init__(self) -> None:
        self._event = trio.Event()
        self.number = 0

    def set(self) -> None:
        """Start a round now: wake every slot waiting in ``wait``."""
        self.number += 1
        self._event.set()
        self._event = trio.Event()

    async def wait(self) -> int:
        """Wait for the next round; returns its number."""
        await self._event.wait()
        return self.number

    def waiting(self) -> int:
        """How many slots wait for the next round now."""
        return self._event.statistics().tasks_waiting

    async def tick(self, period: float) -> None:
        """Start a round every ``period`` seconds, forever (the poll)."""
        while True:
            await trio.sleep(period)
            self.set()


class CommitWakeup:
    """What the API pokes after a create or retry committed its outbox row
    (``PublisherWakeup``): the publisher, to send the command at once; and, while the bus
    is down, this instance's idle slots, to claim the task from the database at once
    instead of at the next poll.

    While the bus is up the command is the fast path (it reaches a free slot of any
    instance within milliseconds), so the slots are left to it: claiming locally as well
    would race every command for nothing.

    Args:
        publisher: the publisher's wake-up.
        rounds: the instance's claim rounds.
        bus_up: whether the transport is up now (``TransportLink.up``).
    """

    def __init__(self, publisher: Wakeup, rounds: ClaimRounds, bus_up: Callable[[], bool]) -> None:
        self.publisher = publisher
        self.rounds = rounds
        self.bus_up = bus_up

    def set(self) -> None:
        self.publisher.set()
        if not self.bus_up():
            self.rounds.set()
