"""The export-task API (§5): create, list, detail, download, retry, cancel.

Business outcomes answer HTTP 200 with the envelope; ``code == "200"`` means success
(§5). A missing or invalid token answers 401. Who may see, create, download and retry a
task is decided in ``actors/core/access.py``; the core's refusals become envelope codes
in ``web/errors.py``.
"""

from __future__ import annotations

import logging
from typing import Any

from quart import Blueprint, Response, current_app, jsonify, request

from actors.core.access import (
    authorise,
    downloadable_key,
    parse_task_id,
    sees_all_requesters,
    sees_instances,
    visible_task,
)
from actors.core.cancel import cancel_message, check_cancelled
from actors.core.declared_parameters import check_declared_parameters
from actors.core.definitions import ExportDefinition
from actors.core.errors import RequestError
from actors.core.events import MAX_TASK_EVENTS
from actors.core.health import Component
from actors.core.http.byte_range import byte_range, etag
from actors.core.limits import (
    create_request,
    list_total,
    normalise_parameters,
    parse_json_body,
)
from actors.core.log_context import task_fields
from actors.core.messages import waiting_notice
from actors.core.models import Task
from actors.core.outcomes import CancelOutcome, CreateOutcome, NewTask
from actors.core.principal import Principal
from actors.core.task_json import event_json, task_json
from actors.core.task_list import parse_list_query
from actors.core.text import content_disposition
from actors.core.tracing import masked_parameters
from actors.core.usecases import cancel_task as cancel_task_once
from actors.core.usecases import create_task as create_task_once
from actors.core.usecases import retry_task as retry_task_once
from web.access_log import current_trace_id, note_task
from web.auth import request_principal
from web.dependencies import Dependencies
from web.errors import ApiError, api_error
from web.openapi import AUTH_DB, WRITE_DB, declare
from web.schemas import (
    CreatedTaskEnvelope,
    CreateTaskRequest,
    ListTasksQuery,
    TaskEnvelope,
    TaskEventsEnvelope,
    TaskPageEnvelope,
)
from web.serialize import envelope

log = logging.getLogger(__name__)

PREFIX = "/api/platform/v1/files/export-tasks"
#: What every route on one task may refuse (``/openapi.json``).
TASK_REFUSALS = {
    "400": "the task id is not an id (ASCII digits)",
    "404": "no such task, or not yours",
}

api = Blueprint("export_tasks", __name__)


@api.app_errorhandler(RequestError)
async def _refused(exc: RequestError) -> Any:
    """A refusal of the core, answered with its envelope code (``web/errors.py``)."""
    err = api_error(exc)
    return jsonify(envelope(None, code=err.code, message=err.message)), err.http_status


def current_deps() -> Dependencies:
    return current_app.config["DEPENDENCIES"]  # type: ignore[no-any-return]


def caller() -> Principal:
    return request_principal(current_deps().tokens)  # bearer header or session cookie


def ok(data: Any, message: str = "success") -> dict[str, Any]:
    return envelope(data, message=message)


async def owned_task(principal: Principal, raw_id: str) -> Task:
    """The task of a request path, if the caller may see it (``actors/core/access.py``)."""
    task_id = parse_task_id(raw_id)
    task = visible_task(principal, await current_deps().api_store.get_task(task_id), raw_id)
    note_task(task.id, task.trace_id)  # the access line shows the export's trace id
    return task


def check_definition(principal: Principal, export_type: str) -> ExportDefinition:
    """The registry entry in force for ``export_type``, if the caller may use it
    (``authorise`` in ``actors/core/access.py``)."""
    return authorise(export_type, current_deps().registry.current.get(export_type), principal)


@api.post(PREFIX)
@declare(
    CreatedTaskEnvelope,
    request=CreateTaskRequest,
    codes={
        "400": "a field or parameter breaks a rule (the message names it)",
        "403": "the export type is disabled, outside the caller's app, or needs a"
        " permission the caller lacks",
        "429": "too many active exports (the caller's, or the type's)",
    },
    http=WRITE_DB,
)
async def create_task() -> Any:
    """Create an export task.

    Answers the new PENDING task at once; the export runs in the background. A second
    request with the same parameters within 60 seconds answers the active task instead,
    with `duplicate` true (and the message "duplicate submission"). Refusals: 400 (a
    field, named), 403 (export type disabled, out of the app's scope, or a missing
    permission), 429 (active-task limits).
    """
    principal = caller()
    fields = create_request(
        parse_json_body(await request.get_data(cache=False, as_text=False, parse_form_data=False))
    )
    export_type = fields.export_type
    definition = check_definition(principal, export_type)
    params = normalise_parameters(fields.parameters)
    check_declared_parameters(definition.parameters, fields.parameters or {})
    deps = current_deps()
    result = await create_task_once(
        deps.api_store,
        NewTask(
            export_type,
            fields.task_name,
            fields.format,
            params,
            principal,
            definition.max_attempts,
            trace_id=current_trace_id(),  # the request's: a valid traceparent's, else new
        ),
        deps.create_limits,
    )
    assert result.task is not None
    note_task(result.task.id, result.task.trace_id)
    if result.outcome == CreateOutcome.DUPLICATE:
        return ok(
            {**task_json(result.task), "duplicate": True},
            "duplicate submission: the active task is returned",
        )
    deps.metrics.task_created.labels(export_type).inc()
    deps.wakeup.set()  # the row is committed: let the publisher send it now (§7.4)
    log.info(
        "task created",
        extra=task_fields(
            result.task.id,
            exportType=export_type,
            userId=str(principal.user_id),
            parameters=masked_parameters(fields.parameters),
        ),
    )
    return ok({**task_json(result.task), "duplicate": False})


@api.get(PREFIX)
@declare(
    TaskPageEnvelope,
    querystring=ListTasksQuery,
    codes={"400": "a filter or the page is not valid (the message names it)"},
    http=AUTH_DB,
)
async def list_tasks() -> Any:
    """List the caller's tasks, newest first.

    With ``platform:download:all``, every task of the caller's tenant and app. Ordered by
    (requestedAt, id), so pages are stable; the query's filters all apply together.
    ``total`` counts at most 1,000 matching tasks and ``totalCapped`` says when there are
    more. ``waiting`` says why new exports wait, when they do (the file storage cannot be
    reached: nothing starts until it can), else null.
    """
    # The filters: actors/core/task_list.py; the cap: LIST_TOTAL_CAP, actors/core/limits.py.
    principal = caller()
    sees_all = sees_all_requesters(principal)
    query = parse_list_query(request.args.to_dict(flat=False), sees_all=sees_all)
    tasks, total = await current_deps().api_store.list_tasks(
        principal,
        all_users=sees_all,
        filters=query.filter,
        limit=query.page_size,
        offset=query.offset,
    )
    shown, capped = list_total(total)
    return ok(
        {
            "items": [task_json(t) for t in tasks],
            "total": str(shown),
            "totalCapped": capped,
            "page": query.page,
            "pageSize": query.page_size,
            "waiting": waiting_notice(current_deps().health.get(Component.STORAGE)),
        }
    )


@api.get(PREFIX + "/<task_id>")
@declare(TaskEnvelope, codes=TASK_REFUSALS, http=AUTH_DB)
async def get_task(task_id: str) -> Any:
    """One task, if the caller may see it (else 404)."""
    return ok(task_json(await owned_task(caller(), task_id)))


@api.get(PREFIX + "/<task_id>/download")
@declare(
    TaskEnvelope,
    codes={
        **TASK_REFUSALS,
        "409": "the task has no file (not SUCCEEDED)",
        "410": "the file has expired and was deleted",
    },
    http=AUTH_DB,
)
async def download(task_id: str) -> Any:
    """Download the task's XLSX file.

    The file itself when the task SUCCEEDED and its file is kept; otherwise the envelope:
    404 (no such task for the caller, or the file is missing), 409 (not finished), 410
    (expired). The envelope's ``data`` is then null. A single ``Range`` (with
    ``If-Range: <ETag>``) resumes a download: 206 with those bytes, 416 past the end
    (``actors/core/http/byte_range.py``). A download event is recorded for a GET that starts
    at the first byte; a HEAD or the rest of a resumed download records none. With
    ``FILE_EXPORT_DOWNLOAD_MODE=redirect`` a GET answers 302 to a short-lived presigned
    URL of the bucket instead, after the same access check (one download event).
    """
    principal = caller()
    task = await owned_task(principal, task_id)
    object_key = downloadable_key(task)
    deps = current_deps()
    storage = deps.storage
    file_name = task.file_name or f"{task.task_no}.xlsx"
    size = await storage.size(object_key)
    if size is None:  # checked before a redirect too: the bucket would answer in XML
        log.error(
            "task file missing from storage", extra=task_fields(task.id, objectKey=object_key)
        )
        raise ApiError("404", "the export file is missing from storage")
    if deps.download_url_seconds is not None and request.method != "HEAD":
        url = await storage.download_url(object_key, file_name, deps.download_url_seconds)
        if url is not None:
            # The bucket serves the bytes (and ranges); the access check above stays ours.
            await deps.api_store.record_download(task.id, principal.user_id)
            return "", 302, {"Location": url, "Cache-Control": "no-store"}
    tag = etag(object_key)
    part = byte_range(request.headers.get("Range"), request.headers.get("If-Range"), size, tag)
    if part.status == 416:
        headers = {"Content-Range": part.content_range or f"bytes */{size}", "ETag": tag}
        body = envelope(None, code="416", message=f"the range starts past the file's {size} bytes")
        return jsonify(body), 416, headers
    # A HEAD asks about the file and a later range resumes one: only the GET that starts
    # at the first byte hands the file over.
    if request.method != "HEAD" and part.start == 0:
        await current_deps().api_store.record_download(task.id, principal.user_id)
    headers = {
        "Content-Disposition": content_disposition(file_name),
        "Content-Length": str(part.length),
        "Cache-Control": "no-store",
        "Accept-Ranges": "bytes",
        "ETag": tag,
    }
    if part.content_range is not None:
        headers["Content-Range"] = part.content_range
    return Response(
        storage.load(object_key, part.start, part.length),
        status=part.status,
        content_type=task.content_type or "application/octet-stream",
        headers=headers,
    )


@api.post(PREFIX + "/<task_id>/retry")
@declare(
    TaskEnvelope,
    codes={
        "403": "the export type is disabled, or needs a permission the caller lacks",
        **TASK_REFUSALS,
        "409": "the task is not FAILED or CANCELLED (or changed meanwhile)",
        "429": "too many active exports (the caller's, or the type's)",
    },
    http=WRITE_DB,
)
async def retry(task_id: str) -> Any:
    """Retry a FAILED or CANCELLED task by hand, as a new version.

    Identity, tenant, permission and the export type's ``enabled`` are checked again.
    Refusals: 403, 404, 409 (another status, or the task changed meanwhile), 429.
    """
    principal = caller()
    task = await owned_task(principal, task_id)
    deps = current_deps()
    updated = await retry_task_once(
        deps.api_store,
        task,
        deps.create_limits,
        # Identity, tenant, permission and enabled are checked again now (design-rules §9.3).
        check_type=lambda t: check_definition(principal, t.export_type),
        delete_leftover=deps.storage.delete,
    )
    deps.wakeup.set()
    log.info(
        "task retried by hand",
        extra=task_fields(task.id, updated.dispatch_version, userId=str(principal.user_id)),
    )
    return ok(task_json(updated))


@api.post(PREFIX + "/<task_id>/cancel")
@declare(
    TaskEnvelope,
    codes={
        **TASK_REFUSALS,
        "409": "the task has ended (not PENDING, RUNNING or CANCELLED)",
    },
    http=WRITE_DB,
)
async def cancel(task_id: str) -> Any:
    """Cancel a PENDING or RUNNING task.

    For the owner, or ``platform:download:all`` in the same tenant and app
    (``actors/core/cancel.py``). Idempotent on CANCELLED; any other status answers
    ``409``. A run of the task stops at its next fenced write; one in this process is
    woken at once.
    """
    principal = caller()
    task = await owned_task(principal, task_id)
    deps = current_deps()
    result = await cancel_task_once(
        deps.api_store, task.id, cancel_message(principal.user_id), by=principal.user_id
    )
    if result.outcome == CancelOutcome.CANCELLED:
        deps.runs.cancelled(task.id)
        deps.metrics.task_completed.labels(task.export_type, "CANCELLED").inc()
        log.info(
            "task cancelled",
            extra=task_fields(task.id, was=task.status.value, userId=str(principal.user_id)),
        )
    return ok(task_json(check_cancelled(result.outcome, result.task)))


@api.get(PREFIX + "/<task_id>/events")
@declare(TaskEventsEnvelope, codes=TASK_REFUSALS, http=AUTH_DB)
async def events(task_id: str) -> Any:
    """The task's history, oldest first.

    For whoever may see the task (``actors/core/access.py``); the newest 1,000 events
    with ``truncated`` when there are more (``actors/core/events.py``). Which instance ran
    an attempt (host and process id) is shown to administrators only.
    """
    principal = caller()
    task = await owned_task(principal, task_id)
    events = await current_deps().api_store.list_task_events(task.id, limit=MAX_TASK_EVENTS + 1)
    instances = sees_instances(principal)
    return ok(
        {
            "items": [event_json(e, instances=instances) for e in events[-MAX_TASK_EVENTS:]],
            "truncated": len(events) > MAX_TASK_EVENTS,  # older events left out
        }
    )
