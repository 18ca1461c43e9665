"""The export worker's keep-alive connection to its Provider (:class:`ProviderConnection`)
against real peers that close kept connections the way servers do.

Every server with keep-alive closes an idle connection after its own timeout (gunicorn
2 s, Node.js 5 s, nginx 75 s); when that timeout runs out as the next batch request is on
its way, the connection looked open when the request went out and the Provider drops it
unanswered (or answers 408, as some servers do). A batch request only reads, so the
connection sends it once more on a new
connection rather than failing the run's attempt; a new connection that fails so is the
Provider's fault, and the error stands.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import openpyxl
import pytest

from actors.core.errors import ProviderContractError, ProviderUnavailableError
from actors.pipeline.provider.fetch import FetchSpec
from actors.pipeline.provider.http import ProviderConnection, fetch_body
from actors.pipeline.worker.pool import open_export_worker
from tests.actors.pipeline.worker.helpers import answer, rows
from tests.servers import read_http_request, serving_raw_tcp

SERVICE = "customer-service"
SPEC = FetchSpec(
    service=SERVICE,
    url="http://provider.test/batches",
    body=b'{"limit":2}',
    headers=(("Content-Type", "application/json"),),
    connect_timeout=3.0,
    read_timeout=5.0,
    request_timeout=30.0,
    max_response_bytes=4 * 1024 * 1024,
)
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
