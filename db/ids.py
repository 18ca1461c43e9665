"""The store's id generator: snowflake ids (:mod:`actors.core.ids`) for tasks and outbox
rows, drawn by one instance from any thread."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable

from actors.core.ids import MAX_WORKER, next_snowflake


class IdGenerator:
    """Thread-safe snowflake generator.

    Args:
        clock_ms: returns wall time in epoch milliseconds (the instance clock).
        worker_id: 0..1023; random by default, so two instances collide only if they draw
            the same worker in the same millisecond with the same sequence, and a primary
            key conflict is then reported by the database rather than silently accepted.

    Raises:
        ValueError: ``worker_id`` out of range.
    """

    def __init__(self, clock_ms: Callable[[], int], worker_id: int | None = None) -> None:
        if worker_id is None:
            worker_id = secrets.randbelow(MAX_WORKER + 1)
        if not 0 <= worker_id <= MAX_WORKER:
            raise ValueError(f"worker_id must be 0..{MAX_WORKER}")
        self._clock_ms = clock_ms
        self._worker = worker_id
        self._last_ms = -1
        self._sequence = 0
        self._lock = threading.Lock()

    def next_id(self) -> int:
        """Return a new positive 63-bit id."""
        with self._lock:
            drawn = next_snowflake(self._clock_ms(), self._worker, self._last_ms, self._sequence)
            self._last_ms, self._sequence = drawn.last_ms, drawn.sequence
            return drawn.id
