"""The HTTP app factory: a QuartTrio app over the dependencies the runtime builds.

Actors never run in ``app.nursery`` (quart-trio's): the runtime owns them and passes the
dependencies in here (:class:`~web.dependencies.Dependencies`). The app only serves requests.

When the database cannot be reached, requests that need it answer HTTP 503 with the
envelope (code ``"503"``) and a ``Retry-After`` header after at most
``web.dependencies.API_DB_RETRY_SECONDS`` of retrying — never a 500 — and ``/healthz``
reports not ready.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import trio
from prometheus_client import CONTENT_TYPE_LATEST
from quart import Response, jsonify, request
from quart_trio import QuartTrio
from werkzeug.exceptions import HTTPException

from actors.core.errors import StorageUnavailableError, TransientDatabaseError
from actors.core.health import Component, ComponentHealth, overall_status
from actors.core.http.scrape import REALM, scrape_allowed
from web.access_log import AccessLog
from web.api import api
from web.auth import presented_token
from web.dependencies import Dependencies
from web.errors import ApiError
from web.export_types import export_types
from web.openapi import declare, install_openapi
from web.page import page
from web.progress import progress
from web.schemas import Health, HealthDetails
from web.serialize import envelope
from web.session import session
from web.sign_in import sign_in

log = logging.getLogger(__name__)

#: The ``Retry-After`` a 503 suggests, seconds (requests retry for
#: ``API_DB_RETRY_SECONDS`` before answering it).
RETRY_AFTER_SECONDS = 5


#: Largest request body, bytes: create bodies are tiny (§12: parameters at most 4 KB).
MAX_BODY_BYTES = 64 * 1024


async def _until_stopped(run: Callable[..., Awaitable[None]], *args: Any) -> None:
    """Run a background reader until the server stops. Its cancellation at the stop may
    come out of its own nursery as a group of ``Cancelled`` alone, which quart-trio would
    log as an ERROR with a traceback: that is a normal stop, and ends quietly here."""
    try:
        await run(*args)
    except BaseExceptionGroup as group:
        _, rest = group.split(trio.Cancelled)
        if rest is not None:
            raise rest from None


def create_app(deps: Dependencies, *, extra_blueprints: list[Any] | None = None) -> QuartTrio:
    """Build the app.

    Args:
        deps: what the routes need from the runtime.
        extra_blueprints: further blueprints, e.g. the demo Provider.
    """
    app = QuartTrio("export-center")
    app.config["DEPENDENCIES"] = deps
    app.asgi_app = AccessLog(app.asgi_app)  # type: ignore[method-assign,assignment]  # access log
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    # No routing redirects: werkzeug answers a redirect (HTML, not the envelope) for "//"
    # in a path or a missing trailing slash, before any error handler can run.
    app.url_map.merge_slashes = False
    app.url_map.strict_slashes = False
    app.register_blueprint(api)
    app.register_blueprint(page)
    app.register_blueprint(session)
    app.register_blueprint(sign_in)
    app.register_blueprint(export_types)
    app.register_blueprint(progress)
    for bp in extra_blueprints or []:
        app.register_blueprint(bp)
    install_openapi(app)

    @app.before_request
    async def _prepare_credentials() -> None:
        # An identity provider's key the request's token names is fetched here, before
        # any handler verifies the token (synchronously): web/identity.py.
        await deps.tokens.prepare(presented_token())

    @app.before_serving
    async def _start_background_readers() -> None:
        # One reader of task changes for every progress stream, for as long as the
        # server serves (web/progress_feed.py); it reads nothing while no stream is open.
        app.add_background_task(_until_stopped, deps.progress_feed.run)
        # An identity provider's keys, fetched at start and kept fresh (web/identity.py).
        app.add_background_task(_until_stopped, deps.tokens.run, deps.health)

    @app.errorhandler(ApiError)
    async def _api_error(exc: ApiError) -> Any:
        body = jsonify(envelope(None, code=exc.code, message=exc.message))
        if exc.http_status == 401:
            # RFC 6750 section 3: a 401 names the scheme the client should use.
            return body, 401, {"WWW-Authenticate": 'Bearer realm="export-center"'}
        if exc.http_status == 503:
            return body, 503, {"Retry-After": str(RETRY_AFTER_SECONDS)}
        return body, exc.http_status

    @app.errorhandler(HTTPException)
    async def _http_error(exc: HTTPException) -> Any:
        code = exc.code or 500
        if code == 413:
            message = f"request body over the {MAX_BODY_BYTES // 1024} KB limit"
            # The rest of the body is never read, so the server ends the connection: say so,
            # or a keep-alive client sends its next request into a closing socket.
            return (
                jsonify(envelope(None, code="413", message=message)),
                413,
                {"Connection": "close"},
            )
        return jsonify(envelope(None, code=str(code), message=exc.description or exc.name)), code

    @app.errorhandler(TransientDatabaseError)
    async def _database_unavailable(exc: TransientDatabaseError) -> Any:
        log.warning("%s %s: database unavailable: %s", request.method, request.path, exc)
        body = envelope(
            None, code="503", message="the database is unavailable; please try again shortly"
        )
        return jsonify(body), 503, {"Retry-After": str(RETRY_AFTER_SECONDS)}

    @app.errorhandler(StorageUnavailableError)
    async def _storage_unavailable(exc: StorageUnavailableError) -> Any:
        # A download (or a retry deleting a leftover) while the file storage cannot be
        # reached: the file is still there, so "try again" is the truth, in one line.
        log.warning("%s %s: storage unavailable: %s", request.method, request.path, exc)
        body = envelope(
            None,
            code="503",
            message="the file storage cannot be reached right now; please try again in a moment",
        )
        return jsonify(body), 503, {"Retry-After": str(RETRY_AFTER_SECONDS)}

    @app.errorhandler(Exception)
    async def _unexpected(exc: Exception) -> Any:
        log.error("unhandled error", exc_info=exc)
        return jsonify(envelope(None, code="500", message="internal error")), 500

    @app.get("/healthz")
    @declare(Health)
    async def healthz() -> Any:
        """Readiness: HTTP 200 ``ok``, or 503 while starting, draining or without database.
        The message bus and the storage are not asked: without them the API still answers
        (``/healthz/details`` says which component is degraded)."""
        ready = await _readiness(deps)
        return jsonify({"status": ready}), 200 if ready == "ok" else 503

    @app.get("/healthz/details")
    @declare(HealthDetails)
    async def healthz_details() -> Any:
        """Each component (database, transport, storage, identity provider) as this
        instance last saw it; HTTP 200 whenever the process answers (``/healthz`` is the
        readiness answer). Its details name internal addresses (the bucket, the broker),
        so with ``FILE_EXPORT_METRICS_TOKEN`` set it is read with that token, as
        ``/metrics`` is (else 401)."""
        if not scrape_allowed(deps.metrics_token, request.headers.get("Authorization")):
            return _scrape_refused()
        ready = await _readiness(deps)
        board = {c.component: c for c in deps.health.snapshot()}
        db_up = ready != "database unavailable"
        board[Component.DATABASE] = ComponentHealth(
            Component.DATABASE, db_up, "" if db_up else "the readiness probe failed"
        )
        components = tuple(board.values())
        return jsonify(
            {
                "status": overall_status(components),
                "ready": ready,
                "components": {
                    c.component.value: {"status": c.state, "detail": c.detail} for c in components
                },
            }
        )

    @app.get("/metrics")
    @declare(None)
    async def metrics() -> Response:
        """Prometheus metrics of this instance; with ``FILE_EXPORT_METRICS_TOKEN`` set, for
        a scrape that sends it as a bearer token only (else 401)."""
        if not scrape_allowed(deps.metrics_token, request.headers.get("Authorization")):
            return _scrape_refused()
        return Response(deps.metrics.exposition(), content_type=CONTENT_TYPE_LATEST)

    return app


def _scrape_refused() -> Response:
    """The 401 of a monitoring route read without the scrape token."""
    return Response(
        "401: send the scrape token (FILE_EXPORT_METRICS_TOKEN) as a bearer token\n",
        status=401,
        content_type="text/plain; charset=utf-8",
        headers={"WWW-Authenticate": f'Bearer realm="{REALM}"'},
    )


async def _readiness(deps: Dependencies) -> str:
    """``ok``, or why this instance cannot serve the API: ``starting``, ``stopping``
    (draining: a load balancer should send traffic elsewhere), ``database unavailable``."""
    if not deps.ready.is_set():
        return "starting"
    if deps.stopping:
        return "stopping"
    if not await deps.db_probe.reachable():
        return "database unavailable"
    return "ok"
