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
