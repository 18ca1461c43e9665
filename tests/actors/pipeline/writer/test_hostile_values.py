"""Property: whatever a Provider puts in a batch, the pipeline ends in a valid XLSX or in one
of our ExportError classes — never in another Python error (issue 13 item 6).

An unexpected error (ValueError, RecursionError, UnicodeEncodeError, a database overflow)
is treated as transient by the consumer slot and wastes every retry on an answer that can
never work. Hypothesis generates hostile batches — huge integers as numbers and strings
(past Python's 4,300-digit limit), floats such as 1e400 and NaN, deep nesting, lone
surrogates and other control characters, "NaN"-like strings, cells over 32,767
characters, hostile keys, cursors and totals — and drives each one through the same code a
run uses: :func:`parse_batch_response` (JSON, envelope, data), the cross-batch
:class:`BatchGuard`, the encoding of the next request (which echoes the cursor and token),
and the XLSX writer, whose file is read back with openpyxl.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from typing import Any

import openpyxl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.core.batch import ColumnType
from actors.core.errors import ExportError
from actors.core.provider.batch_rules import BatchGuard
from actors.core.provider.contract import MAX_TOTAL_ROWS
from actors.core.provider.request import BatchRequest
from actors.pipeline.provider.decode import parse_batch_response
from actors.pipeline.provider.request_builder import encode_request
from actors.pipeline.writer.xlsx_stream import XlsxStreamWriter

#: Examples per run (about 15 s here). Derandomised, so every run checks the same batches;
#: set EXPORT_CENTER_FUZZ_EXAMPLES to search further, e.g. 5000 before a release.
EXAMPLES = int(os.environ.get("EXPORT_CENTER_FUZZ_EXAMPLES", "200"))

COLUMNS = [
    {"key": t.value.lower(), "title": t.value, "type": t.value, "width": 20} for t in ColumnType
]
KEYS = [c["key"] for c in COLUMNS]


@dataclass
class Raw:
    """JSON literals that ``json.dumps`` cannot produce (a 5,000-digit number, 1e400,
    nesting deeper than Python can encode); spliced into the text after dumping."""

    literals: list[str] = field(default_factory=list)

    def add(self, literal: str) -> str:
        self.literals.append(literal)
        return f"\x00raw{len(self.literals) - 1}\x00"

    def splice(self, text: str) -> str:
        for n, literal in enumerate(self.literals):
            text = text.replace(json.dumps(f"\x00raw{n}\x00"), literal)
        return text


hostile_chars = st.characters(categories=["Cs", "Cc", "Zl", "Zp", "Cf", "Lo", "Nd", "Po"])
hostile_text = st.one_of(
    st.text(max_size=40),
    st.text(hostile_chars, max_size=40),
    st.sampled_from(
        [
            "NaN",
            "nan",
            "Infinity",
            "-Infinity",
            "1e400",
            "-0",
            "0x10",
            "1_000",
            "١٢",
            "+",
            "=1+1",
            "@SUM(A1)",
            "\r\n2026-12-01 00:00:00,000 CRITICAL x: FORGED",
            "\ud800",
            "0000-00-00",
            "2024-02-30",
            "9999-12-31T23:59:59.999999999+99:99",
            "true",
            "TRUE",
        ]
    ),
)


def raw_literal(raw: Raw) -> st.SearchStrategy[str]:
    """Placeholders for literals only raw JSON text can carry."""
    return st.one_of(
        st.integers(4_301, 4_400).map(lambda n: raw.add("-" * (n % 2) + "7" * n)),
        st.sampled_from(["1e400", "-1e400", "1e-400", "NaN", "Infinity"]).map(raw.add),
        st.integers(1, 3_000).map(lambda n: raw.add("[" * n + "]" * n)),
    )


def big_values(raw: Raw) -> st.SearchStrategy[Any]:
    """Values just past a size limit. At most one per batch: hypothesis keeps every drawn
    body in memory, and a few of these per batch made that a gigabyte."""
    return st.one_of(
        st.integers(32_760, 33_000).map(lambda n: "é" * n),  # Excel's 32,767-character cell
        st.integers(4_295, 4_400).map(lambda n: "9" * n),  # Python's 4,300-digit limit
        st.integers(32_760, 32_800).map(lambda n: "-" * (n % 2) + "9" * n),
        st.integers(32_760, 32_800).map(lambda n: raw.add("7" * n)),
    )


def scalars(raw: Raw) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**40), 10**40),
        st.integers(-(2**63), 2**64),
        st.floats(allow_nan=True, allow_infinity=True),
        hostile_text,
        raw_literal(raw),
    )


def values(raw: Raw) -> st.SearchStrategy[Any]:
    return st.recursive(
        scalars(raw),
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
        ),
        max_leaves=8,
    )


@st.composite
def hostile_batches(draw: st.DrawFn) -> bytes:
    raw = Raw()
    key = st.one_of(st.sampled_from(KEYS), hostile_text)
    rows = draw(st.lists(st.dictionaries(key, values(raw), max_size=8), max_size=6))
    if rows and draw(st.booleans()):
        row = draw(st.sampled_from(rows))
        row[draw(key)] = draw(big_values(raw))
    data: dict[str, Any] = {
        "schemaVersion": 1,
        "schemaHash": "sha256:h",
        "snapshotToken": draw(st.one_of(st.none(), hostile_text)),
        "columns": COLUMNS,
        "rows": rows,
        "nextCursor": draw(st.one_of(st.none(), hostile_text)),
        "hasMore": draw(st.booleans()),
        "totalRows": draw(
            st.one_of(st.none(), st.integers(-5, 2**70), hostile_text, raw_literal(raw))
        ),
    }
    code = draw(st.one_of(st.just("200"), st.just(200), values(raw)))
    envelope = {
        "code": code,
        "message": draw(st.one_of(st.just("success"), values(raw))),
        "data": data,
    }
    # ensure_ascii: lone surrogates travel as \ud800 escapes, as a Java Provider sends them.
    return raw.splice(json.dumps(envelope, allow_nan=True)).encode()


def run_batch(body: bytes) -> int | None:
    """What a run does with one answer: rows written, or ``None`` if it ended in an
    ExportError (asserted to be one clean line)."""
    try:
        batch = parse_batch_response(body, service="fuzz", limit=1000, max_columns=100)
        if batch.total_rows is not None:
            assert 0 <= batch.total_rows <= MAX_TOTAL_ROWS  # the progress write can store it
        BatchGuard("FUZZ", max_rows=500_000, batch_size=1000).check(
            next_cursor=batch.next_cursor,
            has_more=batch.has_more,
            rows=len(batch.rows),
            total_rows=batch.total_rows,
        )
        # The next request echoes the cursor and token: they must be sendable.
        encode_request(
            BatchRequest(1, 0, "PLATFORM", 7, 1, {}, batch.next_cursor, batch.snapshot_token, 1)
        )
        assert batch.columns is not None
        out = io.BytesIO()
        writer = XlsxStreamWriter(out, batch.columns, max_rows=500_000, max_bytes=50 << 20)
        try:
            writer.write_rows(batch.rows, batch=1)
            writer.close()
        except BaseException:
            writer.discard()
            raise
    except ExportError as exc:
        message = str(exc)
        assert message.isprintable() or not any(c in message for c in "\r\n\x85\u2028")
        assert "\n" not in message and "\r" not in message
        message.encode("utf-8")  # storable as failure_message
        return None
    sheet = openpyxl.load_workbook(io.BytesIO(out.getvalue()))["Export"]
    # A row of blanks stores no cells, so the sheet ends at the last row with a value.
    filled = [n for n, row in enumerate(batch.rows, 2) if any(row.get(k) is not None for k in KEYS)]
    assert sheet.max_row == max(filled, default=1)
    assert [c.value for c in sheet[1]] == [c["title"] for c in COLUMNS]
    return len(batch.rows)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(body=hostile_batches())
def test_any_provider_batch_ends_in_a_valid_xlsx_or_an_export_error(body: bytes) -> None:
    run_batch(body)


@pytest.mark.parametrize(
    "literal",
    ["7" * 5000, '"' + "7" * 5000 + '"', "1e400", "NaN", "[" * 900 + "]" * 900, '"\\ud800"'],
    ids=["int-5000", "string-5000", "1e400", "NaN", "nested-900", "surrogate"],
)
@pytest.mark.parametrize("key", KEYS)
def test_reported_hostile_values_in_every_column_never_raise_a_stray_error(
    literal: str, key: str
) -> None:
    """The inputs named in the issue, in each column type: written or refused by class."""
    raw = Raw()
    body = {
        "code": "200",
        "data": {
            "schemaVersion": 1,
            "schemaHash": "h",
            "columns": COLUMNS,
            "rows": [{key: raw.add(literal)}],
            "hasMore": False,
        },
    }
    assert run_batch(raw.splice(json.dumps(body)).encode()) in (1, None)
