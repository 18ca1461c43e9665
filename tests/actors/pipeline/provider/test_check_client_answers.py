"""One Provider answer (§10.1, §11, §12): its size, limited while it is read (4 MB,
declared or counted, after decompression), and its form (the envelope, the batch's fields,
the column and snapshot-token limits).

Each answer comes the way ``export-center provider-check`` gets it, as in
``test_check_client.py`` (the request, its timeouts and how a failure to get an answer
reads): a real HTTP server on port 0 (``tests/provider_server.py``) or, for what a real
server cannot do on demand, a stand-in pool (:class:`FakePool`).
"""

from __future__ import annotations

import gzip
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio

from actors.core.errors import LimitExceededError, ProviderContractError
from tests.actors.pipeline.provider.helpers import (
    SERVICE,
    FakePool,
    FakeResponse,
    answering,
    batch_data,
    envelope,
    fetch,
    fetch_through,
)

# --- response size (§11, §12: ≤ 4 MB, checked while reading) ------------------------------


async def test_oversize_content_length_fails_before_reading_body() -> None:
    declared = {"Content-Length": str(4 * 1024 * 1024 + 1)}
    response = FakeResponse(200, [b"{}"], declared)
    with pytest.raises(LimitExceededError, match="4 MB") as info:
        await fetch_through(FakePool(response))
    assert "Content-Length 4194305" in str(info.value)
    assert response.pulled == 0
    assert response.closed  # never handed back to the pool with its body unread


async def test_oversize_content_length_from_a_server_that_never_sends_the_body() -> None:
    """Over real HTTP: the head alone fails the request; reading the body would stall."""

    async def never() -> AsyncIterator[bytes]:
        await trio.sleep_forever()
        yield b""

    def handler(request: httpx.Request) -> httpx.Response:
        headers = {"Content-Length": str(4 * 1024 * 1024 + 1)}
        return httpx.Response(200, headers=headers, content=never())

    with pytest.raises(LimitExceededError, match="Content-Length 4194305"):
        await fetch(handler)


async def test_oversize_streamed_body_stops_reading_at_the_limit() -> None:
    """Without Content-Length the chunks are counted and reading stops past 4 MB."""
    chunk = b" " * 65_536
    response = FakeResponse(200, itertools.repeat(chunk))
    with pytest.raises(LimitExceededError, match="4 MB"):
        await fetch_through(FakePool(response))
    assert response.pulled == 4 * 1024 * 1024 // len(chunk) + 1
    assert response.closed


async def test_an_endless_body_over_http_is_cut_at_the_limit() -> None:
    chunk = b" " * 65_536

    async def endless() -> AsyncIterator[bytes]:
        while True:
            yield chunk

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=endless())

    with pytest.raises(LimitExceededError) as info:
        await fetch(handler)
    assert str(info.value) == (
        "provider response body exceeds the limit of 4 MB (4194304 bytes; "
        "more than 4194304 bytes read)"
    )


async def test_body_at_the_limit_is_accepted() -> None:
    payload = json.dumps(envelope(batch_data())).encode()
    batch = await fetch(
        lambda request: httpx.Response(200, content=payload), max_response_bytes=len(payload)
    )
    assert batch.rows == [{"id": 1, "name": "a"}]

    async def streamed() -> AsyncIterator[bytes]:  # no Content-Length: counted
        yield payload[:10]
        yield payload[10:]

    batch = await fetch(
        lambda request: httpx.Response(200, content=streamed()), max_response_bytes=len(payload)
    )
    assert batch.rows == [{"id": 1, "name": "a"}]


async def test_a_gzip_body_is_decoded_and_a_broken_one_is_a_contract_error() -> None:
    payload = json.dumps(envelope(batch_data())).encode()
    gzipped = {"Content-Encoding": "gzip"}
    batch = await fetch(
        lambda request: httpx.Response(200, content=gzip.compress(payload), headers=gzipped)
    )
    assert batch.rows == [{"id": 1, "name": "a"}]

    async def broken() -> AsyncIterator[bytes]:  # streamed: httpx would decode bytes
        yield b"not gzip"

    with pytest.raises(ProviderContractError) as info:
        await fetch(lambda request: httpx.Response(200, content=broken(), headers=gzipped))
    assert str(info.value).startswith(f"provider {SERVICE} sent an undecodable body: ")


# --- malformed answers (§10.1) -------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [b"<html>oops</html>", b"[1, 2]", b'{"code": "200"}', b'{"message": "no code"}', b"\xff\xfe"],
    ids=["html", "array", "no-data", "no-code", "bad-bytes"],
)
async def test_non_json_or_non_envelope_is_provider_contract_error(content: bytes) -> None:
    with pytest.raises(ProviderContractError):
        await fetch(lambda request: httpx.Response(200, content=content))


@pytest.mark.parametrize(
    "overrides",
    [
        {"schemaVersion": 2},
        {"schemaVersion": "1"},
        {"schemaHash": None},
        {"schemaHash": ""},
        {"snapshotToken": 42},
        {"rows": None},
        {"rows": {"id": 1}},
        {"rows": [[1, "a"]]},
        {"hasMore": "false"},
        {"hasMore": None},
        {"nextCursor": 2},
        {"totalRows": -1},
        {"totalRows": "many"},
        {"columns": "id,name"},
        {"columns": [{"key": "id", "title": "ID", "type": "UUID"}]},
        {"columns": [{"key": "id", "title": "ID", "type": "INTEGER", "width": 0}]},
        {"columns": [{"key": "id", "title": "ID", "type": "INTEGER", "width": 256}]},
        {"columns": [{"key": "id", "title": "ID", "type": "INTEGER", "width": "9"}]},
        {"columns": [{"key": "", "title": "ID", "type": "INTEGER"}]},
        {"columns": [{"key": "id", "type": "INTEGER"}]},
        {"columns": [{"key": "id", "title": "a", "type": "STRING"}] * 2},
        {"rows": [{"id": 1}, {"id": 2}, {"id": 3}]},
    ],
    ids=[
        "schema-version-2",
        "schema-version-string",
        "schema-hash-missing",
        "schema-hash-empty",
        "token-not-string",
        "rows-missing",
        "rows-object",
        "rows-of-arrays",
        "has-more-string",
        "has-more-missing",
        "cursor-number",
        "total-negative",
        "total-word",
        "columns-string",
        "column-type-unknown",
        "column-width-0",
        "column-width-256",
        "column-width-string",
        "column-key-empty",
        "column-title-missing",
        "column-key-duplicated",
        "rows-over-limit",
    ],
)
async def test_malformed_data_is_provider_contract_error(overrides: dict[str, Any]) -> None:
    with pytest.raises(ProviderContractError):
        await fetch(answering(envelope(batch_data(**overrides))))


async def test_more_than_100_columns_is_limit_exceeded() -> None:
    columns = [{"key": f"c{i}", "title": f"C{i}", "type": "STRING"} for i in range(101)]
    with pytest.raises(LimitExceededError, match="101 columns; the limit is 100"):
        await fetch(answering(envelope(batch_data(columns=columns))))


async def test_exactly_100_columns_is_accepted() -> None:
    columns = [{"key": f"c{i}", "title": f"C{i}", "type": "STRING"} for i in range(100)]
    batch = await fetch(answering(envelope(batch_data(columns=columns))))
    assert batch.columns is not None and len(batch.columns) == 100


async def test_snapshot_token_over_512_chars_is_provider_contract_error() -> None:
    """§10.2: the File Service bounds the opaque token to 512 characters."""
    await fetch(answering(envelope(batch_data(snapshotToken="t" * 512))))
    with pytest.raises(ProviderContractError, match="513 characters"):
        await fetch(answering(envelope(batch_data(snapshotToken="t" * 513))))


async def test_total_rows_as_digit_string_is_accepted() -> None:
    batch = await fetch(answering(envelope(batch_data(totalRows="2500"))))
    assert batch.total_rows == 2500
