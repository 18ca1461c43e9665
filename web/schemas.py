"""The API's request and response shapes as pydantic models, for ``GET /openapi.json``.

They declare what the routes of ``web/api.py`` accept and answer, in the API's own
spelling (camelCase, 64-bit numbers as strings, the ``{"code", "message", "data"}``
envelope). They document; they do not validate requests: the core's checks
(``actors/core/limits.py``, ``actors/core/task_list.py``, ``actors/core/access.py``)
stay the only ones, with their messages naming the field, and the schemathesis run of the
test suite (``tests/web/test_openapi_fuzz.py``) checks that every answer matches these
models. Business outcomes, refusals included, answer HTTP 200 with the envelope code
(``"400"``, ``"403"``, ``"404"``, ``"409"``, ``"410"``, ``"429"``); a missing or invalid
token answers HTTP 401, an unreachable database HTTP 503 (``web/app.py``).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from actors.core.events import TaskEventKind
from actors.core.limits import (
    MAX_KEYS,
    MAX_PAGE,
    MAX_PAGE_SIZE,
    MAX_TASK_NAME,
)
from actors.core.messages import FAILURE_CODES, WARNING_KINDS, Remedy
from actors.core.models import TaskStatus
from actors.core.task_list import DEFAULT_PAGE_SIZE, MAX_EXPORT_TYPE_CHARS

#: A 64-bit id or count, as a JSON string (it does not fit a JavaScript number).
Int64 = Annotated[str, Field(pattern=r"^[0-9]{1,19}$")]
#: An envelope code: ``"200"`` for success, else the HTTP-like code of the outcome.
Code = Annotated[str, Field(pattern=r"^[0-9]{3}$", examples=["200", "404"])]


def readable_title(name: str, _info: object = None) -> str:
    """A field's title in the document: ``exportType`` reads "Export type", not
    pydantic's "Exporttype"."""
    return re.sub(r"(?<!^)(?=[A-Z])", " ", name).capitalize()


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", field_title_generator=readable_title)


# --- requests --------------------------------------------------------------------------


class CreateTaskRequest(BaseModel):
    """A new export. Any other field is refused (code 400 naming it)."""

    model_config = ConfigDict(extra="forbid", field_title_generator=readable_title)

    exportType: str = Field(
        min_length=1,
        description="An export type of the registry that the caller may request.",
        examples=["CUSTOMER_LIST"],
    )
    format: Literal["XLSX"] | None = Field(
        default="XLSX", description="The only format is XLSX (the default)."
    )
    taskName: str | None = Field(
        default=None,
        max_length=MAX_TASK_NAME,
        description="A name for the task and its file; the export type when absent.",
    )
    parameters: dict[str, Any] | None = Field(
        default=None,
        max_length=MAX_KEYS,
        description=(
            "What to export, passed to the Provider: at most 20 keys, 4 KB of JSON, strings "
            "of at most 256 characters, nested at most 2 levels (README, 'Limits')."
        ),
        examples=[{"rowCount": 1000, "status": "ACTIVE"}],
    )


class ListTasksQuery(BaseModel):
    """The task list's query string (``actors/core/task_list.py``). A parameter other than
    ``status`` given twice is refused."""

    model_config = ConfigDict(field_title_generator=readable_title)

    status: list[TaskStatus] | None = Field(
        default=None,
        description=(
            "Only tasks in these statuses: repeat the parameter "
            "(status=PENDING&status=RUNNING) or separate them with commas."
        ),
    )
    exportType: str | None = Field(default=None, min_length=1, max_length=MAX_EXPORT_TYPE_CHARS)
    requestedFrom: AwareDatetime | None = Field(
        default=None, description="Tasks requested at or after this time (ISO-8601)."
    )
    requestedTo: AwareDatetime | None = Field(
        default=None, description="Tasks requested before this time (ISO-8601)."
    )
    requestedBy: Int64 | None = Field(
        default=None,
        description=(
            "One requester's tasks; only for callers holding platform:download:all "
            "(others get the envelope code 403)."
        ),
    )
    page: int = Field(default=1, ge=1, le=MAX_PAGE)
    pageSize: int = Field(default=DEFAULT_PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE)


# --- responses -------------------------------------------------------------------------


class DataWarning(_Model):
    """One data warning of a ready file, with its kind."""

    kind: str = Field(json_schema_extra={"enum": list(WARNING_KINDS)})
    detail: str = Field(description="The warning in technical words, with examples.")


class Task(_Model):
    """An export task."""

    id: Int64
    taskNo: str
    exportType: str
    taskName: str
    format: str
    status: TaskStatus
    dispatchVersion: int = Field(description="The attempt's version; grows with each retry.")
    attemptCount: int
    maxAttempts: int
    handbackCount: int = Field(
        description="Runs in a row ended by a shutdown, a database fault or a watchdog"
        " outage (handed back); past the service's bound each one counts as an attempt."
    )
    processedRows: Int64
    totalRows: Int64 | None
    fileName: str | None
    sizeBytes: Int64 | None
    failureMessage: str | None = Field(
        description="What went wrong, in technical words (for support and operators)."
    )
    failureCode: str | None = Field(
        description="Stable code of the failure (or of the last attempt's, while a retry"
        " waits); null without one. Tasks that failed before codes were stored answer"
        " export-failed.",
        json_schema_extra={"enum": [*FAILURE_CODES, None]},
    )
    failureReason: str | None = Field(
        description="What the failure means and what to do, in plain English words."
    )
    remedy: Remedy | None = Field(
        description="What may help: retry (run it again unchanged), edit (change the"
        " request and export again) or support (quote the task number to support)."
    )
    requestedAt: AwareDatetime
    startedAt: AwareDatetime | None
    completedAt: AwareDatetime | None
    expiresAt: AwareDatetime | None
    nextRetryAt: AwareDatetime | None = Field(description="When a PENDING task may run next.")
    requestedBy: Int64 = Field(description="The user who asked for the export.")
    requesterName: str | None = Field(
        description="What people call that user (the token's name claim at create);"
        " null when the token gave none."
    )
    tenantId: Int64
    appCode: str
    parameters: dict[str, Any] = Field(description="The parameters as stored (normalised).")
    warnings: list[str] = Field(
        description="Data warnings of the last successful run (e.g. cells truncated)."
    )
    dataWarnings: list[DataWarning] = Field(
        description="The same warnings, each with its kind, for a plain-words note."
    )
    lastError: str | None = Field(
        description="The failed attempt's message while an automatic retry waits, else null."
    )
    traceId: str | None = Field(
        description="The task's W3C trace id (32 hex digits) given at create, on every log "
        "line of its runs: quote it when reporting a problem. Null for tasks created before "
        "trace ids existed."
    )


class WaitingNotice(_Model):
    """Why new exports wait: ``reason`` is a stable code (the page's words come from
    ``/i18n/{language}.json``'s ``notices``), ``message`` the English words."""

    reason: str = Field(json_schema_extra={"enum": ["storage-unavailable"]})
    message: str


class TaskPage(_Model):
    """A page of the task list, newest first by (requestedAt, id)."""

    items: list[Task]
    total: Int64 = Field(description="Matching tasks, counted up to 1,000.")
    totalCapped: bool = Field(description="There are more than ``total`` matching tasks.")
    page: int
    pageSize: int
    waiting: WaitingNotice | None = Field(
        description="Why new exports wait (null when they do not): the file storage cannot"
        " be reached, and nothing starts until it can."
    )


class TaskEvent(_Model):
    """One entry of a task's history."""

    id: Int64
    taskId: Int64
    kind: TaskEventKind
    at: AwareDatetime
    detail: dict[str, Any] = Field(description="The kind's own fields.")


class TaskEvents(_Model):
    """A task's history, oldest first; the newest 1,000 events when ``truncated``."""

    items: list[TaskEvent]
    truncated: bool


class TaskEnvelope(_Model):
    """The envelope of one task: ``data`` is null unless ``code`` is ``"200"``."""

    code: Code
    message: str
    data: Task | None


class CreatedTask(Task):
    """The answer of a create: the task, and whether it is an earlier one."""

    duplicate: bool = Field(
        description="True when the same request (same user, type and parameters) came"
        " within the duplicate window: the task is the active one it created then, and"
        " no new export was started."
    )


class CreatedTaskEnvelope(_Model):
    """The envelope of a create: ``data`` is null unless ``code`` is ``"200"``."""

    code: Code
    message: str
    data: CreatedTask | None


class TaskPageEnvelope(_Model):
    """The envelope of a list page: ``data`` is null unless ``code`` is ``"200"``."""

    code: Code
    message: str
    data: TaskPage | None


class TaskEventsEnvelope(_Model):
    """The envelope of a task's history: ``data`` is null unless ``code`` is ``"200"``."""

    code: Code
    message: str
    data: TaskEvents | None


class ErrorEnvelope(_Model):
    """A refusal or failure: ``message`` says why (naming the field of a bad request)."""

    code: Code
    message: str
    data: None


class Health(_Model):
    """Readiness: ``ok``, or why not (``starting``, ``stopping``, ``database unavailable``)."""

    status: str


class ComponentStatus(_Model):
    """One component as this instance last saw it."""

    status: str = Field(
        description="`up`, `down`, or `unknown` while it has not been checked yet.",
        json_schema_extra={"enum": ["up", "down", "unknown"]},
    )
    detail: str = Field(description="Why it is down; empty when up.")


class HealthDetails(_Model):
    """Which component is degraded. ``status`` is ``degraded`` when a component is down,
    ``unknown`` while one has not been checked yet (just after start), else ``ok``;
    ``ready`` is what ``/healthz`` answers (a load balancer's question:
    can this instance serve the API). A transport that is down degrades the service
    (tasks run from the database, at the speed of its poll) without making it unready."""

    status: str
    ready: str
    components: dict[str, ComponentStatus]


# --- session, export types (web/session.py, web/export_types.py) -------------------------


class SignInRequest(BaseModel):
    """A bearer token to keep in the session cookie."""

    model_config = ConfigDict(field_title_generator=readable_title)

    token: str = Field(min_length=1, max_length=8192, description="A JWT, as in the header.")


class Session(_Model):
    """Who the token says the caller is; ``csrfToken`` is null when the caller used the
    ``Authorization`` header (no session, no CSRF check)."""

    userId: Int64
    tenantId: Int64
    appCode: str
    perms: list[str]
    name: str | None = Field(description="The token's name claim; null when it has none.")
    expiresAt: AwareDatetime
    csrfToken: str | None


class SessionEnvelope(_Model):
    """The envelope of a session: ``data`` is null unless ``code`` is ``"200"``."""

    code: Code
    message: str
    data: Session | None


class SignedOut(_Model):
    """What signing out left to do: ``signOutUrl`` ends the session at the company's
    identity provider too (the page goes there); null when there is none."""

    signOutUrl: str | None


class SignOutEnvelope(_Model):
    """The envelope of a sign-out: ``data`` is null unless ``code`` is ``"200"``."""

    code: Code
    message: str
    data: SignedOut | None


class ParameterHintModel(_Model):
    """One parameter an export type takes, as the registry describes it (a hint)."""

    name: str
    type: str
    required: bool
    label: str = Field(description="What a form labels it (the name when none is given).")
    description: str
    values: list[ChoiceValueModel] = Field(
        description="The only values it takes, for a select; [] when any value."
    )
    minimum: float | None = Field(description="Least value of a number; null: none.")
    maximum: float | None = Field(description="Greatest value of a number; null: none.")
    translations: dict[str, dict[str, str]] = Field(
        description="Language tag (e.g. zh-CN) to the label and description in it."
    )


class ChoiceValueModel(_Model):
    """One value of a parameter with a fixed set of values."""

    value: str
    label: str
    translations: dict[str, str] = Field(description="Language tag to the label in it.")


class ExportType(_Model):
    """An export type the caller may request."""

    exportType: str
    displayName: str
    description: str
    formats: list[Literal["XLSX"]]
    maxRows: int
    parameters: list[ParameterHintModel] = Field(description="[] when the registry has none.")
    translations: dict[str, dict[str, str]] = Field(
        description="Language tag (e.g. zh-CN) to the displayName and description in it."
    )


class ExportTypesEnvelope(_Model):
    """The envelope of the export types: ``data`` is null unless ``code`` is ``"200"``."""

    code: Code
    message: str
    data: list[ExportType] | None
