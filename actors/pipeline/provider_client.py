"""Provider client: one §10.1 batch call, validated, and the cursor loop over a whole export.

Every request to a Provider is sent by one HTTP client, :mod:`actors.pipeline.provider_http`
(urllib3). An export run's requests are sent by its worker process: this process builds
each request (:meth:`ProviderClient.fetch_spec`), runs the cursor loop and records metrics
and the DEBUG batch line from the worker's figures, and spends no CPU on HTTP.
``export-center provider-check``, which tampers with some requests (a wrong token, a
changed body), passes no worker: the same code then sends the request from a trio worker
thread, under the same total time limit. Every transport error and every answer outside
the contract becomes one of the §9.1 classes of :mod:`actors.core.errors`, with the same
message either way, so the consumer slot decides a task's fate from the class alone::

    ProviderUnavailableError  (transient)  connect error / timeout, read timeout, a batch
                                           request over its total time limit, any other
                                           transport error, HTTP 5xx, HTTP 429
    CursorNotAdvancingError   (transient)  hasMore with an empty nextCursor, a cursor that
                                           repeats one already sent (a cycle), too many
                                           empty batches in a row
    ProviderContractError     (permanent)  other HTTP status, envelope code != "200" (this
                                           covers an invalid or expired snapshot token,
                                           §10.2), non-JSON or malformed data, a value we
                                           cannot represent, schemaHash or snapshotToken
                                           changed between batches
    LimitExceededError        (permanent)  body over 4 MB, more than 100 columns (§12),
                                           first totalRows over max-rows, more batches
                                           than max-rows / batch-size allows

No Provider answer escapes as another exception: whatever Python raises while decoding or
checking it (an integer over the 4,300-digit conversion limit, deep nesting …) becomes a
ProviderContractError, so a hostile answer costs one attempt, not ``max-attempts``.
Provider text quoted in a message is escaped, clipped and stripped of URL credentials
(:func:`actors.core.text.quote_outside`).

:class:`ProviderClient` makes one request (:meth:`ProviderClient.fetch_batch`);
:func:`actors.pipeline.cursor_loop.iterate_batches` drives the cursor, echoes the snapshot
token and checks the cross-batch rules of §10.1 and §10.2
(:mod:`actors.core.provider.batch_rules`). What the contract is — request and answer
types, limits, parsing — is :mod:`actors.core.provider.contract` and
:mod:`actors.core.provider.request` (shared with the demo Provider).
"""

from __future__ import annotations

import base64
import json
import logging
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import trio
import urllib3

from actors.core.errors import (
    ExportError,
    ExportWorkerDiedError,
    PermanentExportError,
    ProviderUnavailableError,
)
from actors.core.models import BatchSummary, ExportDefinition, ProviderBatch
from actors.core.provider.contract import (
    MAX_COLUMNS,
    MAX_RESPONSE_BYTES,
    SERVICE_TOKEN_HEADER,
    total_limit_exceeded,
)
from actors.core.provider.provider_map import ProviderEndpoint
from actors.core.provider.request import BatchRequest
from actors.core.text import quote_outside
from actors.core.tracing import TRACEPARENT_HEADER, format_traceparent, is_trace_id, new_span_id
from actors.pipeline.export_worker import FetchedBatch
from actors.pipeline.provider_decode import parse_batch_response
from actors.pipeline.provider_http import FetchSpec, fetch_body_in_thread, new_pool

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_REQUEST_TIMEOUT",
    "BatchDecoder",
    "BatchFetcher",
    "EndpointSource",
    "ProviderClient",
    "ProviderObserver",
    "Tamper",
]

#: Default total time for one batch request, body included, in seconds
#: (``FILE_EXPORT_PROVIDER_REQUEST_TIMEOUT_SECONDS``).
DEFAULT_REQUEST_TIMEOUT = 60.0

#: Rewrites a request before it is sent (``export-center provider-check``'s probes).
Tamper = Callable[[FetchSpec], FetchSpec]


class BatchDecoder(Protocol):
    """Decodes and checks one raw HTTP 200 body (see :meth:`ProviderClient.fetch_batch`)."""

    async def __call__(
        self, raw: bytes, *, service: str, limit: int, max_columns: int
    ) -> ProviderBatch | BatchSummary:
        """Return the validated batch or its summary.

        Raises:
            ProviderContractError, LimitExceededError: as :func:`parse_batch_response`.
        """
        ...


class BatchFetcher(Protocol):
    """Makes one batch request elsewhere (an export worker process), decodes and checks it.

    :class:`actors.pipeline.export_worker.ExportWorker` is the one implementation: an
    export run's HTTP and JSON decoding happen in its worker process.
    """

    #: The duration of the last request, when it failed after being sent; else ``None``.
    last_request_seconds: float | None

    async def fetch(self, spec: FetchSpec, *, limit: int, max_columns: int) -> FetchedBatch:
        """Send ``spec``, decode and check the answer; return its summary, size, duration.

        Raises:
            ProviderUnavailableError, ProviderContractError, LimitExceededError: as
                :func:`actors.pipeline.provider_http.fetch_body` and
                :func:`parse_batch_response`.
            ExportWorkerDiedError: the process doing it died.
        """
        ...


class EndpointSource(Protocol):
    """Where each Provider service is reached, read when each request is built.

    :class:`actors.service.provider_map_source.ProviderMapSource` is the service's one
    implementation (a map file that reloads, over the environment's static map).
    """

    def endpoint(self, service: str) -> ProviderEndpoint | None:
        """The address (and token, if the service has its own) of ``service`` now, or
        ``None`` when none is configured."""
        ...

    async def refresh(self) -> None:
        """Bring the addresses up to date with their source (an export run calls it before
        its first request); never raises for a bad source, which keeps the old ones."""
        ...


class _StaticEndpoints:
    """A plain mapping service -> base URL, read at every call; no own tokens."""

    def __init__(self, base_urls: Mapping[str, str]) -> None:
        self._base_urls = base_urls

    def endpoint(self, service: str) -> ProviderEndpoint | None:
        url = self._base_urls.get(service)
        return None if url is None else ProviderEndpoint(url)

    async def refresh(self) -> None:
        return None


class ProviderObserver(Protocol):
    """Receives one observation per Provider request (metrics, §13)."""

    def observe_request(self, service: str, export_type: str, seconds: float, ok: bool) -> None:
        """Record one request.

        Args:
            service: the registry's ``provider-service``.
            export_type: the export type requested.
            seconds: duration from sending to the last byte of the answer (or the error),
                in seconds of trio's clock. Decoding is not counted: it may wait for an
                export worker that is still writing the previous batch.
            ok: ``True`` when a valid batch came back; ``False`` for any §9.1 error.
        """


class ProviderClient:
    """Calls §10.1 Provider endpoints and validates their answers.

    The client is safe to share between consumer slots: each call is one independent
    request and the only state is the connection pool of requests sent without a worker.

    Args:
        base_urls: where each ``provider-service`` is reached: a mapping name -> base URL
            such as ``http://127.0.0.1:8080``, or an :class:`EndpointSource` (addresses
            and per-service tokens that reload). Read when each request is built, so the
            caller may pass a live mapping that it fills once the server has bound its
            port, and a changed address applies to the next request (§10.4:
            provider-service is taken at execution time).
        service_token: value of ``X-Internal-Service-Token`` (§12) for every service
            without a token of its own (``INTERNAL_SERVICE_TOKEN``).
        pool: the urllib3 connections for requests sent without a worker (see
            :meth:`fetch_batch`); ``None``: a pool made at the first such request
            (:func:`actors.pipeline.provider_http.new_pool`). Tests pass a stand-in whose
            ``request`` raises urllib3's errors. :meth:`aclose` closes only a pool made here.
        connect_timeout: seconds to connect, and to send the request (§14: 3 s).
        read_timeout: seconds for the answer's head and between its bytes on the wire
            (§14: 15 s, set for the export client alone, not a global default).
        request_timeout: seconds for one whole batch request, from sending to the last
            byte of the body. The read timeout only bounds the gap between two reads, so a
            Provider dripping one byte every few seconds would otherwise hold a slot until
            the run's deadline.
        max_response_bytes: largest accepted response body in bytes, enforced while
            reading (§11, §12: 4 MB).
        max_columns: largest accepted column count (§11, §12: 100).
        observer: told about every request that was sent, ok or not.

    Raises:
        ValueError: a timeout or limit is not positive, or the service token is empty.
    """

    def __init__(
        self,
        base_urls: Mapping[str, str] | EndpointSource,
        service_token: str,
        *,
        pool: urllib3.PoolManager | None = None,
        connect_timeout: float = 3.0,
        read_timeout: float = 15.0,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        max_columns: int = MAX_COLUMNS,
        observer: ProviderObserver | None = None,
    ) -> None:
        if not service_token:
            raise ValueError(
                "service_token must not be empty: every Provider request carries it "
                "(X-Internal-Service-Token, INTERNAL_SERVICE_TOKEN)"
            )
        if min(connect_timeout, read_timeout, request_timeout) <= 0:
            raise ValueError("timeouts must be positive seconds")
        if max_response_bytes < 1 or max_columns < 1:
            raise ValueError("max_response_bytes and max_columns must be positive")
        self._endpoints: EndpointSource = (
            _StaticEndpoints(base_urls) if isinstance(base_urls, Mapping) else base_urls
        )
        self._service_token = service_token
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._request_timeout = request_timeout
        self._max_response_bytes = max_response_bytes
        self._max_columns = max_columns
        self._observer = observer
        self._owns_pool = pool is None
        self._pool = pool

    async def refresh_endpoints(self) -> None:
        """Bring the Provider addresses up to date with their source (a changed map file
        is read now); an export run calls it before its first request. Never raises: a
        bad source keeps the addresses in force (:class:`EndpointSource`)."""
        await self._endpoints.refresh()

    async def aclose(self) -> None:
        """Close the connections of requests sent without a worker, if this client made
        their pool. A request still running in an abandoned thread keeps its own."""
        if self._owns_pool and self._pool is not None:
            self._pool.clear()

    async def fetch_batch(
        self,
        definition: ExportDefinition,
        request: BatchRequest,
        *,
        fetch: BatchFetcher | None = None,
        decode: BatchDecoder | None = None,
        trace_id: str | None = None,
        tamper: Tamper | None = None,
    ) -> Any:
        """POST one §10.1 request and return the validated batch.

        An export run passes ``fetch``: its worker process makes the request
        (:func:`actors.pipeline.provider_http.fetch_body`) and decodes the answer, and this
        process only builds the request and records the metrics and the DEBUG line. Without
        it the same urllib3 code sends the request from a trio worker thread
        (:func:`actors.pipeline.provider_http.fetch_body_in_thread`; ``export-center
        provider-check``), and the whole call is held to ``request_timeout`` here: at the
        limit the thread is abandoned (its result dropped), which suits a short-lived
        command, not a service.

        The body is streamed and counted while it arrives; reading stops as soon as it
        passes ``max_response_bytes``, so an oversized answer never sits in memory whole.
        Rows are checked against ``request.limit``. Cross-batch rules (schemaHash,
        snapshot token, cursor progress) belong to :func:`iterate_batches`.

        Args:
            definition: the registry entry; ``provider_service`` picks the base URL and
                ``provider_path`` is appended to it.
            request: the request body.
            fetch: the run's worker (:class:`actors.pipeline.export_worker.ExportWorker`);
                then the result is a :class:`BatchSummary` and the worker keeps the rows.
            decode: without ``fetch``: decodes and checks the raw body, called as
                ``await decode(raw, service=..., limit=..., max_columns=...)`` (the
                provider check records its stage). ``None``: decode here with
                :func:`parse_batch_response`.
            trace_id: the export's trace id (``actors/core/tracing.py``); when valid, the
                request carries ``traceparent: 00-<trace_id>-<new span id>-01``.
            tamper: rewrites the request built here before it is sent (provider-check's
                probes: :meth:`FetchSpec.with_body`, :meth:`FetchSpec.with_header`);
                ``None``: sent as built.

        Returns:
            The batch (:class:`ProviderBatch`), its :class:`BatchSummary` with ``fetch``,
            or what ``decode`` returns. ``columns`` is ``None`` when the Provider omitted
            them.

        Raises:
            ValueError: a tenant field is missing; nothing was sent.
            ExportWorkerDiedError: the worker died (not observed as a Provider error).
            ProviderUnavailableError: no base URL for the service, connect error or
                timeout (sending the request included), read timeout, the whole request
                took longer than ``request_timeout``, other transport error, HTTP 5xx or
                429.
            ProviderContractError: another non-200 HTTP status, envelope code other than
                "200" (the Provider's code and message are quoted), a body that is not JSON,
                a malformed or missing field, an unknown column type, a column width outside
                1..255, a snapshot token over 512 characters, more rows than
                ``request.limit``, a ``totalRows`` beyond a BIGINT, or any value whose
                decoding makes Python raise.
            LimitExceededError: the body passed ``max_response_bytes`` or there are more
                than ``max_columns`` columns.
        """
        body = _encode(request)  # raises ValueError before any IO
        service = definition.provider_service
        started = trio.current_time()
        seconds: float | None = None
        sent = True  # False: the error is not the Provider's (an earlier write failed)
        batch: ProviderBatch | BatchSummary
        try:
            spec = self.fetch_spec(definition, body, trace_id)
            if tamper is not None:
                spec = tamper(spec)
            if fetch is not None:
                try:
                    fetched = await fetch.fetch(
                        spec, limit=request.limit, max_columns=self._max_columns
                    )
                except ExportError:
                    seconds = fetch.last_request_seconds
                    sent = seconds is not None
                    raise
                batch, size, seconds = fetched.summary, fetched.size, fetched.seconds
            else:
                raw = await self._fetch_in_thread(spec)
                seconds = trio.current_time() - started
                size = len(raw)
                if decode is None:
                    batch = parse_batch_response(
                        raw, service=service, limit=request.limit, max_columns=self._max_columns
                    )
                else:
                    batch = await decode(
                        raw, service=service, limit=request.limit, max_columns=self._max_columns
                    )
        except ExportWorkerDiedError:
            raise  # our process failed, not the Provider
        except ExportError:
            if sent:
                self._observe(definition, started, seconds, ok=False)
            raise
        # Cancellation and programming errors are not observed: they say nothing about
        # the Provider's health.
        self._observe(definition, started, seconds, ok=True)
        ms = round(seconds * 1000, 1)
        log.debug(
            "provider %s batch: %d rows, %d bytes in %.1f ms",
            service,
            batch.row_count,
            size,
            ms,
            extra={"service": service, "rows": batch.row_count, "bytes": size, "ms": ms},
        )
        return batch

    def fetch_spec(
        self, definition: ExportDefinition, body: bytes, trace_id: str | None
    ) -> FetchSpec:
        """The HTTP request of one batch, for :mod:`actors.pipeline.provider_http` to send
        (in an export worker, or in a thread of this process: :meth:`fetch_batch`).

        Args:
            definition: the registry entry (base URL and token by ``provider_service``,
                read now, plus ``provider_path``).
            body: the encoded request body.
            trace_id: the export's trace id; when valid the request carries a new
                ``traceparent`` span.

        Returns:
            URL, body, headers (the service's own token, else ``service_token``; JSON
            content type, ``traceparent``; Basic
            credentials of the base URL as an ``Authorization`` header, which urllib3
            does not send from the URL itself), this client's timeouts and body limit.

        Raises:
            ProviderUnavailableError: no base URL is configured for the service, or one
                that cannot be parsed (transient: §10.4 reads ``provider-service`` at
                execution time, so a fixed configuration applies to the retry).
        """
        service = definition.provider_service
        endpoint = self._endpoints.endpoint(service)
        if endpoint is None or not endpoint.base_url:
            raise ProviderUnavailableError(f"no base URL configured for provider {service}")
        headers = self._headers(trace_id, endpoint.token or self._service_token)
        url = endpoint.base_url.rstrip("/") + definition.provider_path
        try:
            parts = urllib.parse.urlsplit(url)
        except ValueError as exc:  # "http://[::1": what urllib3 would refuse too
            raise ProviderUnavailableError(
                f"provider {service} has an invalid base URL: {quote_outside(str(exc))}"
            ) from exc
        if parts.username is not None or parts.password is not None:
            credentials = f"{parts.username or ''}:{parts.password or ''}"
            headers["Authorization"] = "Basic " + base64.b64encode(
                urllib.parse.unquote(credentials).encode("utf-8")
            ).decode("ascii")
            host = parts.netloc.rpartition("@")[2]
            url = urllib.parse.urlunsplit(parts._replace(netloc=host))
        return FetchSpec(
            service=service,
            url=url,
            body=body,
            headers=tuple(headers.items()),
            connect_timeout=self._connect_timeout,
            read_timeout=self._read_timeout,
            request_timeout=self._request_timeout,
            max_response_bytes=self._max_response_bytes,
        )

    def _headers(self, trace_id: str | None, token: str) -> dict[str, str]:
        headers = {
            SERVICE_TOKEN_HEADER: token,
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        if trace_id is not None and is_trace_id(trace_id):
            headers[TRACEPARENT_HEADER] = format_traceparent(trace_id, new_span_id())
        return headers

    def _observe(
        self, definition: ExportDefinition, started: float, seconds: float | None, *, ok: bool
    ) -> None:
        if self._observer is not None:
            self._observer.observe_request(
                definition.provider_service,
                definition.export_type,
                trio.current_time() - started if seconds is None else seconds,
                ok,
            )

    async def _fetch_in_thread(self, spec: FetchSpec) -> bytes:
        """Send ``spec`` from a trio worker thread within its total time limit.

        Raises:
            ProviderUnavailableError, ProviderContractError, LimitExceededError: as
                :func:`actors.pipeline.provider_http.fetch_body`, whose total-limit
                message this gives when ``spec.request_timeout`` passes.
        """
        if self._pool is None:
            self._pool = new_pool()
        with trio.move_on_after(spec.request_timeout):
            # abandon_on_cancel: a cancel (the limit, Ctrl-C) returns at once; the thread
            # finishes on its own and its answer is dropped (fetch_body_in_thread).
            return await trio.to_thread.run_sync(
                fetch_body_in_thread, spec, self._pool, abandon_on_cancel=True
            )
        raise total_limit_exceeded(spec.service, spec.request_timeout)


def _encode(request: BatchRequest) -> bytes:
    """The request body as UTF-8 JSON.

    Raises:
        ValueError: a tenant field is missing (a programming error).
        PermanentExportError: the parameters hold something JSON cannot represent (an
            object, NaN, Infinity); retrying cannot help (§9.1).
    """
    body = request.to_json()
    try:
        text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode("utf-8")
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        # The stored parameters can never be sent: retrying cannot help (§9.1 permanent).
        raise PermanentExportError(
            f"parameters are not JSON-serialisable: {quote_outside(str(exc))}"
        ) from None
