"""Cross-batch rules of one run (actors.core.provider.batch_rules): cursor progress and limits.

Issue 8 item 3(a) (a cursor cycle held a slot for the whole deadline) and 3(e) (a first
``totalRows`` above ``max-rows`` failed only after max-rows rows).
"""

from __future__ import annotations

from typing import Any

import pytest

from actors.core.batch import ColumnDef, ColumnType
from actors.core.data_warning import WarningKind
from actors.core.errors import (
    CursorNotAdvancingError,
    LimitExceededError,
    ProviderContractError,
    TransientExportError,
)
from actors.core.provider.batch_rules import (
    BATCH_SLACK,
    MAX_EMPTY_BATCHES_IN_A_ROW,
    BatchGuard,
    SnapshotPin,
    final_total_rows,
    max_batches,
)
from actors.core.provider.contract import check_batch_rows

Batch = tuple[str | None, bool, int, int | None]  # nextCursor, hasMore, rows, totalRows


def run(batches: list[Batch], *, max_rows: int = 1000, batch_size: int = 50) -> int:
    """Feed ``batches`` to a fresh guard; returns how many passed."""
    guard = BatchGuard("T", max_rows=max_rows, batch_size=batch_size)
    for cursor, more, rows, total in batches:
        guard.check(next_cursor=cursor, has_more=more, rows=rows, total_rows=total)
    return guard.batches


@pytest.mark.parametrize(
    ("batches", "error", "message"),
    [
        (
            [("a", True, 0, None), ("b", True, 0, None), ("a", True, 0, None)],
            CursorNotAdvancingError,
            "nextCursor 'a' repeated after 3 batches (it already asked for batch 2)",
        ),
        (
            [("a", True, 5, None), ("b", True, 5, None), ("c", True, 5, None), ("b", True, 5, 9)],
            CursorNotAdvancingError,
            "nextCursor 'b' repeated after 4 batches (it already asked for batch 3)",
        ),
        (
            [("a", True, 5, None), ("a", True, 5, None)],
            CursorNotAdvancingError,
            "batch 2 returned nextCursor 'a', the cursor it was asked with",
        ),
        ([(None, True, 5, None)], CursorNotAdvancingError, "empty nextCursor in batch 1"),
        ([("", True, 5, None)], CursorNotAdvancingError, "empty nextCursor in batch 1"),
        (
            [("c\n2026-12-01 FORGED", True, 0, None)] * 2,
            CursorNotAdvancingError,
            "nextCursor 'c\\n2026-12-01 FORGED'",
        ),
        (
            [("a", True, 50, 1001)],
            LimitExceededError,
            "announced totalRows 1001 in its first batch; export type T allows at most "
            "max-rows 1000",
        ),
    ],
    ids=[
        "cycle-a-b-a",
        "cycle-later",
        "not-advancing",
        "null-cursor",
        "empty-cursor",
        "cursor-text-escaped",
        "first-total-over-max-rows",
    ],
)
def test_breaches_fail_at_the_first_batch_that_proves_them(
    batches: list[Batch], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        run(batches)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_cursor_breaches_stay_transient_and_limits_permanent() -> None:
    """The seed classifies a cursor that does not advance as a transient dependency error;
    a limit of the registry fails the same on every attempt."""
    assert issubclass(CursorNotAdvancingError, TransientExportError)
    assert not issubclass(LimitExceededError, TransientExportError)


@pytest.mark.parametrize(
    "batches",
    [
        [("1", True, 50, 1000), ("2", True, 50, 5000), ("3", False, 10, None)],
        [(str(i), True, 0, None) for i in range(MAX_EMPTY_BATCHES_IN_A_ROW)] + [("x", False, 0, 0)],
        [("a", True, 0, None), ("b", True, 1, None), ("c", False, 0, None)],
        [("same", False, 3, 3)],
        [("a", True, 1, None), ("b", True, 1, None), ("a", False, 1, None)],
    ],
    ids=[
        "later-estimate-above-max-rows-allowed",
        "empty-batches-up-to-the-limit",
        "short-and-empty-batches",
        "single-last-batch",
        "last-batch-may-repeat-a-cursor",
    ],
)
def test_valid_runs_pass(batches: list[Batch]) -> None:
    assert run(batches) == len(batches)


def test_empty_batches_in_a_row_are_bounded() -> None:
    batches: list[Any] = [(str(i), True, 0, None) for i in range(MAX_EMPTY_BATCHES_IN_A_ROW + 1)]
    with pytest.raises(CursorNotAdvancingError, match="101 empty batches in a row"):
        run(batches, max_rows=500_000)
    # One row in between starts the count again.
    half = MAX_EMPTY_BATCHES_IN_A_ROW // 2 + 1
    ok = [(f"a{i}", True, 0, None) for i in range(half)] + [("mid", True, 1, None)]
    ok += [(f"b{i}", True, 0, None) for i in range(half)]
    assert run(ok, max_rows=500_000) == len(ok)


def test_batches_are_bounded_by_max_rows_over_batch_size() -> None:
    """max-rows 1000 / batch-size 50: 2 × 20 + 100 = 140 batches, then LimitExceeded."""
    bound = max_batches(1000, 50)
    assert bound == 2 * 20 + BATCH_SLACK
    batches: list[Batch] = [(f"c{i}", True, 1, None) for i in range(bound)]
    assert run(batches) == bound
    with pytest.raises(LimitExceededError, match="more than 140 batches.*max-rows 1000"):
        run([*batches, ("last", False, 1, None)])


@pytest.mark.parametrize(
    ("max_rows", "batch_size", "bound"),
    [(200_000, 500, 900), (500_000, 1000, 1100), (1, 1000, 102), (1001, 50, 142)],
)
def test_max_batches_formula(max_rows: int, batch_size: int, bound: int) -> None:
    assert max_batches(max_rows, batch_size) == bound


def test_long_cursors_are_remembered_by_digest() -> None:
    """A 1 MB cursor costs 16 bytes of memory per batch, and is found again."""
    big = "x" * 1_000_000
    with pytest.raises(CursorNotAdvancingError, match="repeated after 3 batches"):
        run([(big, True, 1, None), ("b", True, 1, None), (big, True, 1, None)])


@pytest.mark.parametrize(
    ("announced", "written", "total", "warns"),
    [
        (None, 70, 70, False),
        (70, 70, 70, False),
        (50, 70, 70, False),
        (120, 70, 120, True),
        (1, 0, 1, True),
    ],
)
def test_final_total_keeps_an_announced_figure_above_the_rows_written(
    announced: int | None, written: int, total: int, warns: bool
) -> None:
    """Issue 13 item 6: a shortfall keeps the Provider's figure and says so."""
    result, warning = final_total_rows(announced, written)
    assert result == total
    assert (warning is not None) == warns
    if warning:
        assert warning.kind == WarningKind.FEWER_ROWS
        assert f"announced totalRows {announced}" in warning.detail
        assert f"after {written} rows" in warning.detail


# (columns?, schemaHash, snapshotToken) of each batch in order -> error of the last, if any.
_COLS = (ColumnDef("id", "ID", ColumnType.INTEGER, 12),)


@pytest.mark.parametrize(
    ("batches", "token", "message"),
    [
        ([(_COLS, "h", "t")], "t", None),
        ([(_COLS, "h", "t"), (None, "h", "t"), (None, "h", None)], "t", None),  # may omit
        ([(_COLS, "h", None), (None, "h", None)], None, None),  # no snapshot at all
        ([(None, "h", "t")], None, "the first batch carries no columns"),
        ([((), "h", "t")], None, "the first batch carries no columns"),
        (
            [(_COLS, "h1", "t"), (None, "h2", "t")],
            "t",
            "schemaHash changed between batches (h1 -> h2): the Provider changed its columns "
            "during the export",
        ),
        (
            [(_COLS, "h", "t1"), (None, "h", "t2")],
            "t1",
            "snapshotToken changed between batches",
        ),
        (
            [(_COLS, "h", None), (None, "h", "t")],  # a token appearing later is a swap
            None,
            "snapshotToken changed between batches",
        ),
    ],
)
def test_snapshot_pin(
    batches: list[tuple[tuple[ColumnDef, ...] | None, str, str | None]],
    token: str | None,
    message: str | None,
) -> None:
    pin = SnapshotPin()
    *earlier, last = batches
    for columns, schema_hash, snapshot_token in earlier:
        pin.check(columns=columns, schema_hash=schema_hash, snapshot_token=snapshot_token)
    columns, schema_hash, snapshot_token = last
    if message is None:
        pin.check(columns=columns, schema_hash=schema_hash, snapshot_token=snapshot_token)
    else:
        with pytest.raises(ProviderContractError) as caught:
            pin.check(columns=columns, schema_hash=schema_hash, snapshot_token=snapshot_token)
        assert str(caught.value) == message
    assert pin.token == token


@pytest.mark.parametrize(
    ("rows", "limit", "ok"), [(0, 500, True), (500, 500, True), (501, 500, False)]
)
def test_check_batch_rows(rows: int, limit: int, ok: bool) -> None:
    if ok:
        check_batch_rows(rows, limit)
        return
    with pytest.raises(ProviderContractError) as caught:
        check_batch_rows(rows, limit)
    assert str(caught.value) == f"batch has {rows} rows; the batch-size limit is {limit} rows"
