"""The dead-letter rule shared by the embedded bus and the RocketMQ transport."""

from __future__ import annotations

import pytest

from actors.core.dead_letter import goes_to_dead_letter


@pytest.mark.parametrize(
    ("reconsume_times", "max_reconsume_times", "dead"),
    [
        # the seed's maxReconsumeTimes = 2: deliveries 1 and 2 come back, the 3rd is dead
        (0, 2, False),
        (1, 2, False),
        (2, 2, True),
        (3, 2, True),  # a count past the limit (a broker retry) is dead too
        # 0: the first rejected delivery is dead-lettered at once
        (0, 0, True),
        (0, 1, False),
        (1, 1, True),
        (15, 16, False),
        (16, 16, True),
    ],
)
def test_rejected_delivery_goes_to_dead_letter_at_the_limit(
    reconsume_times: int, max_reconsume_times: int, dead: bool
) -> None:
    assert goes_to_dead_letter(reconsume_times, max_reconsume_times) is dead
