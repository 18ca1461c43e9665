"""``GET /api/platform/v1/files/progress``: the caller's tasks as Server-Sent Events.

On connect the stream sends one ``event: task`` per live (PENDING or RUNNING) task the
caller may see (its own, or its tenant and app's with ``platform:download:all``, as the
list shows them), then one whenever such a task's status, processed rows or total rows
change — the task JSON of ``GET .../export-tasks/{id}`` (``actors/core/task_json.py``).
A ``: keep-alive`` comment goes out after 15 s without an event, so proxies keep the
connection open.

A connection reads the database once, on connect: the caller's live tasks and its 20
newest, two index ranges in one transaction (``db/store/progress.py``; their plans are
checked in ``tests/db/test_query_plans.py``). Afterwards the instance's one progress feed
(``web/progress_feed.py``) reads what changed once per ``FILE_EXPORT_PROGRESS_POLL_SECONDS``
for every stream, and hands this one the changes its caller may see, already encoded and
shared with every stream of the same audience (the caller, or its tenant and app's
administrators); only changes are sent (``actors/core/http/progress.py``). So the
database's load does not grow with the number of open pages, nor does the encoding of
events. A stream that falls behind the feed drops what it holds and reads afresh, as on
connect.
Open streams are capped per user and per instance (``FILE_EXPORT_PROGRESS_STREAMS_PER_USER``,
``…_PER_INSTANCE``): one more is refused with an envelope 429, and the page polls the list
instead.

The stream ends when the client disconnects (Quart cancels the response), when the
caller's token expires (the client must sign in again), and at once when the service
starts to drain, so it never holds a SIGTERM drain open. A failed read of the feed is
logged and tried again at the next interval; the stream stays open.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Mapping

import trio
from quart import Blueprint, Response, current_app, request

from actors.core.access import sees_all_requesters
from actors.core.errors import TransientDatabaseError
from actors.core.http.progress import (
    Delivery,
    ProgressStep,
    TaskState,
    first_step,
    follow,
    next_step,
    settle_missing,
    task_event,
)
from actors.core.models import Task
from actors.core.principal import Principal
from web.auth import request_credentials
from web.dependencies import Dependencies
from web.openapi import AUTH, declare

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
#: No delivery within the keep-alive wait.
NOTHING = Delivery((), (), b"")

progress = Blueprint("progress", __name__)


class _Reader:
    """One connection's own reads of the caller's tasks: on connect, and again when it fell
    behind the feed."""

    def __init__(self, deps: Dependencies, principal: Principal) -> None:
        self.deps = deps
        self.principal = principal
        self.all_users = sees_all_requesters(principal)

    async def read(self) -> list[Task]:
        return await self.deps.api_store.tasks_for_progress(
            self.principal, all_users=self.all_users, newest=NEWEST_TASKS, limit=MAX_LIVE_TASKS
        )

    async def resync(self, seen: Mapping[int, TaskState]) -> ProgressStep:
        """Read afresh: the changed tasks, and the final state of live ones that left the read."""
        step = next_step(seen, await self.read())
        if not step.missing:
            return step
        found = {i: await self.deps.api_store.get_task(i) for i in step.missing}
        settled = settle_missing(step.seen, found)
        return ProgressStep(step.send + settled.send, (), settled.seen)


@progress.get(PATH)
@declare(
    None,
    codes={"429": "too many open streams (the caller's, or this instance's): poll the list"},
    http=AUTH,
)
async def progress_stream() -> Response:
    """The stream of the caller's task changes (bearer header or session cookie).

    Returns:
        ``text/event-stream``; 401 (envelope) without a valid credential, 429 (envelope)
        when the caller or the instance holds the most streams allowed, 503 when the
        first read finds the database unavailable.
    """
    deps: Dependencies = current_app.config["DEPENDENCIES"]
    principal, expires_at = request_credentials(deps.tokens)
    keepalive_seconds = float(
        current_app.config.get(KEEPALIVE_SECONDS_KEY, DEFAULT_KEEPALIVE_SECONDS)
    )
    if request.method == "HEAD":  # Quart would run the stream for a body nobody reads
        return Response(b"", status=200, content_type="text/event-stream; charset=utf-8")
    feed = deps.progress_feed
    # Subscribe before the first read: a change between the two is then delivered too
    # (and sent only if the read did not already show it).
    sub = feed.subscribe(principal)  # Refused (429) at a cap
    reader = _Reader(deps, principal)
    try:
        # Read once before answering: a database fault now is still an envelope (503).
        first = first_step(await reader.read())
    except BaseException:
        feed.unsubscribe(sub)
        raise

    async def events() -> AsyncIterator[bytes]:
        log.debug("progress stream opened", extra={"userId": str(principal.user_id)})
        # Quart cancels or closes the body when the client disconnects: unless the loop
        # below ends by itself (a drain, the token's end), the client went away.
        ended = "the client went away"
        try:
            yield b"".join(task_event(t) for t in first.send) or KEEPALIVE
            seen = first.seen
            while True:
                wait = min(keepalive_seconds, expires_at - time.time())
                if wait <= 0:  # the token's end is the stream's end
                    ended = "the token expired"
                    return
                delivery: Delivery | None = NOTHING
                with trio.move_on_after(wait):
                    delivery = await sub.next()
                if delivery is None:
                    ended = "the service is draining"
                    return
                if sub.behind:
                    sub.catch_up()  # what it holds is older than the read below
                    try:
                        step = await reader.resync(seen)
                    except TransientDatabaseError as exc:
                        sub.behind = True  # try again at the next delivery
                        log.warning(
                            "progress stream could not read afresh; trying again",
                            extra={"userId": str(principal.user_id), "error": str(exc)},
                        )
                        continue
                    out = b"".join(task_event(t) for t in step.send)
                else:
                    step = follow(seen, delivery.tasks)
                    out = delivery.bytes_of(step.send)  # the bytes every such stream shares
                seen = step.seen
                # Nothing new: a keep-alive comment, so proxies keep the connection open.
                yield out or KEEPALIVE
        finally:
            feed.unsubscribe(sub)
            log.debug(
                "progress stream ended", extra={"userId": str(principal.user_id), "reason": ended}
            )

    response = Response(events(), status=200, content_type="text/event-stream; charset=utf-8")
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Accel-Buffering"] = "no"  # a proxy that buffers would hold events
    response.timeout = None  # streams as long as the client stays (not RESPONSE_TIMEOUT)
    return response
