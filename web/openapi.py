"""``GET /openapi.json`` and the ``/docs`` page, from the routes' declarations (quart-schema).

:func:`declare` puts a route's models (``web/schemas.py``) on it; :func:`install_openapi`
serves the document built from them. The document covers the API (``/api/…``),
``/healthz`` and ``/metrics``; the download center page and the demo Provider are not part
of the contract and are left out.

The ``/docs`` page is Swagger UI, served from this origin: its files come from the
``swagger-ui-py`` package (the version the lock file pins), so no script from a CDN runs on
the origin of the session cookie and the readable CSRF cookie. The page has its own
Content-Security-Policy, this origin only, and not the download center's (``web/page.py``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from importlib.resources import files
from typing import Any, TypeVar

import trio
from pydantic import BaseModel
from quart import Blueprint, Quart, Response
from quart_schema import (
    APIKeySecurityScheme,
    HttpSecurityScheme,
    Info,
    OpenAPIProvider,
    QuartSchema,
    RequestSchemaValidationError,
    document_querystring,
    document_request,
    document_response,
)
from werkzeug.routing import Rule

from web.auth import SESSION_COOKIE
from web.schemas import ErrorEnvelope, Health
from web.serialize import envelope

F = TypeVar("F", bound=Callable[..., Any])

#: Swagger UI's files served under ``/docs/`` (name -> content type), from the package.
SWAGGER_UI_FILES = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
}
#: The docs page's policy: everything from this origin.
DOCS_CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_SCHEME = "bearerAuth"
#: The session cookie set by ``POST /api/platform/v1/session`` (``web/session.py``), taken
#: by every API route when there is no ``Authorization`` header.
COOKIE_SCHEME = "sessionCookie"
SESSION_PATH = "/api/platform/v1/session"
#: What each real HTTP status other than 200 means, where an operation declares it. The
#: business outcomes are not among them: those answer HTTP 200 with their code in the
#: envelope (``x-envelope-codes`` of the 200 answer).
HTTP_STATUSES = {
    401: "No valid credential: the bearer token or the session cookie is missing, expired or"
    " invalid (`WWW-Authenticate: Bearer`).",
    403: "A session cookie without the `X-CSRF-Token` header equal to the"
    " `export_center_csrf` cookie (a request other than GET or HEAD).",
    413: "The body is over the size limit; the server closes the connection.",
    503: "A part the answer needs cannot be reached now — the database, the identity"
    " provider's keys (a token signed with a key not held yet), or for a download the file"
    " storage; try again after `Retry-After` seconds.",
}
#: The statuses of a route that needs a credential, reads, writes with a cookie, or
#: touches the database, for :func:`declare`'s ``http``.
AUTH = (401,)
AUTH_DB = (401, 503)
WRITE_DB = (401, 403, 503)


def declare(
    response: type[BaseModel] | None,
    *,
    request: type[BaseModel] | None = None,
    querystring: type[BaseModel] | None = None,
    codes: Mapping[str, str] | None = None,
    http: tuple[int, ...] = (),
) -> Callable[[F], F]:
    """Declare a route of the API for ``/openapi.json``, as the wire carries it.

    Args:
        response: the model of its success envelope (HTTP 200, code ``"200"``), or
            ``None`` when the route answers something else (completed by
            :class:`_Provider`).
        request: the model of its JSON body, if it takes one (then HTTP 413 is declared
            too: bodies are bounded by ``MAX_CONTENT_LENGTH``).
        querystring: the model of its query string, if it takes one.
        codes: the envelope codes other than ``"200"`` it answers with HTTP 200 (the
            business outcomes: ``{"404": "no such task, or not yours"}``), and what each
            means. ``tests/web/test_openapi_statuses.py`` makes the route answer each one.
        http: the real HTTP statuses other than 200 it answers (:data:`HTTP_STATUSES`).

    Returns:
        A decorator that only records the models and codes on the view function.
    """

    def decorator(func: F) -> F:
        if response is not None:
            func = document_response(response, 200)(func)
        if request is not None:
            func = document_request(request)(func)
        if querystring is not None:
            func = document_querystring(querystring)(func)
        statuses = tuple(sorted({*http, *((413,) if request is not None else ())}))
        func._envelope_codes = dict(codes or {})  # type: ignore[attr-defined]
        func._http_statuses = statuses  # type: ignore[attr-defined]
        return func

    return decorator


def _complete_answers(operation: dict[str, Any], func: Callable[..., Any]) -> None:
    """Complete an operation's answers with what the wire carries: HTTP 200 with its
    success envelope or a refusal's (``x-envelope-codes`` lists them), and each real HTTP
    status it declared (:func:`declare`) with the error envelope."""
    codes: dict[str, str] = getattr(func, "_envelope_codes", {})
    statuses: tuple[int, ...] = getattr(func, "_http_statuses", ())
    responses = operation.setdefault("responses", {})
    ok = responses.get(200)
    if ok is not None and codes:
        content = ok.setdefault("content", {}).setdefault("application/json", {})
        success = content.get("schema")
        refusal = {
            "allOf": [
                {"$ref": _ERROR_REF},
                {"properties": {"code": {"enum": sorted(codes)}}},
            ]
        }
        if success is None or success == {"$ref": _ERROR_REF}:
            content["schema"] = refusal  # the success is not JSON (a file, a stream)
        else:
            # anyOf: a success envelope's data may be null too, so both can match.
            content["schema"] = {"anyOf": [success, refusal]}
        listed = "; ".join(f"`{code}` {meaning}" for code, meaning in sorted(codes.items()))
        ok["description"] = (
            f"{ok.get('description') or 'Success'} (envelope code `200`). Refusals also"
            f" answer HTTP 200, with the envelope's code: {listed}."
        )
    if ok is not None:
        ok["x-envelope-codes"] = {"200": "success", **dict(sorted(codes.items()))}
    for status in statuses:
        responses[status] = {
            "description": HTTP_STATUSES[status],
            "content": {"application/json": {"schema": {"$ref": _ERROR_REF}}},
        }


class _Provider(OpenAPIProvider):
    """quart-schema's document, restricted to the contract and completed where a model
    cannot say it: task ids in paths, the download's file, ``/metrics``' text, and no
    token on ``/healthz`` and ``/metrics``."""

    def generate_rules(self) -> Iterable[Rule]:
        for rule in super().generate_rules():
            if rule.rule.startswith("/api/") or rule.rule in _OPEN_PATHS:
                yield rule

    def schema(self) -> dict[str, Any]:
        schema = super().schema()
        for path, item in schema["paths"].items():
            for operation in item.values():
                for parameter in operation.get("parameters", []):
                    if parameter["in"] == "query":
                        _drop_null(parameter["schema"])
                    if parameter["in"] == "path" and parameter["name"] == "task_id":
                        parameter["schema"] = {"type": "string", "pattern": "^[0-9]{1,19}$"}
                        parameter["description"] = "The task's id (ASCII digits)."
            if path.endswith("/download"):
                answer = item["get"]["responses"][200]
                answer["description"] = (
                    "The XLSX file; or, when it cannot be downloaded, the envelope saying why."
                )
                answer["content"] = {
                    _XLSX: {"schema": {"type": "string", "format": "binary"}},
                    "application/json": {"schema": {"$ref": _ERROR_REF}},
                }
            if path.endswith("/progress") and "get" in item:
                item["get"]["responses"][200] = {
                    "description": "Server-sent events: one `task` event per change of a "
                    "task of the caller (the task JSON), `: keep-alive` comments between.",
                    "content": {"text/event-stream": {"schema": {"type": "string"}}},
                }
            if path == SESSION_PATH and "post" in item:
                item["post"]["security"] = []  # the token is in the body
        metrics = schema["paths"].get("/metrics", {}).get("get")
        if metrics is not None:
            metrics["responses"][200] = {
                "description": "Prometheus text exposition.",
                "content": {"text/plain": {"schema": {"type": "string"}}},
            }
        for open_path in _OPEN_PATHS:
            operation = schema["paths"].get(open_path, {}).get("get")
            if operation is not None:
                operation["security"] = []
        # Each operation's refusals and real HTTP statuses, as declared on its view.
        for rule in self.generate_rules():
            path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule)
            func = self._app.view_functions[rule.endpoint]
            for method in rule.methods or ():
                operation = schema["paths"].get(path, {}).get(method.lower())
                if operation is not None:
                    _complete_answers(operation, func)
        health = schema["paths"].get("/healthz", {}).get("get")
        if health is not None:  # not ready answers the same shape with HTTP 503
            health["responses"][503] = {**health["responses"][200], "description": "Not ready."}
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        components.setdefault("ErrorEnvelope", _error_envelope_schema())
        download = schema["paths"].get(_DOWNLOAD_PATH, {}).get("get")
        if download is not None:
            download["responses"][206] = {
                "description": "The bytes of the one `Range` asked for (`Content-Range`).",
                "content": {_XLSX: {"schema": {"type": "string", "format": "binary"}}},
            }
            download["responses"][416] = {
                "description": "The range starts past the end of the file (the envelope).",
                "content": {"application/json": {"schema": {"$ref": _ERROR_REF}}},
            }
        for item in schema["paths"].values():
            for operation in item.values():
                operation["operationId"] = readable_operation_id(operation["operationId"])
                for field in ("summary", "description"):
                    if field in operation:
                        operation[field] = for_readers(operation[field])
        return schema


def _error_envelope_schema() -> dict[str, Any]:
    return ErrorEnvelope.model_json_schema(ref_template="#/components/schemas/{model}")


_DOWNLOAD_PATH = "/api/platform/v1/files/export-tasks/{task_id}/download"
_XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
_ERROR_REF = "#/components/schemas/ErrorEnvelope"
#: Operation ids for client generators, by view function; quart-schema's default is the
#: method and the function's name (``get_get_task``).
_OPERATION_IDS = {
    "list_tasks": "listTasks",
    "create_task": "createTask",
    "get_task": "getTask",
    "cancel": "cancelTask",
    "download": "downloadTaskFile",
    "events": "listTaskEvents",
    "retry": "retryTask",
    "list_export_types": "listExportTypes",
    "progress_stream": "streamProgress",
    "sign_in": "signIn",
    "sign_out": "signOut",
    "who_am_i": "getSession",
    "healthz": "getHealth",
    "healthz_details": "getHealthDetails",
    "metrics": "getMetrics",
}


def readable_operation_id(generated: str) -> str:
    """``listTasks`` for quart-schema's ``get_list_tasks``; a function not in the table
    gets its name in lower camel case."""
    name = generated.split("_", 1)[1] if "_" in generated else generated
    if name in _OPERATION_IDS:
        return _OPERATION_IDS[name]
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def for_readers(text: str) -> str:
    """A docstring as the document's reader gets it: Markdown code spans instead of
    reStructuredText's, and no pointers into this repository's source (``(…/x.py)``,
    ``actors/…``) or design sections (``§5``), which a reader of the API does not have."""
    text = text.replace("``", "`")
    text = re.sub(r"\s*\((?:see )?`?[\w./]+\.py`?[^()]*\)", "", text)
    text = re.sub(r"\s*\(§\s?\d+(?:\.\d+)*\)|\s*§\s?\d+(?:\.\d+)*", "", text)
    return text


#: Routes outside /api/ in the document, answered without a token.
_OPEN_PATHS = ("/healthz", "/healthz/details", "/metrics")


def _drop_null(schema: dict[str, Any]) -> None:
    """A query parameter is absent or a string: pydantic's ``X | None`` becomes ``X``."""
    options = schema.get("anyOf")
    if options is not None:
        kept = [o for o in options if o.get("type") != "null"]
        if len(kept) == 1:
            del schema["anyOf"]
            schema.update(kept[0])
    if schema.get("default", 0) is None:
        del schema["default"]


_DOCS_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Export Center API</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
</head>
<body>
<p>The Export Center API, described by <a href="/openapi.json">/openapi.json</a>.
Authorize with a bearer token (<code>export-center token</code>).</p>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
"""
_DOCS_INIT = (
    'window.ui = SwaggerUIBundle({url: "/openapi.json", dom_id: "#swagger-ui", '
    "deepLinking: true});\n"
)
_DOCS_HEADERS = {
    "Content-Security-Policy": DOCS_CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

docs = Blueprint("docs", __name__)


@docs.get("/docs")
async def docs_page() -> Response:
    """The API's documentation page (Swagger UI over ``/openapi.json``)."""
    return Response(
        _DOCS_PAGE,
        content_type="text/html; charset=utf-8",
        headers=_DOCS_HEADERS,
    )


@docs.get("/docs/init.js")
async def docs_script() -> Response:
    """The docs page's set-up script (a file, so the policy needs no inline script)."""
    return Response(
        _DOCS_INIT, content_type="text/javascript; charset=utf-8", headers=_DOCS_HEADERS
    )


@docs.get("/docs/<name>")
async def docs_asset(name: str) -> Response:
    """One of Swagger UI's files (:data:`SWAGGER_UI_FILES`); 404 for any other name."""
    content_type = SWAGGER_UI_FILES.get(name)
    if content_type is None:
        return Response("not found", status=404, content_type="text/plain; charset=utf-8")
    body = await trio.to_thread.run_sync(_swagger_ui_file, name)
    headers = {**_DOCS_HEADERS, "Cache-Control": "public, max-age=3600"}
    return Response(body, content_type=content_type, headers=headers)


@functools.cache
def _swagger_ui_file(name: str) -> bytes:
    """The file's bytes, read from the ``swagger_ui`` package once per process."""
    return (files("swagger_ui") / "static" / name).read_bytes()


def install_openapi(app: Quart) -> None:
    """Serve ``GET /openapi.json`` (OpenAPI 3.1) and ``GET /docs`` on ``app``.

    Also answers quart-schema's own validation errors, should a route validate with it,
    with the envelope (code ``"400"``, the first error's field in the message), like the
    core's refusals.

    Args:
        app: the service's app, its blueprints registered or not (the document is built
            at request time).
    """
    QuartSchema(
        app,
        # Our routes return plain JSON-ready dicts. quart-schema converts every returned
        # dict (body and headers): with pydantic it builds a TypeAdapter per response,
        # ~0.4 ms of the event loop's CPU each; msgspec's to_builtins returns the same
        # values in microseconds. The request and response models stay pydantic models.
        conversion_preference="msgspec",
        openapi_path="/openapi.json",
        swagger_ui_path=None,
        redoc_ui_path=None,
        scalar_ui_path=None,
        info=Info(
            title="Export Center API",
            version="1",
            description=(
                "Asynchronous exports: create a task, follow it, download its file. Every "
                "answer but a download and /metrics is the envelope "
                '{"code","message","data"}; code "200" means success.'
            ),
        ),
        security_schemes={
            SECURITY_SCHEME: HttpSecurityScheme(scheme="bearer", bearer_format="JWT"),
            # set by POST /api/platform/v1/session; requests other than GET and HEAD
            # with it must carry X-CSRF-Token (README, "Download center page")
            COOKIE_SCHEME: APIKeySecurityScheme(name=SESSION_COOKIE, in_="cookie"),
        },
        security=[{SECURITY_SCHEME: []}, {COOKIE_SCHEME: []}],
        openapi_provider_class=_Provider,
    )
    app.register_blueprint(docs)

    @app.errorhandler(RequestSchemaValidationError)
    async def _invalid(exc: RequestSchemaValidationError) -> Any:
        error = exc.validation_error
        errors = getattr(error, "errors", None)
        message = "invalid request"
        if callable(errors) and errors():
            first = errors()[0]
            field = ".".join(str(part) for part in first.get("loc", ())) or "body"
            message = f"{field}: {first.get('msg', 'invalid')}"
        return envelope(None, code="400", message=message), 200


__all__ = ["AUTH", "AUTH_DB", "HTTP_STATUSES", "WRITE_DB", "Health", "declare", "install_openapi"]
