"""``GET /api/platform/v1/files/progress``: the caller's tasks as Server-Sent Events.

On connect the stream sends one ``event: task`` per live (PENDING or RUNNING) task the
caller may see (its own, or its tenant and app's with ``platform:download:all``, as the
list shows them), then one whenever such a task's status, processed rows or total rows
change — the task JSON of ``GET .../export-tasks/{id}`` (``actors/core/task_json.py``).
A ``: keep-alive`` comment goes out after 15 s without an event, so proxies keep the
connection open.

One connection costs one read per poll (``FILE_EXPORT_PROGRESS_POLL_SECONDS``, default
1 s, as ``Services.progress_poll_seconds``): the caller's live tasks and its 20 newest,
two index ranges in one transaction (``db/store/progress.py``; their plans are checked in
``tests/db/test_query_plans.py``). Only changes are sent (``actors/core/http/progress.py``).

The stream ends when the client disconnects (Quart cancels the response), when the
caller's token expires (the client must sign in again), and within 0.1 s of the service
starting to drain, so it never holds a SIGTERM drain open. A database
fault during a poll is logged and the next poll tries again; the stream stays open.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Mapping

import trio
from quart import Blueprint, Response, current_app, request

from actors.core.access import sees_all_requesters
from actors.core.errors import TransientDatabaseError
from actors.core.http.progress import (
    ProgressStep,
    TaskState,
    first_step,
    next_step,
    settle_missing,
)
from actors.core.models import Principal, Task
from actors.core.task_json import task_json
from web.auth import request_credentials
from web.openapi import declare
from web.services import Services

log = logging.getLogger(__name__)

PATH = "/api/platform/v1/files/progress"
#: App config key: seconds of silence before a keep-alive comment.
KEEPALIVE_SECONDS_KEY = "PROGRESS_KEEPALIVE_SECONDS"
DEFAULT_KEEPALIVE_SECONDS = 15.0
#: Newest tasks read besides the live ones: a task that starts and finishes between two
#: polls is among them, so its end is still sent.
NEWEST_TASKS = 20
#: The most live tasks one read returns (a bound on a tenant administrator's stream).
MAX_LIVE_TASKS = 500
KEEPALIVE = b": keep-alive\n\n"
#: How soon a stream notices the drain (``Services.stopping`` is a flag, not an event), s.
STOP_CHECK_SECONDS = 0.1

progress = Blueprint("progress", __name__)


def task_event(task: Task) -> bytes:
    """One ``event: task`` of the stream (the JSON on one ``data:`` line)."""
    data = json.dumps(task_json(task), separators=(",", ":"), ensure_ascii=False)
    return f"event: task\ndata: {data}\n\n".encode()


class _Poller:
    """One connection's reads of the caller's tasks."""

    def __init__(self, services: Services, principal: Principal) -> None:
        self.services = services
        self.principal = principal
        self.all_users = sees_all_requesters(principal)

    async def read(self) -> list[Task]:
        return await self.services.api_store.tasks_for_progress(
            self.principal, all_users=self.all_users, newest=NEWEST_TASKS, limit=MAX_LIVE_TASKS
        )

    async def step(self, seen: Mapping[int, TaskState]) -> ProgressStep:
        """One poll: the changed tasks, and the final state of live ones that left the read."""
        step = next_step(seen, await self.read())
        if not step.missing:
            return step
        found = {i: await self.services.api_store.get_task(i) for i in step.missing}
        settled = settle_missing(step.seen, found)
        return ProgressStep(step.send + settled.send, (), settled.seen)


async def _wait_unless_stopping(services: Services, seconds: float) -> bool:
    """Wait ``seconds``, looking at ``services.stopping`` every
    :data:`STOP_CHECK_SECONDS`; False as soon as the service drains."""
    deadline = trio.current_time() + seconds
    while not services.stopping:
        left = deadline - trio.current_time()
        if left <= 0:
            return True
        await trio.sleep(min(left, STOP_CHECK_SECONDS))
    return False


@progress.get(PATH)
@declare(None)
async def progress_stream() -> Response:
    """The stream of the caller's task changes (bearer header or session cookie).

    Returns:
        ``text/event-stream``; 401 (envelope) without a valid credential, 503 when the
        first read finds the database unavailable.
    """
    services: Services = current_app.config["SERVICES"]
    principal, expires_at = request_credentials(services.jwt_secret)
    poll_seconds = services.progress_poll_seconds
    keepalive_seconds = float(
        current_app.config.get(KEEPALIVE_SECONDS_KEY, DEFAULT_KEEPALIVE_SECONDS)
    )
    if request.method == "HEAD":  # Quart would run the stream for a body nobody reads
        return Response(b"", status=200, content_type="text/event-stream; charset=utf-8")
    poller = _Poller(services, principal)
    # Read once before answering: a database fault now is still an envelope (503).
    first = first_step(await poller.read())

    async def events() -> AsyncIterator[bytes]:
        log.debug("progress stream of user %s opened", principal.user_id)
        # Quart cancels or closes the body when the client disconnects: unless the loop
        # below ends by itself (a drain), the client went away.
        ended = "the client went away"
        try:
            yield b"".join(task_event(t) for t in first.send) or KEEPALIVE
            seen = first.seen
            quiet_since = trio.current_time()
            while not services.stopping:
                if not await _wait_unless_stopping(services, poll_seconds):
                    break
                if time.time() >= expires_at:  # the token's end is the stream's end
                    ended = "the token expired"
                    return
                try:
                    step = await poller.step(seen)
                except TransientDatabaseError as exc:
                    log.warning("progress stream of user %s: %s", principal.user_id, exc)
                    continue
                seen = step.seen
                if step.send:
                    yield b"".join(task_event(t) for t in step.send)
                    quiet_since = trio.current_time()
                elif trio.current_time() - quiet_since >= keepalive_seconds:
                    yield KEEPALIVE
                    quiet_since = trio.current_time()
            ended = "the service is draining"
        finally:
            log.debug("progress stream of user %s ended: %s", principal.user_id, ended)

    response = Response(events(), status=200, content_type="text/event-stream; charset=utf-8")
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Accel-Buffering"] = "no"  # a proxy that buffers would hold events
    response.timeout = None  # streams as long as the client stays (not RESPONSE_TIMEOUT)
    return response
