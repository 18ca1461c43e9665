"""The dead-letter rule: when a rejected command stops being redelivered.

A consumer rejects a delivery only when the command body cannot be decoded (a poison
message). The transport then redelivers it with ``reconsume_times + 1`` until the limit
below, and moves it to the dead-letter channel instead, where the DLQ handler quarantines
it. Both transports — the embedded bus and RocketMQ, whose old native client cannot apply
the broker's own limit — decide with this one function.
"""

from __future__ import annotations


def goes_to_dead_letter(reconsume_times: int, max_reconsume_times: int) -> bool:
    """Whether a rejected delivery goes to the dead-letter channel rather than back.

    Args:
        reconsume_times: earlier deliveries of the message (0 on its first delivery).
        max_reconsume_times: redeliveries allowed after the first delivery
            (``FILE_EXPORT_MAX_RECONSUME_TIMES``, RocketMQ's ``maxReconsumeTimes``; the
            seed's 2 dead-letters the third rejected delivery).

    Returns:
        True when this delivery was the last one allowed: delivery number
        ``reconsume_times + 1`` has reached ``max_reconsume_times + 1``. False means
        "redeliver with ``reconsume_times + 1``".
    """
    return reconsume_times >= max_reconsume_times
