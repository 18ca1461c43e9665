"""One Provider batch request, synchronous: the service's one HTTP client for Providers.

The export worker (:mod:`actors.pipeline.worker.session`) makes its run's batch requests
itself, so the event-loop process spends no CPU on HTTP. The parent builds a
:class:`FetchSpec` (URL, body, headers, timeouts, limits: :meth:`ProviderRequests.fetch_spec
<actors.pipeline.provider.request_builder.ProviderRequests.fetch_spec>`) and the worker sends it on
its run's :class:`ProviderConnection`, reading the answer after it wrote the batch before
(:func:`fetch_body` does both at once). ``export-center provider-check`` sends its requests
from a thread through urllib3's pool (:func:`fetch_body_in_thread`, called by
:class:`~actors.pipeline.provider.check_client.ProviderCheckClient`), the
ones it tampers with included (:meth:`FetchSpec.with_body`, :meth:`FetchSpec.with_header`),
with the same status, body and error rules. Both return the bytes of an HTTP 200 body or
raise the export error classes of :mod:`actors.core.errors`::

    ProviderUnavailableError  (transient)  connect error / timeout, read timeout, the
                                           request over its total time limit, any other
                                           transport error, HTTP 5xx, HTTP 429
    ProviderContractError     (permanent)  another HTTP status (a redirect included: it is
                                           not followed), a body whose Content-Encoding
                                           cannot be decoded
    LimitExceededError        (permanent)  body over ``max_response_bytes`` (declared or
                                           counted while streaming, after decompression)

The HTTP library is urllib3 (a well-kept library, already installed; measured cheapest in
CPU per batch of the synchronous clients that decode Content-Encoding — see the closing
note of issue 9). The total time limit of one request is a ``SIGALRM`` timer in
:class:`ProviderConnection`: urllib3's timeouts bound each socket operation, not the
whole request, and a Provider dripping one byte every few seconds would otherwise hold the
run until its deadline. The timer needs the main thread of the process, which is where the
worker serves its requests; :func:`fetch_body_in_thread` leaves that limit to its caller.

This module is imported by the worker process, so it imports neither trio nor httpx.
"""

from __future__ import annotations

import contextlib
import errno
import signal
import time
from collections.abc import Iterator

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import (
    HTTPError,
    ReadTimeoutError,
)
from urllib3.util import parse_url

from actors.core.provider.http_answer import (
    ERROR_DETAIL_BYTES,
    body_too_large,
    error_detail,
    needs_error_detail,
    status_error,
)
from actors.pipeline.provider.fetch import FetchSpec
from actors.pipeline.provider.http_errors import TotalLimitReached, translated

__all__ = [
    "ProviderConnection",
    "fetch_body",
    "fetch_body_in_thread",
    "new_pool",
]

_CHUNK = 64 * 1024


@contextlib.contextmanager
def _total_limit(deadline: float) -> Iterator[None]:
    """Raise :class:`~actors.pipeline.provider.http_errors.TotalLimitReached` in the main
    thread once ``deadline`` (``time.monotonic``) has passed; at once if it already has."""

    def expire(signum: int, frame: object) -> None:
        raise TotalLimitReached

    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TotalLimitReached
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, remaining)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class ProviderConnection:
    """One export run's keep-alive connection to its Provider: a batch request is sent,
    and its answer read later.

    The export worker sends batch n+1's request, writes batch n, then reads n+1's answer
    (:mod:`actors.pipeline.worker.session`): the Provider prepares its answer while the
    worker types, encodes and compresses, and the bytes wait in the sockets' buffers
    meanwhile (an answer larger than they hold keeps the Provider in its send until the
    worker reads). One request at a time, as HTTP/1.1 without pipelining: the next is sent
    after this one's answer was read to its end. The connection is made at the first
    request and again when the Provider closed it (its keep-alive timeout, ``Connection:
    close``) or the URL names another host; an answer not read to its end closes it, so
    its rest is never read as the next answer. A kept connection the Provider closes just
    as a request goes out (its idle timeout racing the request: the answer is an EOF, a
    reset or a 408) has that request sent once more on a new connection, within the same
    total limit (:meth:`_response`). No proxy is used, redirects are not
    followed (the target must stay the allow-listed service: no SSRF; the proxy must not
    see the internal token).

    The total time limit of a request (``spec.request_timeout``) runs from :meth:`send`
    to the last byte read by :meth:`receive`, the time between them included; it is a
    ``SIGALRM`` timer, armed only while this class sends or reads (never while the worker
    writes), so both must be called from the process's main thread.

    urllib3's connection classes do the HTTP (``request`` sends, ``getresponse`` reads:
    their public API); this class keeps the connection, the limits and the error
    translation of the module docstring.
    """

    def __init__(self) -> None:
        self._conn: HTTPConnection | None = None
        self._origin: tuple[str, str, int | None] | None = None
        self._spec: FetchSpec | None = None  # of the request whose answer is unread
        self._deadline = 0.0  # time.monotonic() by which that answer must be complete
        self._reused = False  # whether that request went out on a kept connection

    def send(self, spec: FetchSpec) -> None:
        """Send the request of ``spec``; :meth:`receive` reads its answer.

        Raises:
            ProviderUnavailableError: the connection or the send failed or timed out
                (``spec.connect_timeout`` bounds both), the URL cannot be used, or the
                total limit passed.
            RuntimeError: the previous request's answer was not read.
        """
        if self._spec is not None:
            raise RuntimeError("the previous request's answer was not read")
        self._deadline = time.monotonic() + spec.request_timeout
        with translated(spec, self), _total_limit(self._deadline):
            self._send(spec)
        self._spec = spec

    def receive(self) -> bytes:
        """Read the answer of the request sent last: the body of an HTTP 200 answer,
        decoded from its Content-Encoding, streamed and counted while it arrives (reading
        stops as soon as it passes ``spec.max_response_bytes``).

        Raises:
            ProviderUnavailableError, ProviderContractError, LimitExceededError: see the
                module docstring; over ``spec.request_timeout`` since :meth:`send`, the
                transient :func:`~actors.core.provider.http_answer.total_limit_exceeded`.
            RuntimeError: no request was sent.
        """
        spec = self._spec
        if spec is None or self._conn is None:
            raise RuntimeError("no request was sent")
        self._spec = None
        with translated(spec, self), _total_limit(self._deadline):
            response = self._response(spec)
            try:
                _check_status(response, spec.service)
                return _read_limited(response, spec.max_response_bytes)
            except BaseException:
                response.close()  # and the connection, below: its rest is not read
                raise

    def close(self) -> None:
        """Close the connection (idempotent); the next :meth:`send` makes a new one."""
        conn, self._conn, self._spec = self._conn, None, None
        if conn is not None:
            conn.close()

    def _send(self, spec: FetchSpec) -> None:
        """Send the request on the kept connection, or a new one (:attr:`_reused` says
        which)."""
        url = parse_url(spec.url)
        conn = self._connection(url.scheme or "http", url.host or "", url.port, spec)
        conn.timeout = spec.connect_timeout  # connect and send; the read sets its own
        try:
            conn.request(
                "POST",
                url.request_uri,
                body=spec.body,
                headers=dict(spec.headers),
                preload_content=False,
            )
        except OSError as exc:
            # As urllib3's pool: the Provider may close its side after answering early (a
            # 413 before the whole body); the answer is still readable.
            if exc.errno not in (errno.EPIPE, errno.ECONNRESET, errno.EPROTOTYPE):
                raise

    def _response(self, spec: FetchSpec) -> urllib3.BaseHTTPResponse:
        """The head of the answer to the request sent; the request is sent again, once, on
        a new connection when a kept one was closed, reset or answered HTTP 408 instead.

        A kept connection can look open when the request goes out and be closed by the
        Provider a moment later: its idle timeout ran out as the request was on its way
        (every server with keep-alive has one: gunicorn 2 s, Node.js 5 s, nginx 75 s), and
        some servers say so with a 408 before closing. The Provider did not serve the
        request, and a batch request only reads, so it is safe to send again (RFC 9110,
        section 15.5.9, allows it for a 408; browsers do the same for both); failing it
        would cost the run its attempt, or the task for good (a 408 is a status the
        contract does not retry). A new connection that fails so is the Provider's fault,
        and raised or answered as it is.
        """
        conn = self._conn
        assert conn is not None
        conn.timeout = spec.read_timeout  # the head, and between bytes of the body
        try:
            response = conn.getresponse()
        except TimeoutError as exc:  # urllib3's pool says the same for a silent peer
            raise ReadTimeoutError(None, spec.url, "Read timed out.") from exc  # type: ignore[arg-type]
        except ConnectionError:  # RemoteDisconnected (EOF), a reset, a broken pipe
            if not self._reused:
                raise
        else:
            if response.status != 408 or not self._reused:
                return response
            response.close()
        self.close()
        self._send(spec)  # on a new connection: not retried again
        return self._response(spec)

    def _connection(
        self, scheme: str, host: str, port: int | None, spec: FetchSpec
    ) -> HTTPConnection:
        origin = (scheme, host, port)
        conn = self._conn
        # A kept connection the Provider closed reads as readable (EOF): make a new one.
        if conn is not None and (origin != self._origin or not conn.is_connected):
            self.close()
            conn = None
        self._reused = conn is not None
        if conn is None:
            if scheme not in ("http", "https"):
                raise ValueError(f"unsupported scheme {scheme!r}")
            # Certificates are verified against the system's CAs by default, as urllib3's
            # pools do.
            kind = HTTPSConnection if scheme == "https" else HTTPConnection
            conn = kind(host, port, timeout=spec.connect_timeout)
            self._conn, self._origin = conn, origin
        return conn


def fetch_body(spec: FetchSpec, connection: ProviderConnection | None = None) -> bytes:
    """POST ``spec`` and return the body of an HTTP 200 answer, within its total time limit
    (:meth:`ProviderConnection.send`, then :meth:`~ProviderConnection.receive`). Must run in
    the process's main thread (the total-limit timer).

    Args:
        spec: the request.
        connection: the run's connection to reuse; ``None``: one made (and closed) here.

    Returns:
        The body bytes, decoded from its Content-Encoding.

    Raises:
        ProviderUnavailableError, ProviderContractError, LimitExceededError: see the
            module docstring and :class:`ProviderConnection`.
    """
    conn = connection or ProviderConnection()
    try:
        conn.send(spec)
        return conn.receive()
    finally:
        if connection is None:
            conn.close()


def fetch_body_in_thread(spec: FetchSpec, pool: urllib3.PoolManager) -> bytes:
    """:func:`fetch_body` for any thread: the same request, limits and errors, but no
    total time limit, which only the main thread can keep with a timer.

    The caller keeps that limit: :class:`~actors.pipeline.provider.check_client.ProviderCheckClient`
    runs this in a trio worker thread under ``trio.move_on_after(spec.request_timeout)``,
    abandons the thread when the limit passes and raises
    :func:`~actors.core.provider.http_answer.total_limit_exceeded`. An abandoned call ends
    when the answer is complete, the Provider closes or goes silent for
    ``spec.read_timeout``; one that keeps dripping holds its thread and connection until
    then, or until the process exits. Its result is dropped.

    Args:
        spec: the request.
        pool: connections to reuse; urllib3's pool may be shared between threads.

    Returns:
        The body bytes, decoded from its Content-Encoding.

    Raises:
        ProviderUnavailableError, ProviderContractError, LimitExceededError: see the
            module docstring.
    """
    timeout = urllib3.Timeout(connect=spec.connect_timeout, read=spec.read_timeout)
    with translated(spec, None):
        response = pool.request(
            "POST",
            spec.url,
            body=spec.body,
            headers=dict(spec.headers),
            timeout=timeout,
            redirect=False,
            retries=False,
            preload_content=False,
        )
        try:
            _check_status(response, spec.service)
            return _read_limited(response, spec.max_response_bytes)
        except BaseException:
            # An answer not read to its end must not go back to the pool: the next request
            # on that connection would read its rest as the next answer.
            response.close()
            raise
        finally:
            response.release_conn()


def new_pool() -> urllib3.PoolManager:
    """A connection pool for one run's requests (no proxy: ``PoolManager`` reads none)."""
    return urllib3.PoolManager(num_pools=4, maxsize=1, block=False)


def _check_status(response: urllib3.BaseHTTPResponse, service: str) -> None:
    status = response.status
    detail = _error_detail(response) if needs_error_detail(status) else ""
    error = status_error(service, status, detail)
    if error is not None:
        raise error


def _read_limited(response: urllib3.BaseHTTPResponse, limit: int) -> bytes:
    """Read the body, failing as soon as it is known to exceed the limit (§11)."""
    declared = response.headers.get("content-length")
    # ASCII digits only: str.isdigit() also takes "²" (byte 0xB2 of a latin-1 header),
    # which int() refuses; a length that is not a number is no declaration (http.client
    # then reads to the end of the connection).
    if declared is not None and declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise body_too_large(limit, f"Content-Length {declared}")
    chunks: list[bytes] = []
    received = 0
    # Decoded bytes are counted, so a compressed body cannot expand past the limit.
    for chunk in response.stream(_CHUNK, decode_content=True):
        received += len(chunk)
        if received > limit:
            raise body_too_large(limit, f"more than {limit} bytes read")
        chunks.append(chunk)
    return b"".join(chunks)


def _error_detail(response: urllib3.BaseHTTPResponse) -> str:
    """The Provider's envelope message from a small error body, or ``""``."""
    received = bytearray()
    try:
        for chunk in response.stream(_CHUNK, decode_content=True):
            received += chunk
            if len(received) > ERROR_DETAIL_BYTES:
                return ""
    except (HTTPError, OSError):
        return ""
    return error_detail(bytes(received))
