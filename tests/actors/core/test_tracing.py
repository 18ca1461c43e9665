"""Trace ids, traceparent headers, request ids and what of a request is logged
(actors.core.tracing). Issue 12 item 1: "traceId is created at the API … sent to the
Provider (traceparent-style header)"; "an access log … that never contains tokens";
"parameters masked"."""

from __future__ import annotations

import os
import uuid

import pytest

from actors.core.tracing import (
    MASK,
    MAX_LOGGED_PATH_CHARS,
    format_traceparent,
    is_trace_id,
    loggable_path,
    masked_parameters,
    new_span_id,
    new_trace_id,
    parse_traceparent,
    redact_query_secrets,
    request_id,
    request_trace_id,
    run_trace_id,
    uuid4_text,
)

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN = "00f067aa0ba902b7"


def fixed(*chunks: bytes):  # type: ignore[no-untyped-def]
    """A ``rand`` that answers ``chunks`` in turn (cut to the length asked)."""
    source = iter(chunks)
    return lambda n: next(source)[:n]


@pytest.mark.parametrize(
    ("header", "trace_id"),
    [
        (f"00-{TRACE}-{SPAN}-01", TRACE),  # the W3C example
        (f"00-{TRACE}-{SPAN}-00", TRACE),  # not sampled: still the same trace
        (f"  00-{TRACE}-{SPAN}-01\t", TRACE),  # optional whitespace
        (f"01-{TRACE}-{SPAN}-01-extra-fields", TRACE),  # a later version may add fields
        (f"01-{TRACE}-{SPAN}-01", TRACE),
        (None, None),
        ("", None),
        ("garbage", None),
        (f"00-{TRACE}-{SPAN}-01-extra", None),  # version 00 has exactly four fields
        (f"01-{TRACE}-{SPAN}-01x", None),  # later fields must follow a dash
        (f"ff-{TRACE}-{SPAN}-01", None),  # version ff is invalid
        (f"00-{'0' * 32}-{SPAN}-01", None),  # all-zero trace id
        (f"00-{TRACE}-{'0' * 16}-01", None),  # all-zero parent id
        (f"00-{TRACE.upper()}-{SPAN}-01", None),  # uppercase hex is invalid
        (f"00-{TRACE[:-1]}-{SPAN}-01", None),  # short trace id
        (f"00-{TRACE}-{SPAN}-1", None),
        (f"00-{TRACE}\n-{SPAN}-01", None),
        (f"0-{TRACE}-{SPAN}-01", None),
    ],
)
def test_parse_traceparent(header: str | None, trace_id: str | None) -> None:
    assert parse_traceparent(header) == trace_id


def test_format_traceparent_round_trips_and_refuses_malformed_ids() -> None:
    header = format_traceparent(TRACE, SPAN)
    assert header == f"00-{TRACE}-{SPAN}-01"
    assert parse_traceparent(header) == TRACE
    for trace_id, span_id in [
        (TRACE.upper(), SPAN),
        ("0" * 32, SPAN),
        (TRACE, "0" * 16),
        (TRACE, SPAN[:-1]),
        ("", SPAN),
    ]:
        with pytest.raises(ValueError):
            format_traceparent(trace_id, span_id)


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        (TRACE, True),
        ("0" * 32, False),
        (TRACE.upper(), False),
        (TRACE + "0", False),
        ("", False),
        (None, False),
        (12, False),
        ("g" * 32, False),
    ],
)
def test_is_trace_id(value: object, valid: bool) -> None:
    assert is_trace_id(value) is valid


def test_new_ids_use_the_given_randomness_and_never_all_zero() -> None:
    assert new_trace_id(fixed(b"\0" * 16, bytes(range(16)))) == bytes(range(16)).hex()
    assert new_span_id(fixed(b"\0" * 8, b"\x01" * 8)) == "01" * 8
    assert is_trace_id(new_trace_id(os.urandom)) and len(new_span_id(os.urandom)) == 16
    assert new_trace_id(os.urandom) != new_trace_id(os.urandom)


def test_request_trace_id_adopts_a_valid_traceparent_else_draws() -> None:
    rand = fixed(b"\xab" * 16)
    assert request_trace_id(f"00-{TRACE}-{SPAN}-01", rand) == TRACE
    assert request_trace_id("00-bad", rand) == "ab" * 16


@pytest.mark.parametrize(
    ("header", "kept"),
    [
        ("3f2a0c1e-8b1d-4c55-9a57-0b5b5f3e2d11", True),
        ("req.42:a_b-c", True),
        ("x" * 64, True),
        ("x" * 65, False),
        ("", False),
        (None, False),
        ("has space", False),
        ("line\nbreak", False),
        ("Bearer eyJhbGciOi", False),
        ("caf\u00e9", False),
    ],
)
def test_request_id_keeps_only_a_sane_header(header: str | None, kept: bool) -> None:
    got = request_id(header, fixed(b"\x11" * 16))
    assert got == (header if kept else "11" * 16)


@pytest.mark.parametrize(
    ("path", "query", "logged"),
    [
        ("/api/x", "", "/api/x"),
        ("/api/x", "status=PENDING&page=2", "/api/x?status=PENDING&page=2"),
        ("/api/x", "token=abc&page=1", f"/api/x?token={MASK}&page=1"),
        ("/api/x", "access_token=abc", f"/api/x?access_token={MASK}"),
        ("/api/x", "X-Api-Key=k1&Signature=s", f"/api/x?X-Api-Key={MASK}&Signature={MASK}"),
        ("/api/x", "password=p&sessionId=s", f"/api/x?password={MASK}&sessionId={MASK}"),
        ("/api/x", "q=a%20b%0Ac", "/api/x?q=a%20b%0Ac"),  # re-quoted: one line
        ("/api/x\n/forged", "", "/api/x\\n/forged"),
        ("/api/x", "flag", "/api/x?flag="),
    ],
)
def test_loggable_path_masks_secret_query_values(path: str, query: str, logged: str) -> None:
    assert loggable_path(path, query) == logged


def test_loggable_path_is_bounded() -> None:
    line = loggable_path("/" + "a" * 10_000, "b=" + "c" * 10_000)
    assert len(line) == MAX_LOGGED_PATH_CHARS and line.endswith("…")


def test_masked_parameters_keep_names_and_types_only() -> None:
    params = {
        "phone": "13800000000",
        "rowCount": 5,
        "vip": True,
        "tags": ["a"],
        "range": {"from": "2026-01-01"},
        "none": None,
        "x\n": 1.5,
    }
    assert masked_parameters(params) == {
        "phone": "***string",
        "rowCount": "***number",
        "vip": "***bool",
        "tags": "***list",
        "range": "***object",
        "none": "***null",
        "x\\n": "***number",
    }
    assert masked_parameters("secret") == "***string"
    assert "13800000000" not in repr(masked_parameters(params))


@pytest.mark.parametrize(
    ("task_trace", "command_trace", "expected"),
    [
        (TRACE, "ab" * 16, TRACE),  # the task row is the source of truth
        (None, "ab" * 16, "ab" * 16),  # a task created before the column existed
        ("", "ab" * 16, "ab" * 16),
        ("bad", None, "cd" * 16),  # neither: a new one for the run
        (None, "", "cd" * 16),
    ],
)
def test_run_trace_id_prefers_the_task_then_the_command(
    task_trace: str | None, command_trace: str | None, expected: str
) -> None:
    assert run_trace_id(task_trace, command_trace, fixed(b"\xcd" * 16)) == expected


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (
            'HTTP Request: GET http://h/p?status=A&token=t1&x=1 "HTTP/1.1 200 "',
            f'HTTP Request: GET http://h/p?status=A&token={MASK}&x=1 "HTTP/1.1 200 "',
        ),
        ("see https://h/cb?code=abc#frag", f"see https://h/cb?code={MASK}#frag"),
        ("a=b and c=d", "a=b and c=d"),  # not a query
        ("?page=2&pageSize=20", "?page=2&pageSize=20"),
        ("?sig=&api_key=k k", f"?sig={MASK}&api_key={MASK} k"),
    ],
)
def test_redact_query_secrets_in_free_text(text: str, redacted: str) -> None:
    assert redact_query_secrets(text) == redacted


@pytest.mark.parametrize(
    "seed", [b"\0" * 16, b"\xff" * 16, bytes(range(16)), bytes(range(100, 116))]
)
def test_uuid4_text_is_what_the_uuid_module_writes(seed: bytes) -> None:
    """The core draws no randomness: a command's event id is built from bytes it is given,
    in exactly the text ``uuid.UUID(bytes=..., version=4)`` writes."""
    assert uuid4_text(seed) == str(uuid.UUID(bytes=seed, version=4))
