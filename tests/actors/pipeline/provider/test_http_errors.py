"""One translation of the wire's faults for both entry points of the Provider's HTTP client
(``actors/pipeline/provider/http.py``, ``actors/pipeline/provider/http_errors.py``): a
real peer that resets, closes, speaks something else, cuts the body or stays silent, or a
refused connection, reads the same from an export worker's connection
(:func:`fetch_body`) and from provider-check's thread (:func:`fetch_body_in_thread`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import socket
import struct
import time
from collections.abc import Callable, Iterator

import pytest
import urllib3

from actors.core.errors import ProviderUnavailableError
from actors.pipeline.provider.http import ProviderConnection, fetch_body, fetch_body_in_thread
from tests.actors.pipeline.provider.helpers import DEFINITION, SERVICE, SPEC, batch_data, envelope
from tests.servers import read_http_request, serving_raw_tcp


def _raw_peer(behaviour: str) -> Callable[[socket.socket], None]:
    """What a broken Provider does with one connection, on the wire (``_serve_raw``)."""

    def serve(conn: socket.socket) -> None:
        read_http_request(conn)  # the whole request, so the send never fails
        if behaviour == "reset":  # RST instead of an answer
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif behaviour == "garbage":  # not HTTP
            conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
        elif behaviour == "short-body":  # closes 90 bytes early
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 10)
        elif behaviour == "superscript-length":  # "²" in latin-1, then the body to EOF
            body = json.dumps(envelope(batch_data())).encode()
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\n" + body)
        elif behaviour == "silent":
            time.sleep(1.0)
        # "eof": nothing; every behaviour then closes
        conn.close()

    return serve


@contextlib.contextmanager
def _serve_raw(behaviour: str) -> Iterator[str]:
    """A TCP server on a free port whose every connection gets ``behaviour``; yields the
    request URL."""
    serve = _raw_peer(behaviour)
    with serving_raw_tcp(lambda conn, number: serve(conn)) as port:
        yield f"http://127.0.0.1:{port}{DEFINITION.provider_path}"


RAW_FAULTS = [
    ("reset", f"provider {SERVICE} unreachable: ConnectionResetError: "),
    ("eof", f"provider {SERVICE} unreachable: RemoteDisconnected: "),
    ("garbage", f"provider {SERVICE} unreachable: BadStatusLine: "),
    ("short-body", f"provider {SERVICE} unreachable: IncompleteRead: "),
    ("silent", f"provider {SERVICE} read timeout (0.3 s)"),
]


@pytest.mark.parametrize(("behaviour", "message"), RAW_FAULTS, ids=[b for b, _ in RAW_FAULTS])
def test_the_worker_and_the_thread_entry_points_translate_wire_faults_alike(
    behaviour: str, message: str
) -> None:
    """A real peer that resets, closes, speaks something else, cuts the body or stays
    silent: the worker's connection (its own send and read, :class:`ProviderConnection`)
    and provider-check's pooled request give one class and one message, and the worker's
    connection is closed and made again for the next request."""
    with _serve_raw(behaviour) as url:
        spec = dataclasses.replace(SPEC, url=url, read_timeout=0.3)
        texts = []
        connection = ProviderConnection()
        for send in (
            lambda: fetch_body(spec, connection),
            lambda: fetch_body_in_thread(spec, urllib3.PoolManager()),
        ):
            with pytest.raises(ProviderUnavailableError) as raised:
                send()
            texts.append(str(raised.value))
        assert texts[0] == texts[1]
        assert texts[0].startswith(message)
        with pytest.raises(ProviderUnavailableError, match=re.escape(message)):
            fetch_body(spec, connection)  # a new connection, the same fault


def test_a_content_length_that_is_no_number_is_no_declaration_for_both_entry_points() -> None:
    """``Content-Length: ²`` (a latin-1 byte that ``str.isdigit`` accepts and ``int``
    refuses): the body is read to the end of the connection, as http.client does, not
    reported as an invalid base URL."""
    with _serve_raw("superscript-length") as url:
        spec = dataclasses.replace(SPEC, url=url)
        for body in (
            fetch_body(spec),
            fetch_body_in_thread(spec, urllib3.PoolManager()),
        ):
            assert json.loads(body) == envelope(batch_data())


def test_a_refused_connection_reads_the_same_from_both_entry_points() -> None:
    spec = dataclasses.replace(SPEC, url="http://127.0.0.1:1/x")
    texts = []
    for send in (
        lambda: fetch_body(spec),
        lambda: fetch_body_in_thread(spec, urllib3.PoolManager()),
    ):
        with pytest.raises(ProviderUnavailableError) as raised:
            send()
        texts.append(str(raised.value))
    assert (
        texts
        == [f"provider {SERVICE} unreachable: ConnectError: [Errno 111] Connection refused"] * 2
    )
