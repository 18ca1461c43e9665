"""The access log: one line per HTTP request, and the request's identifiers on every line.

:class:`AccessLog` wraps the app's ASGI callable (``app.asgi_app``). For each HTTP request
it

- takes the request id from ``X-Request-Id`` when sane, else draws one
  (:func:`actors.core.tracing.request_id`), and echoes it in the response's
  ``X-Request-Id``;
- takes the trace id from a valid W3C ``traceparent`` header, else draws one
  (:func:`actors.core.tracing.request_trace_id`): a create stores it on the new task
  (:func:`current_trace_id`);
- binds ``requestId`` and ``traceId`` to every log line of the request
  (:func:`actors.core.log_context.bind_context`);
- writes one line to the ``web.access_log`` logger when the response is over (a download or
  an event stream: when its last byte is sent): ``method``, ``path`` (secret query values
  masked, :func:`actors.core.tracing.loggable_path`), ``status``, ``durationMs``,
  ``userId`` and ``tenantId`` of an authenticated caller, and the ``taskId`` and
  ``traceId`` of the task the request was about (:func:`note_task`: the download's line
  carries its export's trace id), and ``disconnected`` when the client went away before
  the response ended (status :data:`CLIENT_CLOSED` if nothing was answered yet, not a
  500). It never writes a header, token or cookie. ``/healthz``
  and ``/metrics`` — probes and scrapes every few seconds — and the embedded demo
  Provider's ``/internal/…`` batch calls are logged at DEBUG.

Routes tell it what they learn through :func:`note_user` and :func:`note_task`; outside a
request these do nothing.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from actors.core.log_context import bind_context, bind_for_rest_of_task, bound, replace_bound
from actors.core.tracing import is_trace_id, loggable_path, request_id, request_trace_id

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[..., Awaitable[None]]

#: The status an access line gives a request whose client went away before any answer
#: (nginx's "client closed request"): not a 500, which would read as a fault of ours.
CLIENT_CLOSED = 499
#: Paths whose access lines are DEBUG: health probes and metric scrapes.
QUIET_PATHS = frozenset({"/healthz", "/healthz/details", "/metrics"})
#: Path prefix whose access lines are DEBUG too: the embedded demo Provider's batch
#: calls, made by this very service (one per batch; its run summary says the rest).
QUIET_PREFIX = "/internal/"
#: The request and response header of the request id.
REQUEST_ID_HEADER = "X-Request-Id"


@dataclass(slots=True)
class RequestRecord:
    """What the access line of one request says beyond method, path and status.

    Attributes:
        request_id: the request id (echoed in ``X-Request-Id``).
        trace_id: the request's trace id; a route about one task replaces it with the
            task's (:func:`note_task`).
        user_id: the authenticated caller, once known.
        tenant_id: the caller's tenant, once known.
        task_id: the task the request was about, once known.
    """

    request_id: str
    trace_id: str
    user_id: int | None = None
    tenant_id: int | None = None
    task_id: int | None = None


_current: ContextVar[RequestRecord | None] = ContextVar("export_center_request", default=None)


def current_trace_id() -> str | None:
    """The trace id of the request being served (``None`` outside a request)."""
    record = _current.get()
    return record.trace_id if record is not None else None


def note_user(user_id: int, tenant_id: int) -> None:
    """Record the authenticated caller of the current request: its user id for the
    access line, its tenant on the access line and the route's further log lines."""
    record = _current.get()
    if record is not None:
        record.user_id = user_id
        record.tenant_id = tenant_id
    bind_for_rest_of_task(tenantId=str(tenant_id))


def note_task(task_id: int, trace_id: str | None) -> None:
    """Record the task the current request is about: its id, and its trace id (when the
    task has one) replaces the request's on the access line and on the route's further
    log lines."""
    record = _current.get()
    values: dict[str, Any] = {"taskId": str(task_id)}
    if is_trace_id(trace_id):
        values["traceId"] = trace_id
    if record is not None:
        record.task_id = task_id
        if is_trace_id(trace_id):
            record.trace_id = str(trace_id)
    bind_for_rest_of_task(**values)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


class AccessLog:
    """ASGI middleware: request id, trace id and one access line per HTTP request.

    Args:
        app: the wrapped ASGI callable (``app.asgi_app``).
    """

    def __init__(self, app: AsgiApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        record = RequestRecord(
            request_id=request_id(_header(scope, b"x-request-id"), os.urandom),
            trace_id=request_trace_id(_header(scope, b"traceparent"), os.urandom),
        )
        status: list[int] = []
        ended = {"response": False, "client": False}

        async def receive_noting_disconnect() -> Message:
            message = await receive()
            if message.get("type") == "http.disconnect":
                ended["client"] = True
            return message

        async def send_with_id(message: Message) -> None:
            if message.get("type") == "http.response.body" and not message.get("more_body"):
                ended["response"] = True
            if message.get("type") == "http.response.start":
                status.append(int(message["status"]))
                headers = [
                    (k, v)
                    for k, v in message.get("headers", ())
                    if bytes(k).lower() != b"x-request-id"
                ]
                headers.append((b"x-request-id", record.request_id.encode("ascii")))
                message["headers"] = headers
            await send(message)

        before = bound()
        token = _current.set(record)
        started = time.monotonic()
        try:
            with bind_context(requestId=record.request_id, traceId=record.trace_id):
                await self.app(scope, receive_noting_disconnect, send_with_id)
        finally:
            _current.reset(token)
            # A route's note_task may have bound more keys in this very context: start
            # the next request on this connection from what was bound before this one.
            replace_bound(before)
            # A client that went away before the response ended is not a server error:
            # no status was answered (CLIENT_CLOSED), or the one answered is logged with
            # ``disconnected``.
            gone = ended["client"] and not ended["response"]
            answered = status[0] if status else (CLIENT_CLOSED if gone else 500)
            self._write(scope, record, answered, started, disconnected=gone)

    @staticmethod
    def _write(
        scope: Scope, record: RequestRecord, status: int, started: float, *, disconnected: bool
    ) -> None:
        path = str(scope.get("path", ""))
        query = bytes(scope.get("query_string", b"")).decode("latin-1")
        shown = loggable_path(path, query)
        method = str(scope.get("method", ""))[:16]
        ms = round((time.monotonic() - started) * 1000, 1)
        quiet = path in QUIET_PATHS or path.startswith(QUIET_PREFIX)
        level = logging.DEBUG if quiet else logging.INFO
        fields: dict[str, Any] = {
            "method": method,
            "path": shown,
            "status": status,
            "durationMs": ms,
        }
        if record.user_id is not None:
            fields["userId"] = str(record.user_id)
        if disconnected:
            fields["disconnected"] = True
        with bind_context(
            requestId=record.request_id,
            traceId=record.trace_id,
            taskId=None if record.task_id is None else str(record.task_id),
            tenantId=None if record.tenant_id is None else str(record.tenant_id),
        ):
            log.log(
                level,
                "%s %s %d %.1f ms",
                method,
                shown,
                status,
                ms,
                extra=fields,
            )
