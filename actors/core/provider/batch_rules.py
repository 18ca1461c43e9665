"""Cross-batch rules of one export run: the snapshot stays the same, the cursor must make
progress, and the run must fit the registry's limits. Pure: no IO, no clock; fed one batch
at a time. Each batch was first checked alone by :mod:`actors.core.provider.contract`.

:class:`SnapshotPin` holds the first batch's ``schemaHash`` and ``snapshotToken``, which no
later batch may change (:class:`ProviderContractError`, permanent), and
:func:`~actors.core.provider.contract.check_batch_rows` holds each batch to the ``limit``
asked for.

A Provider that keeps answering ``hasMore: true`` could hold a consumer slot until the
per-run deadline (30 minutes at ~20 requests/s), so :class:`BatchGuard` stops the run at the
first batch that proves it cannot end well:

===========================================  =======================================
breach                                       error
===========================================  =======================================
``hasMore`` with an empty ``nextCursor``     :class:`CursorNotAdvancingError`
``nextCursor`` equal to a cursor already     :class:`CursorNotAdvancingError` naming
sent in this run (``a → b → a``)             the cursor and both batch numbers
more than :data:`MAX_EMPTY_BATCHES_IN_A_ROW` :class:`CursorNotAdvancingError`
empty batches in a row with ``hasMore``
more batches than ``max-rows / batch-size``  :class:`LimitExceededError` naming the
allows (see :func:`max_batches`)             bound and both registry values
first batch announces ``totalRows`` above    :class:`LimitExceededError` naming
``max-rows``                                 ``max-rows``
===========================================  =======================================

The cursor breaches keep the seed's class for "cursor not advancing": a transient
dependency error, retried with back-off and bounded by ``max-attempts`` (a Provider can
read a moving index mid-update; a new attempt takes a new snapshot). The limits are
permanent: the same registry values give the same answer on every attempt.

Only the *first* batch's ``totalRows`` is held against ``max-rows``: it is an estimate
(§10.2), and a later batch may count rows added after the snapshot that the export will
not read. The writer's ``max-rows`` gate still stops a run that really exceeds it.
"""

from __future__ import annotations

import hashlib
import math

from actors.core.batch import ColumnDef
from actors.core.data_warning import DataWarning, WarningKind
from actors.core.errors import (
    CursorNotAdvancingError,
    ProviderContractError,
    RowLimitError,
)
from actors.core.provider.json_values import clip
from actors.core.text import quote_outside

#: Empty batches with ``hasMore`` true tolerated in a row. A Provider that filters while it
#: scans may answer a few empty pages (the demo scans 100,000 ids per request, so a
#: 1,000,000-row table with a rare keyword gives at most 10); a hundred means no progress.
MAX_EMPTY_BATCHES_IN_A_ROW = 100
#: Extra batches allowed beyond twice the full-batch count (see :func:`max_batches`).
BATCH_SLACK = 100
#: Longest cursor text quoted in a message.
_QUOTE_CHARS = 80


def max_batches(max_rows: int, batch_size: int) -> int:
    """The most batches one run may take: ``2 * ceil(max_rows / batch_size) + 100``.

    ``ceil(max_rows / batch_size)`` full batches carry every row the registry allows; the
    factor 2 lets a Provider send half-full batches all along (filters, page boundaries),
    and the slack covers a final empty batch and short runs of empty ones.

    Args:
        max_rows: registry ``max-rows`` of the export type, rows (≥ 1).
        batch_size: registry ``batch-size``, rows per request (≥ 1).

    Returns:
        The bound, in batches.

    Raises:
        ValueError: a limit is not positive.
    """
    if max_rows < 1 or batch_size < 1:
        raise ValueError("max_rows and batch_size must be positive")
    return 2 * math.ceil(max_rows / batch_size) + BATCH_SLACK


class BatchGuard:
    """Checks each batch of one run against the rules of the module docstring.

    Memory stays bounded: a run has at most :func:`max_batches` batches, and only a
    16-byte digest of each cursor is kept, however long the Provider's cursors are.

    Args:
        export_type: named in messages.
        max_rows: registry ``max-rows``, read at execution time (§10.4).
        batch_size: registry ``batch-size``.
    """

    def __init__(self, export_type: str, *, max_rows: int, batch_size: int) -> None:
        self._export_type = export_type
        self._max_rows = max_rows
        self._batch_size = batch_size
        self._max_batches = max_batches(max_rows, batch_size)
        self._sent: dict[bytes, int] = {}  # digest of a cursor sent -> batch it asked for
        self._batches = 0
        self._empty_in_a_row = 0

    @property
    def batches(self) -> int:
        """Batches checked so far."""
        return self._batches

    def check(
        self, *, next_cursor: str | None, has_more: bool, rows: int, total_rows: int | None
    ) -> None:
        """Check the batch just received; call once per batch, in order.

        Args:
            next_cursor: the batch's ``nextCursor``.
            has_more: the batch's ``hasMore``.
            rows: rows in the batch.
            total_rows: the batch's ``totalRows`` estimate, or ``None``.

        Raises:
            LimitExceededError: the first batch announces more rows than ``max-rows``, or
                this batch is one more than :func:`max_batches` allows.
            CursorNotAdvancingError: ``hasMore`` with an empty ``nextCursor``, a
                ``nextCursor`` already sent in this run, or too many empty batches in a
                row.
        """
        self._batches += 1
        n = self._batches
        if n == 1 and total_rows is not None and total_rows > self._max_rows:
            raise RowLimitError(
                f"provider announced totalRows {total_rows} in its first batch; export type "
                f"{self._export_type} allows at most max-rows {self._max_rows}"
            )
        if n > self._max_batches:
            raise RowLimitError(
                f"provider sent more than {self._max_batches} batches, the most that "
                f"max-rows {self._max_rows} with batch-size {self._batch_size} allows "
                f"(2 × ceil(max-rows / batch-size) + {BATCH_SLACK})"
            )
        if not has_more:
            return
        if not next_cursor:
            raise CursorNotAdvancingError(
                f"provider answered hasMore with an empty nextCursor in batch {n}"
            )
        self._empty_in_a_row = self._empty_in_a_row + 1 if rows == 0 else 0
        if self._empty_in_a_row > MAX_EMPTY_BATCHES_IN_A_ROW:
            raise CursorNotAdvancingError(
                f"provider sent {self._empty_in_a_row} empty batches in a row with hasMore "
                f"(batches {n - self._empty_in_a_row + 1}..{n}); the limit is "
                f"{MAX_EMPTY_BATCHES_IN_A_ROW}"
            )
        digest = hashlib.blake2b(next_cursor.encode("utf-8", "surrogatepass"), digest_size=16)
        key = digest.digest()
        first = self._sent.get(key)
        if first is not None:
            shown = quote_outside(next_cursor, _QUOTE_CHARS)
            if first == n:
                raise CursorNotAdvancingError(
                    f"provider answered hasMore without advancing the cursor: batch {n} "
                    f"returned nextCursor '{shown}', the cursor it was asked with"
                )
            raise CursorNotAdvancingError(
                f"provider cursor cycle: nextCursor '{shown}' repeated after {n} batches (it "
                f"already asked for batch {first}); with hasMore the export would never end"
            )
        self._sent[key] = n + 1  # this cursor asks for the next batch


def final_total_rows(announced: int | None, written: int) -> tuple[int, DataWarning | None]:
    """The ``total_rows`` a successful run stores, and a warning when rows were missing.

    ``totalRows`` is an estimate (§10.2): rows deleted during the export make the real
    count smaller. The task keeps the Provider's figure in that case, so the shortfall
    stays visible next to ``processed_rows`` instead of being overwritten.

    Args:
        announced: the last ``totalRows`` the Provider sent in this run, or ``None``.
        written: data rows written to the file.

    Returns:
        ``(total_rows, warning)``: ``announced`` and a ``fewer-rows`` warning when it is
        above ``written``; otherwise ``written`` and ``None`` (an estimate that was low,
        or none at all, says nothing worth keeping).
    """
    if announced is None or announced <= written:
        return written, None
    return announced, DataWarning(
        WarningKind.FEWER_ROWS,
        f"provider announced totalRows {announced} but its last batch ended after "
        f"{written} rows ({announced - written} fewer)",
    )


class SnapshotPin:
    """The first batch's ``schemaHash`` and ``snapshotToken``, which every later batch of
    the run must keep. Feed it each batch in order (:meth:`check`); the
    token to echo in the next request is :attr:`token`."""

    def __init__(self) -> None:
        self.schema_hash: str | None = None
        self.token: str | None = None

    def check(
        self,
        *,
        columns: tuple[ColumnDef, ...] | None,
        schema_hash: str,
        snapshot_token: str | None,
    ) -> None:
        """Check one batch (after :func:`parse_batch_data`).

        Raises:
            ProviderContractError: the first batch carries no columns; a later batch has
                another ``schemaHash`` (the Provider changed its columns mid-export) or a
                snapshot token other than the one echoed. A later batch may omit the
                token (it is already held) but must not swap it: a new snapshot would mix
                rows from two points in time.
        """
        if self.schema_hash is None:
            if not columns:
                raise ProviderContractError("the first batch carries no columns")
            self.schema_hash = schema_hash
            self.token = snapshot_token
            return
        if schema_hash != self.schema_hash:
            raise ProviderContractError(
                f"schemaHash changed between batches ({clip(self.schema_hash)} -> "
                f"{clip(schema_hash)}): the Provider changed its columns during "
                "the export"
            )
        if snapshot_token is not None and snapshot_token != self.token:
            raise ProviderContractError("snapshotToken changed between batches")
