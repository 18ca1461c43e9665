"""Value types shared by every layer: the vocabulary between IO and logic.

All are frozen dataclasses or string enums and do no IO. Datetimes are timezone-aware UTC
(the store converts DB values at its edge). 64-bit ids are Python ``int`` here and become
JSON strings only at the HTTP edge (§5: ``Long`` is rendered as a string).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from actors.core.command_message import COMMAND_SCHEMA_VERSION, locating_properties, read_trace_id
from actors.core.data_warning import DataWarning, warnings_from_json
from actors.core.errors import CommandDecodeError
from actors.core.tracing import RandomBytes, new_trace_id, uuid4_text


class TaskStatus(StrEnum):
    """``file_export_task.status`` (§5 state machine)."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    EXPIRED = "EXPIRED"
    #: Cancelled by its requester (or an administrator of its tenant and app) while
    #: PENDING or RUNNING: terminal, retried by hand like FAILED.
    CANCELLED = "CANCELLED"


#: Statuses that count against the per-user and per-type active limits (§14).
ACTIVE_STATUSES: tuple[TaskStatus, ...] = (TaskStatus.PENDING, TaskStatus.RUNNING)
#: Statuses in which no executor will ever touch the task again.
TERMINAL_STATUSES: tuple[TaskStatus, ...] = (
    TaskStatus.SUCCEEDED,
    TaskStatus.FAILED,
    TaskStatus.EXPIRED,
    TaskStatus.CANCELLED,
)


class OutboxStatus(StrEnum):
    """``file_export_outbox.status`` (§7.4). Only QUARANTINED is terminal (§9.4).

    A cancel closes its task's unsent rows as SENT with ``last_error`` "not sent: the task
    was cancelled", so the publisher skips them and pruning removes them like sent rows."""

    PENDING = "PENDING"
    CLAIMED = "CLAIMED"
    SENT = "SENT"
    QUARANTINED = "QUARANTINED"


class ColumnType(StrEnum):
    """Cell types a Provider may declare for a column (§11)."""

    STRING = "STRING"
    INTEGER = "INTEGER"
    DECIMAL = "DECIMAL"
    BOOLEAN = "BOOLEAN"
    DATE = "DATE"
    DATETIME = "DATETIME"


class AppCode(StrEnum):
    """Access domain of a caller and scope of an export type (§10.3 ``app-scope``)."""

    PLATFORM = "PLATFORM"
    MERCHANT = "MERCHANT"


@dataclass(frozen=True, slots=True)
class ColumnDef:
    """One column of a Provider's schema (§10.1 ``columns``).

    ``width`` is in Excel character units, already validated to 1..255 or ``None``.
    ``number_format`` is an Excel number format code for an INTEGER or DECIMAL column
    (``"0.00"``, ``"#,##0.00"``, ``"[$¥-804]#,##0.00"``), already validated by
    ``actors.core.provider.contract.check_number_format``; ``None``: General.
    """

    key: str
    title: str
    type: ColumnType
    width: int | None = None
    number_format: str | None = None


@dataclass(frozen=True, slots=True)
class ChoiceValue:
    """One value a parameter with a fixed set of values takes (``values`` of a hint).

    Attributes:
        value: what the create request sends.
        label: what a form shows (the value itself when the registry gives none).
        translations: (language tag, label) pairs for other languages.
    """

    value: str
    label: str
    translations: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ParameterHint:
    """One parameter an export type takes, as the registry describes it for clients
    (``parameters`` of a definition): it builds forms, and the create checks a declared
    parameter's presence and JSON type (``actors/core/declared_parameters.py``).

    Attributes:
        name: the key in the create request's ``parameters`` object.
        type: one of ``actors.core.registry.PARAMETER_TYPES`` (``string``, ``date`` …).
        required: whether the Provider needs it.
        description: one line for the person filling the form ("" when none).
    """

    name: str
    type: str
    required: bool = False
    description: str = ""
    #: What a form labels it (``label``; ``None``: the name).
    label: str | None = None
    #: The only values it takes, with their labels (``values``; empty: any value).
    values: tuple[ChoiceValue, ...] = ()
    #: Inclusive bounds of an ``integer`` or ``number`` parameter (``minimum``,
    #: ``maximum``; ``None``: unbounded).
    minimum: float | None = None
    maximum: float | None = None
    #: The ``label`` and ``description`` in other languages: (language tag, label,
    #: description) with ``None`` where not given (``actors/core/registry.py``).
    translations: tuple[tuple[str, str | None, str | None], ...] = ()


@dataclass(frozen=True, slots=True)
class ExportDefinition:
    """One registry entry (§10.3), already validated.

    Attributes mirror the YAML keys: ``provider-service`` … ``batch-size``. Row counts are
    rows; ``max_attempts`` is the automatic-retry ceiling snapshotted into a task at create.
    """

    export_type: str
    provider_service: str
    provider_path: str
    required_permission: str
    app_scope: AppCode
    enabled: bool = True
    max_rows: int = 200_000
    max_attempts: int = 3
    batch_size: int = 500
    #: What people see: ``display-name`` (``None``: show the export type),
    #: ``description`` and the ``parameters`` hints, all optional in the registry.
    display_name: str | None = None
    description: str = ""
    parameters: tuple[ParameterHint, ...] = ()
    #: ``display-name`` and ``description`` in other languages: (language tag, display
    #: name, description), ``None`` where not given.
    translations: tuple[tuple[str, str | None, str | None], ...] = ()


@dataclass(frozen=True, slots=True)
class Registry:
    """The set of export definitions in force; replaced whole on a valid reload (§10.3)."""

    definitions: Mapping[str, ExportDefinition] = field(default_factory=dict)

    def get(self, export_type: str) -> ExportDefinition | None:
        """Return the definition for ``export_type`` or ``None`` if it is not registered."""
        return self.definitions.get(export_type)


@dataclass(frozen=True, slots=True)
class Principal:
    """The authenticated caller, from the JWT (§12).

    ``user_id`` and ``tenant_id`` are 64-bit ids; ``perms`` are permission codes such as
    ``platform:customer:export``; ``name`` what people call the user (the token's
    optional ``name`` claim), ``None`` when the token gives none: pages show the id then.
    """

    user_id: int
    tenant_id: int
    app_code: AppCode
    perms: frozenset[str] = frozenset()
    name: str | None = None

    def has(self, perm: str) -> bool:
        return perm in self.perms


#: Permission that lets a caller see and download every task of its tenant and app (§12).
DOWNLOAD_ALL_PERMISSION = "platform:download:all"


@dataclass(frozen=True, slots=True)
class Task:
    """A row of ``file_export_task`` (§7.3, §8.3.1). Datetimes are aware UTC or ``None``."""

    id: int
    task_no: str
    export_type: str
    task_name: str
    format: str
    status: TaskStatus
    parameters_json: str
    tenant_id: int
    app_code: str
    requested_by: int
    dispatch_version: int
    attempt_count: int
    max_attempts: int
    next_retry_at: datetime
    lease_owner: str | None
    lease_until: datetime | None
    last_heartbeat_at: datetime | None
    execution_deadline_at: datetime | None
    processed_rows: int
    total_rows: int | None
    file_name: str | None
    object_key: str | None
    content_type: str | None
    size_bytes: int | None
    failure_message: str | None
    requested_at: datetime
    started_at: datetime | None
    completed_at: datetime | None
    expires_at: datetime | None
    updated_at: datetime | None = None
    trace_id: str | None = None
    """W3C trace id created at the API (``actors/core/tracing.py``); ``None`` for tasks
    created before the column existed."""
    warnings_json: str | None = None
    handback_count: int = 0
    """Hand-backs in a row (shutdown, database fault, watchdog outage) since an attempt of
    the task last ended otherwise (``actors/core/handback.py``)."""
    requester_name: str | None = None
    """What people call the requester (the token's ``name`` claim at create), or
    ``None``: pages show ``requested_by`` then."""
    failure_code: str | None = None
    """The stable code of ``failure_message`` (``ExportError.code``, or the code a
    transition writes itself: ``cancelled``, ``worker-lost`` …): the key of what people
    read about it (``actors/core/messages.py``). ``None`` without a failure, and for tasks
    that failed before the column existed."""

    @property
    def parameters(self) -> dict[str, Any]:
        """The normalised parameter object stored at create (§12 limits applied)."""
        value: dict[str, Any] = json.loads(self.parameters_json)
        return value

    @property
    def warnings(self) -> list[DataWarning]:
        """The data warnings of the last successful run (cells truncated, values written
        as text, …), each with its kind; ``[]`` when there were none or the task has not
        succeeded (:func:`~actors.core.data_warning.warnings_from_json`)."""
        return warnings_from_json(self.warnings_json)


@dataclass(frozen=True, slots=True)
class OutboxRow:
    """A row of ``file_export_outbox`` (§7.2)."""

    id: int
    event_id: str
    task_id: int
    dispatch_version: int
    topic: str
    tag: str
    message_key: str
    payload_json: str
    status: OutboxStatus
    attempt_count: int
    next_retry_at: datetime
    lease_owner: str | None
    lease_until: datetime | None
    sent_at: datetime | None
    last_error: str | None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    due_at: datetime | None = None
    """When the row first became due since it was written or re-queued; send back-off
    moves ``next_retry_at``, never this. ``None`` for a row written before the column."""


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
        built by :func:`actors.core.command_message.locating_properties`)."""
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


@dataclass(frozen=True, slots=True)
class ProviderBatch:
    """One validated Provider response page (§10.1 ``data``).

    ``columns`` is set on the first batch only; ``rows`` are dicts keyed by column key
    with raw JSON values (typing happens in the writer). ``total_rows`` is an estimate
    for progress display only (§10.2).
    """

    schema_version: int
    schema_hash: str
    snapshot_token: str | None
    columns: tuple[ColumnDef, ...] | None
    rows: list[dict[str, Any]]
    next_cursor: str | None
    has_more: bool
    total_rows: int | None

    @property
    def row_count(self) -> int:
        """Rows in this batch."""
        return len(self.rows)

    def summary(self) -> BatchSummary:
        """The batch without its rows: what the cross-batch rules read."""
        return BatchSummary(
            schema_hash=self.schema_hash,
            snapshot_token=self.snapshot_token,
            columns=self.columns,
            next_cursor=self.next_cursor,
            has_more=self.has_more,
            total_rows=self.total_rows,
            row_count=len(self.rows),
        )


@dataclass(frozen=True, slots=True)
class BatchSummary:
    """One validated Provider batch (the answer's ``data``) without its rows.

    An export worker process decodes and keeps the rows; it hands the parent this summary,
    which is all the cross-batch rules need (schemaHash and snapshot token unchanged, the
    cursor advancing, the ``max-rows`` bounds) and all the next request needs (the cursor).
    Fields mean what they mean on :class:`ProviderBatch`; ``row_count`` is its number of
    rows.
    """

    schema_hash: str
    snapshot_token: str | None
    columns: tuple[ColumnDef, ...] | None
    next_cursor: str | None
    has_more: bool
    total_rows: int | None
    row_count: int
