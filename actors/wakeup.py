"""A level-triggered wake-up signal: the API pokes the publisher after a commit (§7.4)."""

from __future__ import annotations

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
    database (docs/architecture.md, "Dispatch").

    A round starts every ``FILE_EXPORT_CONSUMER_POLL_MS`` (``tick``, from the runtime's
    poll loop) or at once when this instance committed a task that may run now (``set``,
    from the API after a create or retry). Every idle slot wakes; the claim gate reads the
    database once per round when nothing is due (``ClaimGate.claim_next``), so the cost of
    a round does not grow with the number of slots.
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


class Wakeups:
    """Several wake-ups poked as one (``PublisherWakeup``): after a create or retry
    commits, the publisher sends its command and the idle slots look for it at once."""

    def __init__(self, *targets: Wakeup | ClaimRounds) -> None:
        self._targets = targets

    def set(self) -> None:
        for target in self._targets:
            target.set()
