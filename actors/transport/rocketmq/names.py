"""The RocketMQ group and topic names of one deployment, from ``MQ_TOPIC_PREFIX``.

Pure functions of their argument (no IO); the table of names is in the package docstring
(:mod:`actors.transport.rocketmq`).
"""

from __future__ import annotations


def producer_group(topic_prefix: str) -> str:
    """The producer group of §6.2, e.g. ``test-file-export-publisher-v1``."""
    return f"{topic_prefix}file-export-publisher-v1"


def dlq_handler_group(topic_prefix: str) -> str:
    """The DLQ handler's consumer group (§9.4.2), e.g. ``test-file-export-dlq-handler-v1``."""
    return f"{topic_prefix}file-export-dlq-handler-v1"


def dead_letter_topic(worker_group: str) -> str:
    """RocketMQ's dead-letter topic of a consumer group: ``%DLQ%<group>`` (§9.4.3)."""
    return f"%DLQ%{worker_group}"
