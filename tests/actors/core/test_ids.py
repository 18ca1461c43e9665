"""Snowflake ids (actors.core.ids.next_snowflake): layout, sequence, a clock that steps back."""

from __future__ import annotations

import pytest

from actors.core.ids import EPOCH_MS, MAX_SEQUENCE, SEQUENCE_BITS, WORKER_BITS, next_snowflake


def parts(snowflake_id: int) -> tuple[int, int, int]:
    """(milliseconds since the epoch, worker, sequence) of an id."""
    return (
        snowflake_id >> (WORKER_BITS + SEQUENCE_BITS),
        (snowflake_id >> SEQUENCE_BITS) & ((1 << WORKER_BITS) - 1),
        snowflake_id & MAX_SEQUENCE,
    )


@pytest.mark.parametrize(
    ("wall_ms", "last_ms", "sequence", "expected"),
    [
        (EPOCH_MS + 10, -1, 0, (10, 0)),  # the first id
        (EPOCH_MS + 10, 10, 0, (10, 1)),  # same millisecond: next sequence
        (EPOCH_MS + 11, 10, 7, (11, 0)),  # a new millisecond starts the sequence again
        (EPOCH_MS + 5, 10, 3, (10, 4)),  # the clock stepped back: stay at the last ms
        (EPOCH_MS + 10, 10, MAX_SEQUENCE, (11, 0)),  # exhausted: borrow the next ms
    ],
)
def test_next_snowflake_orders_ids_and_absorbs_a_clock_stepping_back(
    wall_ms: int, last_ms: int, sequence: int, expected: tuple[int, int]
) -> None:
    drawn = next_snowflake(wall_ms, 513, last_ms, sequence)
    assert (drawn.last_ms, drawn.sequence) == expected
    assert parts(drawn.id) == (expected[0], 513, expected[1])
    assert 0 < drawn.id < 2**63


def test_ids_of_one_worker_only_grow() -> None:
    last_ms, sequence, previous = -1, 0, 0
    for wall_ms in [EPOCH_MS + 1] * 5000 + [EPOCH_MS] * 3 + [EPOCH_MS + 3]:
        drawn = next_snowflake(wall_ms, 1, last_ms, sequence)
        assert drawn.id > previous
        last_ms, sequence, previous = drawn.last_ms, drawn.sequence, drawn.id
