"""How one §10.1 batch request is built: address, token, headers, body, timeouts, limits.

Both Provider clients build their requests here, so an export run and ``export-center
provider-check`` send the same request for the same task:

- :class:`actors.pipeline.provider.client.ProviderClient` (an export run): its worker
  process sends the request and decodes the answer;
- :class:`actors.pipeline.provider.check_client.ProviderCheckClient` (the provider check):
  a thread of this process sends it, tampered with where the check probes.

:class:`ProviderRequests` holds what every request of a client shares;
:meth:`ProviderRequests.fetch_spec` is one request as :mod:`actors.pipeline.provider.http`
sends it.
"""

from __future__ import annotations

import base64
import json
import os
import urllib.parse
from collections.abc import Mapping
from typing import Protocol, TypedDict

from actors.core.definitions import ExportDefinition
from actors.core.errors import PermanentExportError, ProviderUnavailableError
from actors.core.provider.contract import MAX_COLUMNS, MAX_RESPONSE_BYTES, SERVICE_TOKEN_HEADER
from actors.core.provider.provider_map import ProviderEndpoint
from actors.core.provider.request import BatchRequest
from actors.core.text import quote_outside
from actors.core.tracing import TRACEPARENT_HEADER, format_traceparent, is_trace_id, new_span_id
from actors.pipeline.provider.fetch import FetchSpec

__all__ = [
    "DEFAULT_REQUEST_TIMEOUT",
    "EndpointSource",
    "ProviderRequests",
    "RequestOptions",
    "encode_request",
]

#: Default total time for one batch request, body included, in seconds
#: (``FILE_EXPORT_PROVIDER_REQUEST_TIMEOUT_SECONDS``).
DEFAULT_REQUEST_TIMEOUT = 60.0


class EndpointSource(Protocol):
    """Where each Provider service is reached, read when each request is built.

    :class:`actors.plumbing.provider_map_source.ProviderMapSource` is the service's one
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


class RequestOptions(TypedDict, total=False):
    """The timeouts and limits of :class:`ProviderRequests`, for the clients built on it."""

    connect_timeout: float
    read_timeout: float
    request_timeout: float
    max_response_bytes: int
    max_columns: int


class _StaticEndpoints:
    """A plain mapping service -> base URL, read at every call; no own tokens."""

    def __init__(self, base_urls: Mapping[str, str]) -> None:
        self._base_urls = base_urls

    def endpoint(self, service: str) -> ProviderEndpoint | None:
        url = self._base_urls.get(service)
        return None if url is None else ProviderEndpoint(url)

    async def refresh(self) -> None:
        return None


class ProviderRequests:
    """Builds the batch requests of one client: where each service is reached, the token,
    and the timeouts and limits every request carries.

    Args:
        base_urls: where each ``provider-service`` is reached: a mapping name -> base URL
            such as ``http://127.0.0.1:8080``, or an :class:`EndpointSource` (addresses
            and per-service tokens that reload). Read when each request is built, so the
            caller may pass a live mapping that it fills once the server has bound its
            port, and a changed address applies to the next request (§10.4:
            provider-service is taken at execution time).
        service_token: value of ``X-Internal-Service-Token`` (§12) for every service
            without a token of its own (``INTERNAL_SERVICE_TOKEN``).
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

    Raises:
        ValueError: a timeout or limit is not positive, or the service token is empty.
    """

    def __init__(
        self,
        base_urls: Mapping[str, str] | EndpointSource,
        service_token: str,
        *,
        connect_timeout: float = 3.0,
        read_timeout: float = 15.0,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        max_columns: int = MAX_COLUMNS,
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

    async def refresh_endpoints(self) -> None:
        """Bring the Provider addresses up to date with their source (a changed map file
        is read now); an export run calls it before its first request. Never raises: a
        bad source keeps the addresses in force (:class:`EndpointSource`)."""
        await self._endpoints.refresh()

    @property
    def max_columns(self) -> int:
        """Largest accepted column count of an answer."""
        return self._max_columns

    def fetch_spec(
        self, definition: ExportDefinition, body: bytes, trace_id: str | None
    ) -> FetchSpec:
        """The HTTP request of one batch, for :mod:`actors.pipeline.provider.http` to send
        (in an export worker, or in a thread of this process for the provider check: see
        the module docstring).

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
            headers[TRACEPARENT_HEADER] = format_traceparent(trace_id, new_span_id(os.urandom))
        return headers


def encode_request(request: BatchRequest) -> bytes:
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
