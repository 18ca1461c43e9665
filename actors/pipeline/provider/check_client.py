"""The provider check's client: one §10.1 batch request sent from a thread of this process.

``export-center provider-check`` (:mod:`actors.cli.provider`) asks a Provider for batches
the way an export run would, then sends requests it tampers with (a wrong token, a changed
body) to see them refused. It has no export worker, so :class:`ProviderCheckClient` sends
each request from a trio worker thread through urllib3's pool
(:func:`actors.pipeline.provider.http.fetch_body_in_thread`), under the same total time
limit, and decodes the answer here. The request is built exactly as an export run's
(:class:`~actors.pipeline.provider.request_builder.ProviderRequests`), and every error is the same
§9.1 class with the same message (:mod:`actors.pipeline.provider.client` lists them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, Unpack

import trio
import urllib3

from actors.core.batch import ProviderBatch
from actors.core.definitions import ExportDefinition
from actors.core.provider.http_answer import total_limit_exceeded
from actors.core.provider.request import BatchRequest
from actors.pipeline.provider.decode import parse_batch_response
from actors.pipeline.provider.fetch import FetchSpec
from actors.pipeline.provider.http import fetch_body_in_thread, new_pool
from actors.pipeline.provider.request_builder import (
    EndpointSource,
    ProviderRequests,
    RequestOptions,
    encode_request,
)

__all__ = ["BatchDecoder", "ProviderCheckClient", "Tamper"]

#: Rewrites a request before it is sent (``export-center provider-check``'s probes).
Tamper = Callable[[FetchSpec], FetchSpec]


class BatchDecoder(Protocol):
    """Decodes and checks one raw HTTP 200 body (see :meth:`ProviderCheckClient.fetch_batch`)."""

    def __call__(self, raw: bytes, *, service: str, limit: int, max_columns: int) -> ProviderBatch:
        """Return the validated batch.

        Raises:
            ProviderContractError, LimitExceededError: as :func:`parse_batch_response`.
        """
        ...


class ProviderCheckClient(ProviderRequests):
    """Sends §10.1 batch requests from a thread and decodes their answers here.

    For a short-lived command: at the total time limit a request's thread is abandoned
    (its answer dropped), which a service could not afford.

    Args:
        base_urls, service_token, options (``connect_timeout``, ``read_timeout``,
            ``request_timeout``, ``max_response_bytes``, ``max_columns``): as
            :class:`ProviderRequests`.
        pool: the urllib3 connections; ``None``: a pool made at the first request
            (:func:`actors.pipeline.provider.http.new_pool`). Tests pass a stand-in whose
            ``request`` raises urllib3's errors. :meth:`aclose` closes only a pool made here.

    Raises:
        ValueError: as :class:`ProviderRequests`.
    """

    def __init__(
        self,
        base_urls: Mapping[str, str] | EndpointSource,
        service_token: str,
        *,
        pool: urllib3.PoolManager | None = None,
        **options: Unpack[RequestOptions],
    ) -> None:
        super().__init__(base_urls, service_token, **options)
        self._owns_pool = pool is None
        self._pool = pool

    async def aclose(self) -> None:
        """Close the connections, if this client made their pool. A request still running
        in an abandoned thread keeps its own."""
        if self._owns_pool and self._pool is not None:
            self._pool.clear()

    async def fetch_batch(
        self,
        definition: ExportDefinition,
        request: BatchRequest,
        *,
        decode: BatchDecoder = parse_batch_response,
        trace_id: str | None = None,
        tamper: Tamper | None = None,
    ) -> ProviderBatch:
        """POST one §10.1 request and return the validated batch, rows included.

        The whole call is held to ``request_timeout``: at the limit the thread is
        abandoned. The body is streamed and counted while it arrives, as in an export run.

        Args:
            definition: the registry entry; ``provider_service`` picks the base URL and
                ``provider_path`` is appended to it.
            request: the request body.
            decode: decodes and checks the raw body, called as ``decode(raw, service=...,
                limit=..., max_columns=...)``; the provider check passes one that notes
                how far the request got. Default :func:`parse_batch_response`, which checks
                rows against ``request.limit``.
            trace_id: a trace id; when valid, the request carries ``traceparent``.
            tamper: rewrites the request built here before it is sent (the probes:
                :meth:`FetchSpec.with_body`, :meth:`FetchSpec.with_header`); ``None``: sent
                as built.

        Returns:
            The batch; ``columns`` is ``None`` when the Provider omitted them.

        Raises:
            ValueError, ProviderUnavailableError, ProviderContractError,
            LimitExceededError: as the export run's
                :meth:`actors.pipeline.provider.client.ProviderClient.fetch_batch`.
        """
        body = encode_request(request)  # raises ValueError before any IO
        spec = self.fetch_spec(definition, body, trace_id)
        if tamper is not None:
            spec = tamper(spec)
        raw = await self._fetch_in_thread(spec)
        return decode(
            raw,
            service=definition.provider_service,
            limit=request.limit,
            max_columns=self.max_columns,
        )

    async def _fetch_in_thread(self, spec: FetchSpec) -> bytes:
        """Send ``spec`` from a trio worker thread within its total time limit.

        Raises:
            ProviderUnavailableError, ProviderContractError, LimitExceededError: as
                :func:`actors.pipeline.provider.http.fetch_body`, whose total-limit
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
