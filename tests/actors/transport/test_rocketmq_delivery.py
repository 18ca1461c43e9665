"""The RocketMQ delivery as the bridge builds it, and the copy a poison command leaves in
the dead-letter topic. Plain values: no broker, no native library (the native façade is
the only module that loads it)."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from actors.transport.rocketmq.delivery import (
    PROP_EMPTY_BODY,
    PROP_ORIGIN_MESSAGE_ID,
    PROP_ORIGIN_TOPIC,
    PROP_RECONSUME_TIMES,
    Decision,
    RocketMQDelivery,
    copied_properties,
)
from actors.transport.rocketmq.native import NativeMessage

LOCATING = {"eventId": "e-1", "taskId": "7", "dispatchVersion": "1", "schemaVersion": "1"}


def native(**overrides: Any) -> NativeMessage:
    values: dict[str, Any] = {
        "body": b'{"taskId": "7"}',
        "properties": LOCATING,
        "reconsume_times": 1,
        "message_id": "MSG-2",
        "topic": "t-file-export-command-v1",
        "retry_topic": "",
        "tag": "EXPORT_TASK",
        "keys": "7",
    }
    values.update(overrides)
    return NativeMessage(**values)


DEAD = {PROP_ORIGIN_MESSAGE_ID: "MSG-1", PROP_RECONSUME_TIMES: "2", PROP_ORIGIN_TOPIC: "t"}


@pytest.mark.parametrize(
    ("message", "dead_letter", "message_id", "reconsume_times", "topic"),
    [
        # a command: the broker's own id, count and topic
        (native(), False, "MSG-2", 1, "t-file-export-command-v1"),
        # a retried command is reported under its original topic, not %RETRY%<group>
        (
            native(topic="%RETRY%t-worker", retry_topic="t-file-export-command-v1"),
            False,
            "MSG-2",
            1,
            "t-file-export-command-v1",
        ),
        # a dead letter reports the original command's id and count
        (
            native(properties={**LOCATING, **DEAD}, reconsume_times=0),
            True,
            "MSG-1",
            2,
            "t-file-export-command-v1",
        ),
        # ... falling back to its own when the diagnostics are missing or malformed
        (native(reconsume_times=0), True, "MSG-2", 0, "t-file-export-command-v1"),
        (
            native(properties={**LOCATING, PROP_RECONSUME_TIMES: "x"}, reconsume_times=0),
            True,
            "MSG-2",
            0,
            "t-file-export-command-v1",
        ),
        # the dlq* properties of a command delivery are not read as diagnostics
        (native(properties={**LOCATING, **DEAD}), False, "MSG-2", 1, "t-file-export-command-v1"),
    ],
)
def test_delivery_from_native_message(
    message: NativeMessage, dead_letter: bool, message_id: str, reconsume_times: int, topic: str
) -> None:
    d = RocketMQDelivery.from_native(message, dead_letter=dead_letter)
    assert (d.message_id, d.reconsume_times, d.topic) == (message_id, reconsume_times, topic)
    assert d.body == message.body.decode() and dict(d.properties) == dict(message.properties)


@pytest.mark.parametrize(
    ("message", "keys", "tag", "body", "empty_marker"),
    [
        (native(), "7", "EXPORT_TASK", b'{"taskId": "7"}', False),
        # the broker refuses an empty body: "{}" and a marker (the handler reads properties)
        (native(body=b""), "7", "EXPORT_TASK", b"{}", True),
        # no keys: none set; no tag: the command tag
        (native(keys="", tag=""), None, "EXPORT_TASK", b'{"taskId": "7"}', False),
    ],
)
def test_dead_letter_copy_keeps_the_command_and_adds_diagnostics(
    message: NativeMessage, keys: str | None, tag: str, body: bytes, empty_marker: bool
) -> None:
    d = RocketMQDelivery.from_native(message, dead_letter=False)
    got_keys, got_tag, got_body, properties = d.dead_letter_copy()
    assert (got_keys, got_tag, got_body) == (keys, tag, body)
    expected = ([(PROP_EMPTY_BODY, "true")] if empty_marker else []) + list(LOCATING.items())
    expected += [
        (PROP_ORIGIN_MESSAGE_ID, "MSG-2"),
        (PROP_ORIGIN_TOPIC, "t-file-export-command-v1"),
        (PROP_RECONSUME_TIMES, "1"),
    ]
    assert properties == expected


@pytest.mark.parametrize(
    ("dead_letter", "names"),
    [
        (False, ("eventId", "taskId", "dispatchVersion", "schemaVersion")),
        (
            True,
            (
                "eventId",
                "taskId",
                "dispatchVersion",
                "schemaVersion",
                PROP_ORIGIN_MESSAGE_ID,
                PROP_ORIGIN_TOPIC,
                PROP_RECONSUME_TIMES,
                PROP_EMPTY_BODY,
            ),
        ),
    ],
)
def test_copied_properties(dead_letter: bool, names: tuple[str, ...]) -> None:
    assert copied_properties(dead_letter) == names


def test_first_decision_wins() -> None:
    d = RocketMQDelivery.from_native(native(), dead_letter=False)
    assert not d.settled and d.wait_for_decision(0) is None
    trio.run(d.reject)
    trio.run(d.ack)  # too late: a no-op
    assert d.settled and d.wait_for_decision(0) is Decision.REJECT
    assert not d.decide(Decision.RELEASE)
