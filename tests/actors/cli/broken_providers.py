"""Providers broken one way each, for the provider-check tests: the guide's example
(examples/provider/minimal_provider.py) with one thing changed, served by the standard
library's WSGI server on a thread of the test."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from tests.processes import load_example_provider
from tests.servers import serving_in_thread

Envelope = dict[str, Any]
App = Callable[..., list[bytes]]
TOKEN = "provider-check-token"


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass  # the test asserts on findings, not on the request log


@contextmanager
def serve(app: App) -> Iterator[str]:
    """``app`` on the standard library's WSGI server, on a thread; yields its base URL."""
    with serving_in_thread(make_server("127.0.0.1", 0, app, handler_class=_QuietHandler)) as url:
        yield url


def example() -> ModuleType:
    """A fresh copy of the guide's example, so one case's change stays in that case."""
    module = load_example_provider()
    module.TOKEN = TOKEN
    return module


def changing_answers(change: Callable[[dict[str, Any], Envelope], Envelope]) -> App:
    """The example whose every ``"200"`` answer passes through ``change(request, answer)``."""
    module = example()
    honest = module.answer

    def answer(body: Any) -> Envelope:
        envelope: Envelope = honest(body)
        return change(body, envelope) if envelope["code"] == "200" else envelope

    module.answer = answer
    app: App = module.app
    return app


def data_change(change: Callable[[dict[str, Any], dict[str, Any]], None]) -> App:
    """The example with ``change(request, data)`` applied to each successful answer."""

    def apply(body: dict[str, Any], envelope: Envelope) -> Envelope:
        change(body, envelope["data"])
        return envelope

    return changing_answers(apply)


def later(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any], Any], None]:
    """``change`` applied to the data of batches after the first only."""
    return lambda body, data: change(data) if body.get("cursor") is not None else None


def ignoring_the_service_token() -> App:
    module = example()

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        environ["HTTP_X_INTERNAL_SERVICE_TOKEN"] = TOKEN
        result: list[bytes] = module.app(environ, start_response)
        return result

    return app


def failing_non_json_with_500() -> App:
    module = example()

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        raw = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        try:
            json.loads(raw)
        except ValueError:
            start_response("500 Internal Server Error", [("Content-Type", "text/plain")])
            return [b"Traceback (most recent call last): ..."]
        environ["wsgi.input"] = io.BytesIO(raw)
        result: list[bytes] = module.app(environ, start_response)
        return result

    return app


def always(status: str) -> App:
    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response(status, [("Content-Type", "application/json")])
        return [b'{"code": "503", "message": "overloaded", "data": null}']

    return app


def not_checking_tenant_fields() -> App:
    module = example()
    honest = module.answer

    def answer(body: Any) -> Envelope:
        if isinstance(body, dict):  # a missing or bad tenant field "defaults" to tenant 0
            body = {"tenantId": "0", "appCode": "PLATFORM", "requestedBy": "0", **body}
            if not str(body["tenantId"]).isdecimal():
                body["tenantId"] = "0"
        envelope: Envelope = honest(body)
        return envelope

    module.answer = answer
    app: App = module.app
    return app


def not_checking_snapshot_tokens() -> App:
    module = example()
    honest = module.answer
    minted: dict[str, str] = {}

    def answer(body: Any) -> Envelope:
        # Accepts any token: a later batch is answered with the token of the first.
        if isinstance(body, dict) and body.get("cursor") is not None:
            body = {**body, "snapshotToken": minted.get("token")}
        envelope: Envelope = honest(body)
        if envelope["code"] == "200" and body.get("cursor") is None:
            minted["token"] = envelope["data"]["snapshotToken"]
        return envelope

    module.answer = answer
    app: App = module.app
    return app


def pop_field(key: str) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    return lambda body, data: data.pop(key)


def set_field(key: str, value: Any) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    return lambda body, data: data.update({key: value})


def first_row(key: str, value: Any) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    return lambda body, data: data["rows"][0].update({key: value}) if data["rows"] else None


def extra_row(body: dict[str, Any], data: dict[str, Any]) -> None:
    data["rows"].append(dict(data["rows"][-1]))


def many_columns(body: dict[str, Any], data: dict[str, Any]) -> None:
    if "columns" in data:
        data["columns"] = data["columns"] + [
            {"key": f"c{i}", "title": f"C{i}", "type": "STRING"} for i in range(97)
        ]


def stuck_cursor(body: dict[str, Any], data: dict[str, Any]) -> None:
    data["nextCursor"] = body.get("cursor") or "100"


def new_hash_per_run() -> App:
    """A schemaHash minted per run: stable within the run, another in the next one."""
    runs = iter(range(1, 1_000_000))
    current = {"hash": ""}

    def change(body: dict[str, Any], data: dict[str, Any]) -> None:
        if body.get("cursor") is None:
            current["hash"] = f"run-{next(runs)}"
        data["schemaHash"] = current["hash"]

    return data_change(change)
