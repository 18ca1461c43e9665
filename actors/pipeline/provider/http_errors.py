"""A Provider request's transport errors as export errors: what urllib3 and the socket
raise, translated at the boundary (as httpx translates httpcore's), so no caller sees a
urllib3 exception. The table of outcomes is in :mod:`actors.pipeline.provider.http`.

Imported by the export worker process: no trio, no httpx.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from http.client import HTTPException
from typing import Protocol

from urllib3.exceptions import (
    ConnectTimeoutError,
    DecodeError,
    HTTPError,
    LocationParseError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)

from actors.core.errors import ProviderContractError, ProviderUnavailableError
from actors.core.provider.http_answer import total_limit_exceeded
from actors.core.text import quote_outside
from actors.pipeline.provider.fetch import FetchSpec


class _Closeable(Protocol):
    def close(self) -> None: ...


__all__ = ["TotalLimitReached", "translated"]


class TotalLimitReached(BaseException):
    """Raised by the SIGALRM handler of a request's total time limit; a BaseException so
    no library swallows it."""


@contextlib.contextmanager
def translated(spec: FetchSpec, connection: _Closeable | None) -> Iterator[None]:
    """urllib3's and the socket's errors as the module docstring's export errors; the
    connection, when given, is closed on any error (a half-done exchange is not reused)."""
    service = spec.service
    try:
        yield
    except BaseException:
        if connection is not None:
            connection.close()
        try:
            raise
        except TotalLimitReached:
            # The connection is closed; nothing of the answer is kept.
            raise total_limit_exceeded(service, spec.request_timeout) from None
        except NewConnectionError as exc:  # refused, unresolvable: urllib3 files it under timeouts
            raise ProviderUnavailableError(
                f"provider {service} unreachable: ConnectError: {quote_outside(os_error_text(exc))}"
            ) from exc
        except ConnectTimeoutError as exc:
            raise ProviderUnavailableError(
                f"provider {service} connect timeout ({spec.connect_timeout:g} s)"
            ) from exc
        except ReadTimeoutError as exc:
            raise ProviderUnavailableError(
                f"provider {service} read timeout ({spec.read_timeout:g} s)"
            ) from exc
        except DecodeError as exc:
            # The bytes arrived but their Content-Encoding is broken: a bad answer, not a
            # broken link.
            raise ProviderContractError(
                f"provider {service} sent an undecodable body: {quote_outside(str(exc))}"
            ) from exc
        except (LocationParseError, ValueError) as exc:  # the URL itself is refused
            raise ProviderUnavailableError(
                f"provider {service} has an invalid base URL: {quote_outside(str(exc))}"
            ) from exc
        except (HTTPError, HTTPException, OSError) as exc:
            # HTTPException: a status line or header http.client cannot read (a peer that
            # is not speaking HTTP), which urllib3's pool wraps in ProtocolError.
            cause = transport_cause(exc)
            raise ProviderUnavailableError(
                f"provider {service} unreachable: {type(cause).__name__}: "
                f"{quote_outside(str(cause))}"
            ) from exc


def transport_cause(exc: BaseException) -> BaseException:
    """The innermost useful error of urllib3's wrappers (a reset, a broken pipe)."""
    reason = getattr(exc, "reason", None)
    if isinstance(reason, BaseException):
        return reason
    if (
        isinstance(exc, ProtocolError)
        and len(exc.args) > 1
        and isinstance(exc.args[1], BaseException)
    ):
        return exc.args[1]
    return exc


def os_error_text(exc: NewConnectionError) -> str:
    """The socket error under urllib3's wrapper (``[Errno 111] Connection refused``), the
    text failure messages have always quoted; urllib3's own text also names the host."""
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, OSError):
        return str(cause)
    return str(exc).rpartition(": ")[2] or str(exc)
