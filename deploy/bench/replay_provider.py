"""A Provider that costs (almost) no CPU: the demo Provider's answers, made once and replayed.

The export service's scaling (``bench_workers.py``: aggregate rows/s of 1, 2 and 4
concurrent exports) is a figure about the service. On a small benchmark machine the demo
Provider shares the cores with it, and it takes about a third of a core per export
(building rows, encoding JSON, Quart and Hypercorn per request): with two exports on two
cores it, not the service, decides what is left. In production the Provider is another
service on other hosts. This stand-in answers every batch request with the bytes the demo
Provider gave for the same cursor the first time it was asked, so a measurement with it
shows what the service does with the cores when the Provider is elsewhere.

What it replays is the demo Provider's own answer (``web.demo_provider.app.batch_answer``,
encoded as the route encodes it): the same columns, rows, hostile values, snapshot token
and cursors. It keys answers by ``(cursor, rowCount, limit)`` only and does not verify the
snapshot token it gets back; it checks the service token header. The first export of each
size fills the cache (then it costs what the demo Provider costs); ``BENCH_REPLAY_WARM``
rows are made before it says it listens, so no export pays for that. Memory: about 250
bytes per cached row.

Usage (the benchmark starts it; ``INTERNAL_SERVICE_TOKEN`` must match the service's)::

    python deploy/bench/replay_provider.py --bind 127.0.0.1:PORT [--warm ROWS]

It prints ``listening on http://HOST:PORT`` on stderr once it accepts connections.
"""

from __future__ import annotations

import argparse
import hmac
import os
import secrets
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actors.core.provider.contract import SERVICE_TOKEN_HEADER, response_envelope
from web.demo_provider.app import batch_answer  # noqa: E402
from web.demo_provider.data import PROVIDER_PATH  # noqa: E402

_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder()
#: Table size when a request gives no ``rowCount`` (the demo Provider's default).
DEFAULT_ROWS = 1000


class Replay:
    """The answers made so far, by ``(cursor, rowCount, limit)``; thread-safe enough for
    a benchmark (two threads making the same answer both store the same bytes)."""

    def __init__(self) -> None:
        self._secret = secrets.token_bytes(32)
        self._answers: dict[tuple[Any, Any, Any], bytes] = {}

    def answer(self, body: Any) -> bytes:
        """The encoded envelope for one decoded batch request (made on first use)."""
        parameters = body.get("parameters") or {}
        key = (body.get("cursor"), parameters.get("rowCount"), body.get("limit"))
        cached = self._answers.get(key)
        if cached is None:
            data = batch_answer(body, self._secret, DEFAULT_ROWS)
            cached = _ENCODER.encode(response_envelope("200", "success", data))
            self._answers[key] = cached
        return cached

    def warm(self, rows: int, limit: int = 1000) -> None:
        """Make the answers of one whole ``rows``-row export, batch by batch."""
        body: dict[str, Any] = {
            "tenantId": 0,
            "appCode": "PLATFORM",
            "requestedBy": 1,
            "limit": limit,
            "parameters": {"rowCount": rows},
            "cursor": None,
            "snapshotToken": None,
        }
        while True:
            data = _DECODER.decode(self.answer(body))["data"]
            if not data["hasMore"]:
                return
            body["cursor"] = data["nextCursor"]
            body["snapshotToken"] = data["snapshotToken"]


def handler(replay: Replay, token: bytes) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to ``replay`` and the expected service ``token``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the worker's pool reuses connections

        def do_POST(self) -> None:  # noqa: N802 - the http.server naming
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            presented = (self.headers.get(SERVICE_TOKEN_HEADER) or "").encode()
            if self.path != PROVIDER_PATH:
                self._send(404, response_envelope("404", "no such path", None))
            elif not hmac.compare_digest(presented, token):
                self._send(401, response_envelope("401", "invalid internal service token", None))
            else:
                self._send_bytes(200, replay.answer(_DECODER.decode(raw)))

        def _send(self, status: int, envelope: Any) -> None:
            self._send_bytes(status, _ENCODER.encode(envelope))

        def _send_bytes(self, status: int, payload: bytes) -> None:
            self.send_response_only(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's
            pass  # one line per batch would cost more than the answer

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bind", default="127.0.0.1:0", help="host:port to listen on")
    parser.add_argument(
        "--warm",
        type=int,
        default=int(os.environ.get("BENCH_REPLAY_WARM", "0")),
        help="rows of one export whose answers are made before listening (1000 per batch)",
    )
    args = parser.parse_args()
    host, port = args.bind.rsplit(":", 1)
    replay = Replay()
    if args.warm:
        replay.warm(args.warm)
    token = os.environ.get("INTERNAL_SERVICE_TOKEN", "").encode()
    server = ThreadingHTTPServer((host, int(port)), handler(replay, token))
    server.daemon_threads = True
    print(f"listening on http://{host}:{server.server_address[1]}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
