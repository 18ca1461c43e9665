"""An export command on the queue (§6.4): its body, :class:`Command` (identifiers only,
encoded and decoded here), and its envelope: tag, key and the locating message
properties, built here and read here.

The command body (:meth:`Command.to_json` / :meth:`Command.from_json`) may be what is
broken in a poison message, so the four fields that locate the command —
``eventId``, ``taskId``, ``dispatchVersion``, ``schemaVersion`` — travel again as message
properties, equal to the body's. The publisher builds them from the outbox columns
(:func:`locating_properties`); the DLQ handler reads them back (:func:`read_locator`)
without touching the body. Every 64-bit id is a decimal string on the wire.

The body's ``traceId`` (W3C trace id of the export, ``actors/core/tracing.py``) is
optional: commands written before trace ids existed have none or another shape, and are
still accepted (:func:`read_trace_id`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from actors.core.errors import CommandDecodeError
from actors.core.tracing import RandomBytes, is_trace_id, new_trace_id, uuid4_text

#: The body's ``schemaVersion`` this build writes and accepts.
COMMAND_SCHEMA_VERSION = 1
#: The message tag of every export command.
COMMAND_TAG = "EXPORT_TASK"
#: Message properties that locate a command without its body.
LOCATING_PROPERTIES = ("eventId", "taskId", "dispatchVersion", "schemaVersion")


@dataclass(frozen=True, slots=True)
class Command:
    """The export command message (§6.4): identifiers only, never business data."""

    event_id: str
    task_id: int
    export_type: str
    dispatch_version: int
    occurred_at: str
    trace_id: str
    schema_version: int = COMMAND_SCHEMA_VERSION

    @classmethod
    def new(
        cls,
        task_id: int,
        export_type: str,
        dispatch_version: int,
        occurred_at: str,
        trace_id: str | None = None,
        *,
        rand: RandomBytes,
    ) -> Command:
        """A command with a fresh random ``eventId`` (a version-4 UUID, §6.4).

        Args:
            task_id: the task.
            export_type: its export type.
            dispatch_version: the attempt the command is for.
            occurred_at: an ISO-8601 label of the instance clock.
            trace_id: the task's trace id; a new one when ``None``.
            rand: the source of random bytes (``os.urandom``; tests pass a fixed one).
        """
        return cls(
            event_id=uuid4_text(rand(16)),
            task_id=task_id,
            export_type=export_type,
            dispatch_version=dispatch_version,
            occurred_at=occurred_at,
            trace_id=trace_id or new_trace_id(rand),
        )

    def to_json(self) -> str:
        """The JSON body; ``taskId`` is a string as every 64-bit id on the wire (§6.4)."""
        return json.dumps(
            {
                "schemaVersion": self.schema_version,
                "eventId": self.event_id,
                "taskId": str(self.task_id),
                "exportType": self.export_type,
                "dispatchVersion": self.dispatch_version,
                "occurredAt": self.occurred_at,
                "traceId": self.trace_id,
            },
            separators=(",", ":"),
        )

    def properties(self) -> dict[str, str]:
        """The four locating fields as message properties, equal to the payload (§6.4;
        built by :func:`locating_properties`)."""
        return locating_properties(
            self.event_id, self.task_id, self.dispatch_version, self.schema_version
        )

    @classmethod
    def from_json(cls, body: str | bytes) -> Command:
        """Decode a command body.

        Raises:
            CommandDecodeError: the body is not JSON, a field is missing or of the wrong
                type, or ``schemaVersion`` is unsupported. Such a message is poison (§6.4):
                the consumer must not ack it, so it ends in the DLQ.
        """
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise CommandDecodeError(f"body is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise CommandDecodeError("body is not a JSON object")
        version = data.get("schemaVersion")
        if version != COMMAND_SCHEMA_VERSION or isinstance(version, bool):
            raise CommandDecodeError(f"unsupported schemaVersion {version!r}")
        try:
            task_id = int(data["taskId"])
            dispatch_version = data["dispatchVersion"]
            event_id = data["eventId"]
            export_type = data["exportType"]
        except (KeyError, TypeError, ValueError) as exc:
            raise CommandDecodeError(f"missing or malformed field: {exc}") from None
        if not isinstance(dispatch_version, int) or isinstance(dispatch_version, bool):
            raise CommandDecodeError("dispatchVersion is not an integer")
        if not isinstance(event_id, str) or not event_id or not isinstance(export_type, str):
            raise CommandDecodeError("eventId/exportType must be non-empty strings")
        return cls(
            event_id=event_id,
            task_id=task_id,
            export_type=export_type,
            dispatch_version=dispatch_version,
            occurred_at=str(data.get("occurredAt", "")),
            trace_id=read_trace_id(data.get("traceId")),
            schema_version=version,
        )


def message_key(task_id: int) -> str:
    """The message key of a task's commands: its id as a decimal string, so the
    broker can look up every command of one task."""
    return str(task_id)


@dataclass(frozen=True, slots=True)
class Locator:
    """The locating fields of a command, read from its message properties.

    Attributes:
        event_id: the command's ``eventId`` (non-empty).
        task_id: the task's 64-bit id.
        dispatch_version: the attempt the command is for.
    """

    event_id: str
    task_id: int
    dispatch_version: int


def locating_properties(
    event_id: str, task_id: int, dispatch_version: int, schema_version: object
) -> dict[str, str]:
    """The locating message properties of a command.

    Args:
        event_id: ``eventId`` of the body.
        task_id: ``taskId``; written as a decimal string.
        dispatch_version: ``dispatchVersion``; written as a decimal string.
        schema_version: ``schemaVersion`` of the body (see :func:`payload_schema_version`);
            written with ``str``, a decimal string for an integer.

    Returns:
        The properties, named as :data:`LOCATING_PROPERTIES`.
    """
    return {
        "eventId": event_id,
        "taskId": str(task_id),
        "dispatchVersion": str(dispatch_version),
        "schemaVersion": str(schema_version),
    }


def payload_schema_version(payload_json: str) -> object:
    """The ``schemaVersion`` a stored command body declares, for its message property.

    Args:
        payload_json: the outbox row's body, as stored.

    Returns:
        The body's ``schemaVersion`` as it is (even if unsupported: the property must
        equal the body, and the consumer dead-letters it), or
        :data:`COMMAND_SCHEMA_VERSION` when the body is not a JSON object or has none.
    """
    try:
        value: object = json.loads(payload_json).get("schemaVersion", COMMAND_SCHEMA_VERSION)
    except (ValueError, AttributeError):
        return COMMAND_SCHEMA_VERSION
    return value


def payload_trace_id(payload_json: str) -> str | None:
    """The ``traceId`` a stored command body carries, for the publisher's log lines.

    Args:
        payload_json: the outbox row's body, as stored.

    Returns:
        The valid trace id (:func:`read_trace_id`), or ``None`` when the body is not a JSON
        object or has none.
    """
    try:
        value: object = json.loads(payload_json).get("traceId")
    except (ValueError, AttributeError):
        return None
    return read_trace_id(value) or None


def read_locator(properties: Mapping[str, str]) -> Locator:
    """Read the locating fields back from message properties.

    Args:
        properties: the message's properties.

    Returns:
        The :class:`Locator`.

    Raises:
        KeyError: a locating property is missing (the message names it).
        ValueError: ``taskId`` or ``dispatchVersion`` is not an integer, or ``eventId``
            is empty.
    """
    event_id = properties["eventId"]
    task_id = int(properties["taskId"])
    version = int(properties["dispatchVersion"])
    if not event_id:
        raise ValueError("empty eventId")
    return Locator(event_id, task_id, version)


def read_trace_id(value: object) -> str:
    """The ``traceId`` of a command body, as the consumer uses it.

    Args:
        value: the body's ``traceId`` field (missing: ``None``).

    Returns:
        ``value`` when it is a valid trace id (32 lowercase hex digits, not all zero),
        else ``""``: an old or foreign command without one is not poison; the run takes
        the task's trace id (``actors.core.tracing.run_trace_id``).
    """
    return str(value) if is_trace_id(value) else ""
