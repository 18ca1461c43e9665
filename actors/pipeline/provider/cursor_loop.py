"""The cursor loop over one whole export: request after request until ``hasMore`` is false.

Each request sends the previous ``nextCursor`` and the first batch's ``snapshotToken``; each
answer is held to the rules across batches (:mod:`actors.core.provider.batch_rules`) and to
the batch size (:func:`actors.core.provider.contract.check_batch_rows`) before it is
yielded. The loop makes no request itself: its caller passes how one batch is fetched
(an export run: :meth:`actors.pipeline.provider.client.ProviderClient.fetch_batch` through
its worker), so the loop is tested with a scripted fetcher.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

from actors.core.batch import ColumnDef
from actors.core.definitions import ExportDefinition
from actors.core.provider.batch_rules import BatchGuard, SnapshotPin
from actors.core.provider.contract import check_batch_rows
from actors.core.provider.request import BatchRequest


class BatchHead(Protocol):
    """What the loop reads of a batch: :class:`~actors.core.batch.BatchSummary` (an
    export run's worker keeps the rows) and :class:`~actors.core.batch.ProviderBatch`
    both have it."""

    @property
    def schema_hash(self) -> str: ...
    @property
    def snapshot_token(self) -> str | None: ...
    @property
    def columns(self) -> tuple[ColumnDef, ...] | None: ...
    @property
    def next_cursor(self) -> str | None: ...
    @property
    def has_more(self) -> bool: ...
    @property
    def total_rows(self) -> int | None: ...
    @property
    def row_count(self) -> int: ...


B = TypeVar("B", bound=BatchHead)


async def iterate_batches(
    fetch_one: Callable[[BatchRequest], Awaitable[B]],
    definition: ExportDefinition,
    *,
    task_id: int,
    tenant_id: int,
    app_code: str,
    requested_by: int,
    dispatch_version: int,
    parameters: Mapping[str, Any],
) -> AsyncGenerator[B, None]:
    """Yield every batch of one export, enforcing the cross-batch rules of §10.1/§10.2.

    The first request has no cursor and no token and asks for ``definition.batch_size``
    rows. Each later request sends the previous ``nextCursor`` and the first batch's
    ``snapshotToken`` unchanged. A batch is yielded only after it passed every check.
    (An export run's worker writes each batch behind its answer, before these checks:
    a batch that fails one fails the run, and a failed run's file is deleted.) Iteration
    ends after the batch with ``hasMore`` false.

    Use it as ``async with contextlib.aclosing(iterate_batches(...)) as batches:`` so an
    abandoned iteration is closed in the caller's task (trio's rule for async generators).

    Args:
        fetch_one: makes one request and returns its checked batch (an export run:
            its Provider client's ``fetch_batch`` through its worker, which returns
            summaries and keeps the rows).
        definition: the registry entry as read at execution time (§10.4).
        task_id, tenant_id, app_code, requested_by, dispatch_version: from the task row;
            the tenant fields are sent on every request (§10.1).
        parameters: the task's business parameters.

    Yields:
        Each batch ``fetch_one`` returned, once it passed the checks; only the first
        carries ``columns``, as the Provider sent it.

    Raises:
        ValueError: a tenant field is missing (nothing is sent).
        ProviderContractError: the first batch has no columns; a later batch has another
            ``schemaHash`` (the Provider changed its columns mid-export: permanent, §10.1)
            or returns a snapshot token other than the one echoed.
        CursorNotAdvancingError: ``hasMore`` is true while ``nextCursor`` is empty, equal
            to the cursor just sent or to any cursor sent before in this run (a cycle), or
            after too many empty batches in a row (transient, §10.1; see
            :mod:`actors.core.provider.batch_rules`).
        LimitExceededError: the first batch announces ``totalRows`` above ``max-rows``, or
            the run needs more batches than ``max-rows`` / ``batch-size`` allows.
        ProviderContractError: a batch has more rows than ``batch_size``.
        Whatever ``fetch_one`` raises, unchanged (an export run's:
        :meth:`actors.pipeline.provider.client.ProviderClient.fetch_batch`).
    """
    limit = definition.batch_size
    guard = BatchGuard(
        definition.export_type, max_rows=definition.max_rows, batch_size=definition.batch_size
    )
    pin = SnapshotPin()
    cursor: str | None = None
    while True:
        request = BatchRequest(
            task_id=task_id,
            tenant_id=tenant_id,
            app_code=app_code,
            requested_by=requested_by,
            dispatch_version=dispatch_version,
            parameters=parameters,
            cursor=cursor,
            snapshot_token=pin.token,
            limit=limit,
        )
        batch = await fetch_one(request)
        # The rules across batches (actors/core/provider/batch_rules.py).
        pin.check(
            columns=batch.columns,
            schema_hash=batch.schema_hash,
            snapshot_token=batch.snapshot_token,
        )
        check_batch_rows(batch.row_count, limit)
        guard.check(
            next_cursor=batch.next_cursor,
            has_more=batch.has_more,
            rows=batch.row_count,
            total_rows=batch.total_rows,
        )
        yield batch
        if not batch.has_more:
            return
        cursor = batch.next_cursor
