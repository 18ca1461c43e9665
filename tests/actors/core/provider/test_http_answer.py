"""Table tests of a batch answer at the HTTP level (actors/core/provider/http_answer.py):
what each status means, the Provider's words quoted from a small refusal, and the errors
of an answer over the size or time limit."""

from __future__ import annotations

import pytest

from actors.core.errors import ProviderContractError, ProviderUnavailableError
from actors.core.provider.http_answer import (
    ERROR_DETAIL_BYTES,
    body_too_large,
    error_detail,
    needs_error_detail,
    status_error,
    total_limit_exceeded,
)


@pytest.mark.parametrize(
    ("status", "detail", "kind", "message"),
    [
        (200, "", None, None),
        (503, "ignored", ProviderUnavailableError, "provider svc answered HTTP 503"),
        (429, "", ProviderUnavailableError, "provider svc answered HTTP 429"),
        (
            404,
            "code 404: no route",
            ProviderContractError,
            "provider svc answered HTTP 404: code 404: no route",
        ),
        (302, "", ProviderContractError, "provider svc answered HTTP 302"),
    ],
)
def test_status_error_classifies_each_status(
    status: int, detail: str, kind: type | None, message: str | None
) -> None:
    """One answer per status, for every request the service sends a Provider
    (actors/pipeline/provider/http.py, from the worker or from provider-check's thread)."""
    error = status_error("svc", status, detail)
    if kind is None:
        assert error is None and not needs_error_detail(status)
    else:
        assert type(error) is kind and str(error) == message
        assert needs_error_detail(status) == (kind is ProviderContractError)


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (b'{"code": "401", "message": "bad token"}', "code 401: bad token"),
        (b'{"code": "401"}', ""),
        (b"<html>no</html>", ""),
        (b"[" * 100_000, ""),  # too deep to decode
        (b'{"message": "' + b"x" * ERROR_DETAIL_BYTES + b'"}', ""),  # over the read limit
    ],
)
def test_error_detail_quotes_a_small_envelope_only(body: bytes, detail: str) -> None:
    assert error_detail(body) == detail


@pytest.mark.parametrize(
    ("seconds", "shown"), [(60.0, "60 s"), (0.5, "0.5 s"), (1, "1 s"), (90.25, "90.25 s")]
)
def test_total_limit_exceeded_is_transient_and_names_its_setting(
    seconds: float, shown: str
) -> None:
    error = total_limit_exceeded("svc", seconds)
    assert type(error) is ProviderUnavailableError
    assert str(error) == (
        f"provider svc did not finish answering a batch request within the total limit of "
        f"{shown} (FILE_EXPORT_PROVIDER_REQUEST_TIMEOUT_SECONDS)"
    )


def test_body_too_large_names_the_limit_in_words_and_bytes() -> None:
    error = body_too_large(4 * 1024 * 1024, "Content-Length 9999999")
    assert str(error) == (
        "provider response body exceeds the limit of 4 MB (4194304 bytes; Content-Length 9999999)"
    )
