"""Table tests of the command (actors/core/command_message.py): its body round-trips and an
undecodable one is poison; the locating properties of its envelope equal the body and read
back."""

from __future__ import annotations

import json
import os

import pytest

from actors.core.command_message import (
    COMMAND_SCHEMA_VERSION,
    LOCATING_PROPERTIES,
    Command,
    Locator,
    locating_properties,
    message_key,
    payload_schema_version,
    payload_trace_id,
    read_locator,
)
from actors.core.errors import CommandDecodeError
from actors.core.models import OutboxRow, OutboxStatus
from actors.supervised.publisher import outgoing_message
from tests.helpers import task_value

BIG = 2**63 - 1  # ids are signed 64-bit; on the wire they are decimal strings


@pytest.mark.parametrize(
    ("event_id", "task_id", "version"),
    [
        ("e-1", 1, 1),
        ("3f2c", BIG, 7),
        ("x", 386375654354726912, 1_000_000),
    ],
)
def test_locating_properties_round_trip(event_id: str, task_id: int, version: int) -> None:
    props = locating_properties(event_id, task_id, version, COMMAND_SCHEMA_VERSION)
    assert tuple(props) == LOCATING_PROPERTIES
    assert all(isinstance(value, str) for value in props.values())
    assert read_locator(props) == Locator(event_id, task_id, version)


def test_command_properties_equal_its_body() -> None:
    cmd = Command.new(BIG, "CUSTOMER_LIST", 3, "2026-01-01T00:00:00.000Z", rand=os.urandom)
    body = json.loads(cmd.to_json())
    assert cmd.properties() == {name: str(body[name]) for name in LOCATING_PROPERTIES}
    assert read_locator(cmd.properties()) == Locator(cmd.event_id, BIG, 3)


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        "[]",
        '{"schemaVersion": 2, "taskId": "1", "eventId": "e", '
        '"exportType": "X", "dispatchVersion": 1}',
        '{"schemaVersion": 1, "eventId": "e", "exportType": "X", "dispatchVersion": 1}',
        '{"schemaVersion": 1, "taskId": "1", "eventId": "e", "exportType": "X", '
        '"dispatchVersion": "1"}',
    ],
)
def test_undecodable_commands_are_poison(body: str) -> None:
    with pytest.raises(CommandDecodeError):
        Command.from_json(body)


def test_command_round_trips() -> None:
    cmd = Command.new(2**62 + 5, "CUSTOMER_LIST", 3, "2026-01-01T00:00:00+00:00", rand=os.urandom)
    assert Command.from_json(cmd.to_json()) == cmd


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ('{"schemaVersion": 1, "taskId": "1"}', 1),
        ('{"schemaVersion": 2}', 2),  # unsupported, but the property must equal the body
        ('{"taskId": "1"}', COMMAND_SCHEMA_VERSION),  # absent
        ("{broken", COMMAND_SCHEMA_VERSION),  # not JSON
        ("[1, 2]", COMMAND_SCHEMA_VERSION),  # not an object
    ],
)
def test_payload_schema_version(payload: str, expected: object) -> None:
    assert payload_schema_version(payload) == expected


def test_outgoing_message_of_an_outbox_row() -> None:
    cmd = Command.new(42, "CUSTOMER_LIST", 2, "2026-01-01T00:00:00.000Z", rand=os.urandom)
    task = task_value(id=42)
    row = OutboxRow(
        id=9,
        event_id=cmd.event_id,
        task_id=task.id,
        dispatch_version=2,
        topic="file-export-command-v1",
        tag="EXPORT_TASK",
        message_key=message_key(task.id),
        payload_json=cmd.to_json(),
        status=OutboxStatus.CLAIMED,
        attempt_count=1,
        next_retry_at=task.next_retry_at,
        lease_owner="me",
        lease_until=None,
        sent_at=None,
        last_error=None,
    )
    message = outgoing_message(row)
    assert (message.topic, message.tag, message.key) == (
        "file-export-command-v1",
        "EXPORT_TASK",
        "42",
    )
    assert message.body == cmd.to_json()
    assert dict(message.properties) == cmd.properties()


@pytest.mark.parametrize(
    ("properties", "error"),
    [
        ({"taskId": "1", "dispatchVersion": "1"}, KeyError),
        ({"eventId": "e", "dispatchVersion": "1"}, KeyError),
        ({"eventId": "e", "taskId": "1"}, KeyError),
        ({"eventId": "e", "taskId": "x", "dispatchVersion": "1"}, ValueError),
        ({"eventId": "e", "taskId": "1", "dispatchVersion": "v1"}, ValueError),
        ({"eventId": "", "taskId": "1", "dispatchVersion": "1"}, ValueError),
    ],
)
def test_read_locator_refuses_unusable_properties(
    properties: dict[str, str], error: type[Exception]
) -> None:
    with pytest.raises(error):
        read_locator(properties)


TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.mark.parametrize(
    ("trace_field", "trace_id"),
    [
        ({"traceId": TRACE}, TRACE),
        ({}, ""),  # a command written before trace ids: still accepted
        ({"traceId": None}, ""),
        ({"traceId": TRACE.upper()}, ""),
        ({"traceId": "0" * 32}, ""),
        ({"traceId": "not-a-trace\n"}, ""),
        ({"traceId": 12}, ""),
    ],
)
def test_trace_id_is_optional_and_only_a_valid_one_is_kept(
    trace_field: dict[str, object], trace_id: str
) -> None:
    """Issue 12: the trace id travels in the command; an old or malformed one is not
    poison (the run falls back to the task's)."""
    body = {
        "schemaVersion": COMMAND_SCHEMA_VERSION,
        "eventId": "e-1",
        "taskId": "7",
        "exportType": "CUSTOMER_LIST",
        "dispatchVersion": 2,
        "occurredAt": "2026-12-02T00:00:00.000Z",
        **trace_field,
    }
    command = Command.from_json(json.dumps(body))
    assert command.trace_id == trace_id and command.task_id == 7


def test_a_new_command_carries_the_given_trace_id_in_its_body() -> None:
    command = Command.new(
        7, "CUSTOMER_LIST", 3, "2026-12-02T00:00:00.000Z", trace_id=TRACE, rand=os.urandom
    )
    assert json.loads(command.to_json())["traceId"] == TRACE
    assert Command.from_json(command.to_json()) == command


@pytest.mark.parametrize(
    ("payload", "trace_id"),
    [
        (json.dumps({"traceId": TRACE}), TRACE),
        (json.dumps({"schemaVersion": 1}), None),
        (json.dumps({"traceId": "bad"}), None),
        ("not json", None),
        ("[1]", None),
    ],
)
def test_payload_trace_id_reads_a_stored_body(payload: str, trace_id: str | None) -> None:
    assert payload_trace_id(payload) == trace_id
