"""64-bit snowflake-style ids (§7.2 "雪花ID").

Layout (most significant first): 1 sign bit (0) | 41 bits milliseconds since 2024-01-01 UTC
| 10 bits worker | 12 bits sequence. That is 4096 ids per millisecond per worker and
about 69 years of range. Ids are rendered as JSON strings at the HTTP edge because they do
not fit a JavaScript number.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable

EPOCH_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z
WORKER_BITS = 10
SEQUENCE_BITS = 12
MAX_WORKER = (1 << WORKER_BITS) - 1
MAX_SEQUENCE = (1 << SEQUENCE_BITS) - 1
#: A task's number as people see it (the page, the file's history): this prefix and its id.
TASK_NO_PREFIX = "EXP"


def task_number(task_id: int) -> str:
    """The task number people are shown for task ``task_id``: ``EXP<id>``."""
    return f"{TASK_NO_PREFIX}{task_id}"


class IdGenerator:
    """Thread-safe snowflake generator.

    Args:
        clock_ms: returns wall time in epoch milliseconds. Ids only need to be unique
            and roughly ordered, so the instance clock is fine here (§8.6 allows it for
            labels); a clock that steps backwards is absorbed by never going below the
            last timestamp used.
        worker_id: 0..1023; random by default, so two instances collide only if they draw
            the same worker in the same millisecond with the same sequence, and a primary
            key conflict is then reported by the database rather than silently accepted.
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
            now = max(self._clock_ms() - EPOCH_MS, self._last_ms)
            if now == self._last_ms:
                self._sequence = (self._sequence + 1) & MAX_SEQUENCE
                if self._sequence == 0:
                    # Sequence exhausted in this millisecond: borrow the next one.
                    now += 1
            else:
                self._sequence = 0
            self._last_ms = now
            return (
                (now << (WORKER_BITS + SEQUENCE_BITS))
                | (self._worker << SEQUENCE_BITS)
                | (self._sequence)
            )
