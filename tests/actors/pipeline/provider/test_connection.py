"""The export worker's keep-alive connection to its Provider (:class:`ProviderConnection`)
against real peers that close kept connections the way servers do.

Every server with keep-alive closes an idle connection after its own timeout (gunicorn
2 s, Node.js 5 s, nginx 75 s); when that timeout runs out as the next batch request is on
its way, the connection looked open when the request went out and the Provider drops it
unanswered (or answers 408, as some servers do). A batch request only reads, so the
connection sends it once more on a new
connection rather than failing the run's attempt; a new connection that fails so is the
Provider's fault, and the error stands.

A run keeps one connection for as long as the Provider keeps it, and reads an answer after
the worker wrote the batch before, that time counted toward the request's total limit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import http.server
import json
import socket
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import openpyxl
import pytest

from actors.core.errors import ProviderContractError, ProviderUnavailableError
from actors.pipeline.provider.http import ProviderConnection, fetch_body
from actors.pipeline.worker.pool import open_export_worker
from tests.actors.pipeline.provider.helpers import SERVICE, SPEC, batch_data, envelope
from tests.actors.pipeline.worker.helpers import answer, rows
from tests.servers import read_http_request, serving_in_thread, serving_raw_tcp

BODY = answer(rows(0, 3))
_REQUEST_TIMEOUT = b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"


@dataclass
class DroppingPeer:
    """What the peer saw: requests read per connection, in the order connections came.

    Attributes:
        answers: requests a connection answers before it drops the next one; by
            connection number (0-based), the last value for every later connection.
        drop: ``"eof"`` closes the connection, ``"reset"`` resets it (RST), ``"408"``
            answers HTTP 408 and closes it.
    """

    answers: list[int]
    drop: str = "eof"
    requests: list[int] = field(default_factory=list)

    def serve(self, conn: socket.socket, number: int) -> None:
        answers = self.answers[min(number, len(self.answers) - 1)]
        buffered = b""
        with conn:
            while True:
                buffered = read_http_request(conn, buffered)
                if buffered is None:
                    return  # the client closed it
                self.requests[number] += 1
                if self.requests[number] > answers:
                    # The idle timeout ran out as this request arrived: dropped unanswered.
                    if self.drop == "408":
                        conn.sendall(_REQUEST_TIMEOUT)
                    elif self.drop == "reset":
                        conn.setsockopt(
                            socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                        )
                    return
                head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(BODY)
                conn.sendall(head + BODY)  # no "Connection: close": it looks kept


@contextlib.contextmanager
def serving(peer: DroppingPeer) -> Iterator[str]:
    """``peer`` on a free port, a thread per connection; yields the batch URL."""

    def handle(conn: socket.socket, number: int) -> None:
        peer.requests.append(0)
        peer.serve(conn, number)

    with serving_raw_tcp(handle) as port:
        yield f"http://127.0.0.1:{port}/batches"


@pytest.mark.parametrize("drop", ["eof", "reset", "408"])
def test_a_kept_connection_dropped_as_the_request_arrives_sends_it_again_on_a_new_one(
    drop: str,
) -> None:
    """Each connection answers one request and drops the next: every request still gets
    its answer, each on the connection made after the drop."""
    peer = DroppingPeer(answers=[1], drop=drop)
    with serving(peer) as url:
        connection = ProviderConnection()
        spec = dataclasses.replace(SPEC, url=url)
        for _ in range(3):
            assert fetch_body(spec, connection) == BODY
        connection.close()
    # Connection 1 answered request 1 and dropped request 2, sent again on connection 2 …
    assert peer.requests == [2, 2, 1]


@pytest.mark.parametrize(
    ("drop", "error", "message"),
    [
        ("eof", ProviderUnavailableError, "unreachable: RemoteDisconnected: "),
        ("408", ProviderContractError, "answered HTTP 408"),
    ],
)
def test_a_new_connection_dropped_before_answering_is_the_providers_fault(
    drop: str, error: type[Exception], message: str
) -> None:
    """The request is sent again once, not until a connection answers: when the new
    connection drops it too, the Provider is down (or says so), as without keep-alive."""
    peer = DroppingPeer(answers=[1, 0], drop=drop)
    with serving(peer) as url:
        connection = ProviderConnection()
        spec = dataclasses.replace(SPEC, url=url)
        assert fetch_body(spec, connection) == BODY
        with pytest.raises(error, match=f"^provider {SERVICE} {message}"):
            fetch_body(spec, connection)
        connection.close()
    assert peer.requests == [2, 1]


async def test_a_run_whose_provider_drops_each_kept_connection_writes_every_batch(
    tmp_path: Path,
) -> None:
    """The whole worker: batch requests go out while the batch before is written, on
    kept connections the Provider drops; the run gets and writes every batch."""
    peer = DroppingPeer(answers=[1])
    with serving(peer) as url, open(tmp_path / "out.xlsx", "xb") as out:
        spec = dataclasses.replace(SPEC, url=url)
        async with open_export_worker(out, max_rows=100, max_bytes=1 << 24) as worker:
            for _ in range(4):
                assert (await worker.fetch(spec, limit=10, max_columns=100)).summary.row_count == 3
            assert await worker.finish_writes() == 12
            assert await worker.close(None) > 0
    assert peer.requests == [2, 2, 2, 1]
    book = openpyxl.load_workbook(tmp_path / "out.xlsx", read_only=True)
    assert [r[0] for r in book.active.values] == ["ID", *[0, 1, 2] * 4]
    book.close()


class _KeepAliveHandler(http.server.BaseHTTPRequestHandler):
    """Answers every POST with a small 200; ``close`` in the path asks to close after it.
    Records the client port of each request (one port: one connection)."""

    protocol_version = "HTTP/1.1"
    ports: ClassVar[list[int]] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers["Content-Length"]))
        self.ports.append(self.client_address[1])
        body = json.dumps(envelope(batch_data())).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        if "close" in self.path:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def _keep_alive_server() -> Iterator[str]:
    _KeepAliveHandler.ports = []
    with serving_in_thread(
        http.server.ThreadingHTTPServer(("127.0.0.1", 0), _KeepAliveHandler)
    ) as url:
        yield url


def test_a_run_keeps_one_connection_and_makes_a_new_one_after_the_provider_closed_it() -> None:
    with _keep_alive_server() as base:
        connection = ProviderConnection()
        keep = dataclasses.replace(SPEC, url=base + "/batch")
        close = dataclasses.replace(SPEC, url=base + "/batch?close")
        for spec in (keep, keep, close, keep, keep):
            assert json.loads(fetch_body(spec, connection))["code"] == "200"
        connection.close()
    first, second, third, fourth, fifth = _KeepAliveHandler.ports
    assert first == second == third  # kept alive until the Provider said close
    assert fourth == fifth != third


def test_the_answer_waits_while_the_worker_writes_and_the_total_limit_counts_that_time() -> None:
    """The worker writes the previous batch between send and receive: no timer runs then
    (a SIGALRM there would break the write), but the time counts toward the request's total
    limit, checked when the read starts."""
    with _keep_alive_server() as base:
        connection = ProviderConnection()
        spec = dataclasses.replace(SPEC, url=base + "/batch", request_timeout=0.3)
        connection.send(spec)
        time.sleep(0.1)  # a short write: the answer is read from the socket's buffer
        assert json.loads(connection.receive())["code"] == "200"
        connection.send(spec)
        time.sleep(0.4)  # a write longer than the whole limit: no signal interrupts it
        with pytest.raises(ProviderUnavailableError, match="within the total limit of 0.3 s"):
            connection.receive()
        # The unread answer was dropped with its connection; the next request makes another.
        assert json.loads(fetch_body(spec, connection))["code"] == "200"
        connection.close()
    assert len(set(_KeepAliveHandler.ports)) == 2
