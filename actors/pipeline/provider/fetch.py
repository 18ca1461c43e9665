"""One batch fetch: what the parent asks the worker to send (:class:`FetchSpec`) and
what it is told back (:class:`FetchedBatch`). Values only: the worker process imports it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from actors.core.batch import BatchSummary

__all__ = ["FetchSpec", "FetchedBatch"]


@dataclass(frozen=True, slots=True)
class FetchSpec:
    """Everything one batch request needs; built by the parent, sent to the worker.

    Attributes:
        service: ``provider-service`` name, for messages.
        url: the full URL (base URL + ``provider-path``); may carry credentials, which
            never appear in a message.
        body: the JSON request body, UTF-8.
        headers: request headers (service token, content type, ``traceparent``).
        connect_timeout: seconds to connect, and to send the request (urllib3 sends under
            the connect timeout).
        read_timeout: seconds for the answer's head, and between its bytes on the wire.
        request_timeout: seconds for the whole request, from sending to the last byte.
        max_response_bytes: largest accepted body, bytes, counted after decompression.
    """

    service: str
    url: str
    body: bytes
    headers: tuple[tuple[str, str], ...]
    connect_timeout: float
    read_timeout: float
    request_timeout: float
    max_response_bytes: int

    def with_body(self, body: bytes) -> FetchSpec:
        """This request with another body, sent as it is (``export-center provider-check``
        sends bodies a Provider must refuse: not JSON, a tenant field missing …).

        Args:
            body: the bytes to send; ``Content-Length`` follows them.
        """
        return dataclasses.replace(self, body=body)

    def with_header(self, name: str, value: str) -> FetchSpec:
        """This request with header ``name`` set to ``value``: a header of that name in any
        case is dropped first, so the request never carries both (provider-check's wrong
        service token).

        Args:
            name: the header name, as sent.
            value: its value.
        """
        folded = name.lower()
        kept = tuple((key, old) for key, old in self.headers if key.lower() != folded)
        return dataclasses.replace(self, headers=(*kept, (name, value)))


@dataclass(frozen=True, slots=True)
class FetchedBatch:
    """One batch as the worker fetched it: what the parent's rules, metrics and log need.

    Attributes:
        summary: the validated batch without its rows (the worker keeps them).
        size: body bytes received.
        seconds: from sending the request to the last byte of the body (the worker's clock).
    """

    summary: BatchSummary
    size: int
    seconds: float
