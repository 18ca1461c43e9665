"""The export run's Provider client: one §10.1 batch call, made and checked by the run's worker.

Every request to a Provider is sent by one HTTP client, :mod:`actors.pipeline.provider.http`
(urllib3). An export run's requests are sent by its worker process: this process builds
each request (:meth:`ProviderClient.fetch_spec`, shared with the provider check through
:class:`~actors.pipeline.provider.request_builder.ProviderRequests`), and records metrics and the
DEBUG batch line from the worker's figures; it spends no CPU on HTTP. ``export-center
provider-check`` has a client of its own that sends from a thread
(:mod:`actors.pipeline.provider.check_client`), with the same rules and messages. Every
transport error and every answer outside the contract becomes one of the §9.1 classes of
:mod:`actors.core.errors`, so the consumer slot decides a task's fate from the class
alone::

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
:func:`actors.pipeline.provider.cursor_loop.iterate_batches` drives the cursor, echoes the snapshot
token and checks the cross-batch rules of §10.1 and §10.2
(:mod:`actors.core.provider.batch_rules`). What the contract is — request and answer
types, limits, parsing — is :mod:`actors.core.provider.contract` and
:mod:`actors.core.provider.request` (shared with the demo Provider).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Protocol, Unpack

import trio

from actors.core.batch import BatchSummary
from actors.core.definitions import ExportDefinition
from actors.core.errors import ExportError, ExportWorkerDiedError
from actors.core.provider.request import BatchRequest
from actors.pipeline.provider.fetch import FetchedBatch, FetchSpec
from actors.pipeline.provider.request_builder import (
    DEFAULT_REQUEST_TIMEOUT,
    EndpointSource,
    ProviderRequests,
    RequestOptions,
    encode_request,
)

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_REQUEST_TIMEOUT",
    "BatchFetcher",
    "EndpointSource",
    "ProviderClient",
    "ProviderObserver",
]


class BatchFetcher(Protocol):
    """Makes one batch request elsewhere (an export worker process), decodes and checks it.

    :class:`actors.pipeline.worker.handle.ExportWorker` is the one implementation: an
    export run's HTTP and JSON decoding happen in its worker process.
    """

    #: The duration of the last request, when it failed after being sent; else ``None``.
    last_request_seconds: float | None

    async def fetch(self, spec: FetchSpec, *, limit: int, max_columns: int) -> FetchedBatch:
        """Send ``spec``, decode and check the answer; return its summary, size, duration.

        Raises:
            ProviderUnavailableError, ProviderContractError, LimitExceededError: as
                :func:`actors.pipeline.provider.http.fetch_body` and
                :func:`parse_batch_response`.
            ExportWorkerDiedError: the process doing it died.
        """
        ...


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


class ProviderClient(ProviderRequests):
    """Calls §10.1 Provider endpoints for export runs, through each run's worker process.

    The client is safe to share between consumer slots: each call is one independent
    request, sent by the worker of the run that makes it; the client keeps no connection.

    Args:
        base_urls, service_token, options (``connect_timeout``, ``read_timeout``,
            ``request_timeout``, ``max_response_bytes``, ``max_columns``): as
            :class:`ProviderRequests`.
        observer: told about every request that was sent, ok or not.

    Raises:
        ValueError: as :class:`ProviderRequests`.
    """

    def __init__(
        self,
        base_urls: Mapping[str, str] | EndpointSource,
        service_token: str,
        *,
        observer: ProviderObserver | None = None,
        **options: Unpack[RequestOptions],
    ) -> None:
        super().__init__(base_urls, service_token, **options)
        self._observer = observer

    async def fetch_batch(
        self,
        definition: ExportDefinition,
        request: BatchRequest,
        *,
        fetch: BatchFetcher,
        trace_id: str | None = None,
    ) -> BatchSummary:
        """POST one §10.1 request through the run's worker and return the checked batch's
        summary (the worker keeps its rows).

        The worker process makes the request (:func:`actors.pipeline.provider.http.fetch_body`)
        and decodes and checks the answer; this process builds the request and records the
        metrics and the DEBUG line. The body is streamed and counted while it arrives;
        reading stops as soon as it passes ``max_response_bytes``, so an oversized answer
        never sits in memory whole. Rows are checked against ``request.limit``. The rules
        across batches (schemaHash, snapshot token, cursor progress) belong to
        :func:`actors.pipeline.provider.cursor_loop.iterate_batches`.

        Args:
            definition: the registry entry; ``provider_service`` picks the base URL and
                ``provider_path`` is appended to it.
            request: the request body.
            fetch: the run's worker (:class:`actors.pipeline.worker.handle.ExportWorker`).
            trace_id: the export's trace id (``actors/core/tracing.py``); when valid, the
                request carries ``traceparent: 00-<trace_id>-<new span id>-01``.

        Returns:
            The batch's :class:`BatchSummary`; ``columns`` is ``None`` when the Provider
            omitted them.

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
        body = encode_request(request)  # raises ValueError before any IO
        service = definition.provider_service
        started = trio.current_time()
        seconds: float | None = None
        sent = True  # False: the error is not the Provider's (an earlier write failed)
        try:
            spec = self.fetch_spec(definition, body, trace_id)
            try:
                fetched = await fetch.fetch(spec, limit=request.limit, max_columns=self.max_columns)
            except ExportError:
                seconds = fetch.last_request_seconds
                sent = seconds is not None
                raise
        except ExportWorkerDiedError:
            raise  # our process failed, not the Provider
        except ExportError:
            if sent:
                self._observe(definition, started, seconds, ok=False)
            raise
        # Cancellation and programming errors are not observed: they say nothing about
        # the Provider's health.
        batch = fetched.summary
        self._observe(definition, started, fetched.seconds, ok=True)
        ms = round(fetched.seconds * 1000, 1)
        log.debug(
            "provider batch",
            extra={"service": service, "rows": batch.row_count, "bytes": fetched.size, "ms": ms},
        )
        return batch

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
