"""Hostile Providers, one request at a time (§9.1, §10.1, §12): bounded requests, one-line
messages, no stray Python errors, whatever the answer. Each request is sent the way
``export-center provider-check`` sends it (``test_check_client.py`` says how); an
export run's worker reads answers with the same code (``test_http.py``). The
hostile runs across batches (cycles, announced totals) are the cursor loop's:
``test_cursor_loop.py``."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio
from urllib3.exceptions import ProtocolError

from actors.core.errors import ProviderContractError, ProviderUnavailableError
from tests.actors.pipeline.provider.helpers import (
    BASE_URL,
    DEFINITION,
    SERVICE,
    FakePool,
    answering,
    batch_data,
    envelope,
    fetch,
    fetch_through,
)


async def test_large_4xx_body_is_not_quoted() -> None:
    """Only a small error body is read for its message; a large one is cut off unread."""
    handler = answering(envelope(None, code="400", message="x" * 20_000), status=400)
    with pytest.raises(
        ProviderContractError, match=r"^provider customer-service answered HTTP 400$"
    ):
        await fetch(handler)


async def test_a_body_dripping_bytes_hits_the_total_request_limit() -> None:
    """Issue 8 item 3(b): a byte every 50 ms never trips the read timeout; the total limit
    per request does, at the limit, and the error is the transient Provider one. Real
    time: the request runs in a thread, which trio's mock clock would not wait for."""
    sent = 0

    async def drip() -> AsyncIterator[bytes]:
        nonlocal sent
        while True:
            sent += 1
            yield b" "
            await trio.sleep(0.05)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=drip())

    started = time.monotonic()
    with pytest.raises(ProviderUnavailableError) as info:
        await fetch(handler, read_timeout=0.3, request_timeout=1)
    elapsed = time.monotonic() - started
    assert str(info.value) == (
        f"provider {SERVICE} did not finish answering a batch request within the total "
        "limit of 1 s (FILE_EXPORT_PROVIDER_REQUEST_TIMEOUT_SECONDS)"
    )
    assert 1 <= elapsed < 3
    assert sent >= 5  # still dripping when the limit passed: no read timeout ended it


async def test_provider_message_with_crlf_cannot_forge_a_line() -> None:
    """Issue 8 item 3(d), reported input: the Provider's message ends up escaped."""
    forged = "boom\n2026-12-01 00:00:00,000 CRITICAL actors.runtime: FORGED"
    for status in (200, 400):
        handler = answering(envelope(None, code="500", message=forged), status=status)
        with pytest.raises(ProviderContractError) as info:
            await fetch(handler)
        assert "\n" not in str(info.value)
        assert "boom\\n2026-12-01 00:00:00,000 CRITICAL" in str(info.value)


async def test_transport_error_quoting_a_url_never_shows_its_credentials() -> None:
    """Issue 8 item 4: credentials inside a Provider base URL stay out of messages; they
    travel as Basic credentials, never in the URL the HTTP client is given."""
    base_url = "http://user:s3cret@provider.test"
    pool = FakePool(ProtocolError(f"cannot reach {base_url}{DEFINITION.provider_path}"))
    with pytest.raises(ProviderUnavailableError) as info:
        await fetch_through(pool, base_url)
    assert "s3cret" not in str(info.value)
    assert "http://***@provider.test" in str(info.value)
    (call,) = pool.calls
    assert call["url"] == BASE_URL + DEFINITION.provider_path
    assert call["headers"]["Authorization"] == httpx.BasicAuth("user", "s3cret")._auth_header


def raw_answer(literal: str, **overrides: Any) -> bytes:
    """An answer whose ``"@@"`` placeholder is replaced by a raw JSON ``literal``."""
    return json.dumps(envelope(batch_data(**overrides))).replace('"@@"', literal).encode()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (raw_answer('"' + "1" * 5000 + '"', totalRows="@@"), "totalRows has 5000 digits"),
        (raw_answer("1" * 5000, totalRows="@@"), "totalRows has 5000 digits"),
        (raw_answer(str(10**30), totalRows="@@"), "larger than the task can hold"),
        (raw_answer(str(2**63), totalRows="@@"), "larger than the task can hold"),
        (raw_answer('"\\ud800"', nextCursor="@@", hasMore=True), "nextCursor is not valid"),
        (raw_answer('"\\udfff"', snapshotToken="@@"), "snapshotToken is not valid"),
        (raw_answer("[" * 100_000 + "]" * 100_000, rows="@@"), "non-JSON"),
    ],
    ids=[
        "total-5000-digit-string",
        "total-5000-digit-number",
        "total-over-bigint",
        "total-2-pow-63",
        "cursor-lone-surrogate",
        "token-lone-surrogate",
        "nesting-100000-deep",
    ],
)
async def test_unrepresentable_answers_are_permanent_contract_errors(
    body: bytes, message: str
) -> None:
    """Issue 13 item 6: a totalRows beyond BIGINT, an integer over Python's 4,300-digit
    limit, a cursor that cannot be sent back: a permanent error naming the field, never a
    ValueError or a database error later on (both were retried as transient)."""
    with pytest.raises(ProviderContractError, match=message):
        await fetch(lambda request: httpx.Response(200, content=body))


async def test_total_rows_at_the_bigint_limit_is_accepted() -> None:
    batch = await fetch(answering(envelope(batch_data(totalRows=str(2**63 - 1)))))
    assert batch.total_rows == 2**63 - 1


async def test_integer_literal_over_python_digit_limit_stays_as_its_digits() -> None:
    """A 5,000-digit number in a row is not a decode failure: the cell keeps the digits."""
    body = raw_answer("9" * 5000, rows=[{"id": "@@", "name": "big"}])
    batch = await fetch(lambda request: httpx.Response(200, content=body))
    assert batch.rows == [{"id": "9" * 5000, "name": "big"}]
