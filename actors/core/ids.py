"""64-bit snowflake-style ids (§7.2 "雪花ID"), and the task number people see. Pure.

Layout (most significant first): 1 sign bit (0) | 41 bits milliseconds since 2024-01-01 UTC
| 10 bits worker | 12 bits sequence. That is 4096 ids per millisecond per worker and
about 69 years of range. Ids are rendered as JSON strings at the HTTP edge because they do
not fit a JavaScript number.

The arithmetic lives here (:func:`next_snowflake`); the generator that keeps its state,
reads the clock, draws the worker and serialises threads is the store's
(``db/ids.py``), since the store is what draws ids.
"""

from __future__ import annotations

from typing import NamedTuple

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


class Snowflake(NamedTuple):
    """One id drawn, and the generator's state after it."""

    id: int
    last_ms: int
    sequence: int


def next_snowflake(wall_ms: int, worker: int, last_ms: int, sequence: int) -> Snowflake:
    """The next id of a generator that last drew at ``last_ms`` with ``sequence``.

    Ids only need to be unique and roughly ordered, so the instance clock is fine here
    (§8.6 allows it for labels). A clock that steps backwards is absorbed by never going
    below the last timestamp used; a sequence exhausted within one millisecond borrows
    the next millisecond.

    Args:
        wall_ms: the instance clock, epoch milliseconds.
        worker: this generator's worker number, 0..:data:`MAX_WORKER`.
        last_ms: the previous id's milliseconds since :data:`EPOCH_MS` (-1 before the first).
        sequence: the previous id's sequence.

    Returns:
        The new positive 63-bit id and the state to pass next time.
    """
    now = max(wall_ms - EPOCH_MS, last_ms)
    if now == last_ms:
        sequence = (sequence + 1) & MAX_SEQUENCE
        if sequence == 0:
            now += 1  # sequence exhausted in this millisecond: borrow the next one
    else:
        sequence = 0
    return Snowflake(
        (now << (WORKER_BITS + SEQUENCE_BITS)) | (worker << SEQUENCE_BITS) | sequence, now, sequence
    )
