"""How each provider-check rule is judged (the rules: :mod:`actors.core.provider.rules`).

The command (``actors/cli/provider.py``) makes the requests through the service's own
Provider client and hands each outcome to a :class:`ProviderCheck`, which applies the same
checks the service applies (:mod:`actors.core.provider.contract`,
:mod:`actors.core.provider.batch_rules`, :mod:`actors.core.xlsx.cells`)
and keeps one verdict per rule.
Nothing here re-states a rule of the contract: a rule fails exactly when the service's
check for it raises, and the message is the service's message.

The outcomes it is fed:

* the batches of one export run, from the first request on, until ``hasMore`` is false,
  the row budget of the check is read, or the service would stop the run;
* the first batch of a second run, for schemaHash stability across runs;
* the answers to :data:`~actors.core.provider.rules.PROBES`, requests the Provider must
  refuse: a wrong service token, a missing or malformed tenant field, a body that is not a
  JSON object, a tampered snapshot token.

Each request ends in a :class:`~actors.core.batch.ProviderBatch` or in the
:class:`~actors.core.errors.ExportError` the service's client raised, together with the
:class:`~actors.core.provider.rules.Stage` where it failed (transport and HTTP status, an
envelope error code, or the content of a ``"200"`` answer), which says which rule broke.
Pure: no IO.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from actors.core.batch import ColumnDef, ProviderBatch
from actors.core.errors import (
    ExportError,
    LimitExceededError,
    ProviderContractError,
    TransientExportError,
)
from actors.core.provider.batch_rules import BatchGuard, SnapshotPin
from actors.core.provider.contract import check_batch_rows
from actors.core.provider.json_values import clip
from actors.core.provider.rules import RULES, Finding, Probe, Stage, Verdict
from actors.core.xlsx.cells import to_cell

#: Failures kept per rule; the others are counted (a file of bad cells is one finding).
_KEPT_FAILURES = 1


@dataclass(slots=True)
class _Evidence:
    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    failures: int = 0
    skipped: list[str] = field(default_factory=list)


class ProviderCheck:
    """Judges one Provider from the outcomes of the requests the command made.

    Feed it the main run's batches in order (:meth:`accept`, then :meth:`failed` if a
    request failed), the second run's first batch (:meth:`rerun`) and each probe's outcome
    (:meth:`probed`); then read :meth:`findings`.

    Args:
        export_type: named in messages.
        max_rows: the ``max-rows`` the check assumes (the registry's, 1..500,000).
        batch_size: the ``limit`` sent (the registry's ``batch-size``).
        read_rows: stop reading the run after the batch that reaches this many rows (the
            check need not read a 500,000-row export to judge it).

    Raises:
        ValueError: a limit is not positive.
    """

    def __init__(self, export_type: str, *, max_rows: int, batch_size: int, read_rows: int):
        if read_rows < 1:
            raise ValueError("read_rows must be positive")
        self._batch_size = batch_size
        self._read_rows = read_rows
        self._guard = BatchGuard(export_type, max_rows=max_rows, batch_size=batch_size)
        self._pin = SnapshotPin()
        self._evidence: dict[str, _Evidence] = {rule.key: _Evidence() for rule in RULES}
        self._columns: dict[str, ColumnDef] = {}
        self._cells = 0
        self._stopped: str | None = None  # why the run stopped before its end, if it did
        self._good = 0  # batches that passed every check
        self._concluded = False
        self.first: ProviderBatch | None = None
        self.batches = 0
        self.rows = 0
        self.ended = False

    @property
    def next_token(self) -> str | None:
        """The snapshot token to echo in the next request of the main run."""
        return self._pin.token

    def _fail(self, key: str, detail: str) -> None:
        evidence = self._evidence[key]
        evidence.failures += 1
        if len(evidence.failed) < _KEPT_FAILURES:
            evidence.failed.append(detail)

    def _pass(self, key: str, detail: str) -> None:
        self._evidence[key].passed.append(detail)

    def _skip(self, key: str, detail: str) -> None:
        self._evidence[key].skipped.append(detail)

    def accept(self, batch: ProviderBatch) -> bool:
        """Judge the next batch of the main run.

        Args:
            batch: the batch as the service's client decoded it, with no row bound (the
                ``limits`` rule bounds it here).

        Returns:
            Whether to ask for the next batch: ``False`` once the service would stop the
            run (a rule failed), ``hasMore`` is false, or ``read_rows`` are read.
        """
        self.batches += 1
        n = self.batches
        if n == 1:
            self.first = batch
        broken = self._hold_pin(batch, n)
        if broken:
            return self._stop(n, broken)
        try:
            check_batch_rows(batch.row_count, self._batch_size)
        except ProviderContractError as exc:
            self._fail("limits", f"batch {n}: {exc}")
            return self._stop(n, "limits")
        try:
            self._guard.check(
                next_cursor=batch.next_cursor,
                has_more=batch.has_more,
                rows=batch.row_count,
                total_rows=batch.total_rows,
            )
        except LimitExceededError as exc:
            self._fail("limits", f"batch {n}: {exc}")
            return self._stop(n, "limits")
        except TransientExportError as exc:  # CursorNotAdvancingError
            self._fail("cursor", f"batch {n}: {exc}")
            return self._stop(n, "cursor")
        # Bad cells do not stop a run: the service writes them as text with a warning.
        self._judge_cells(batch, n)
        self._good += 1
        self.rows += batch.row_count
        if not batch.has_more:
            self.ended = True
            return False
        if self.rows >= self._read_rows:
            self._stopped = (
                f"stopped after {self.rows} rows in {n} batches, as asked (--rows "
                f"{self._read_rows}); the end of the export was not reached"
            )
            return False
        return True

    def _hold_pin(self, batch: ProviderBatch, n: int) -> str | None:
        """The key of the rule the batch breaks against the first batch, or ``None``."""
        # SnapshotPin checks the schemaHash and the token together; it is asked about each
        # alone so that the report names the one that changed.
        if n == 1:
            try:
                self._pin.check(
                    columns=batch.columns,
                    schema_hash=batch.schema_hash,
                    snapshot_token=batch.snapshot_token,
                )
            except ProviderContractError as exc:
                self._fail("fields", f"batch 1: {exc}")
                return "fields"
            self._columns = {c.key: c for c in batch.columns or ()}
            return None
        pinned_hash = self._pin.schema_hash
        assert pinned_hash is not None  # held since batch 1
        try:
            self._pin.check(
                columns=batch.columns, schema_hash=batch.schema_hash, snapshot_token=None
            )
        except ProviderContractError as exc:
            self._fail("schema-hash", f"batch {n}: {exc}")
            return "schema-hash"
        try:
            self._pin.check(
                columns=batch.columns, schema_hash=pinned_hash, snapshot_token=batch.snapshot_token
            )
        except ProviderContractError as exc:
            self._fail(
                "snapshot-token",
                f"batch {n}: {exc}: it answered {_quoted(batch.snapshot_token)} after "
                f"{_quoted(self._pin.token)}",
            )
            return "snapshot-token"
        return None

    def _judge_cells(self, batch: ProviderBatch, n: int) -> None:
        for index, row in enumerate(batch.rows, start=1):
            for key, value in row.items():
                column = self._columns.get(key)
                where = f"batch {n} row {index}"
                if column is None:
                    self._fail(
                        "cells",
                        f"{where}: key {_quoted(key)} is not a declared column (ignored by "
                        "the service and counted as a warning)",
                    )
                    continue
                self._cells += 1
                try:
                    cell = to_cell(column, value)
                except ProviderContractError as exc:
                    self._fail("cells", f"{where} column {key}: {exc}")
                    continue
                if cell.invalid:
                    self._fail(
                        "cells",
                        f"{where} column {key}: {cell.warning}; the service counts it as a "
                        "data warning",
                    )

    def _stop(self, n: int, key: str) -> bool:
        self._stopped = f"not reached: the run stopped at batch {n} ({key})"
        return False

    def failed(self, exc: ExportError, stage: Stage) -> None:
        """The request for the next batch of the main run failed.

        Args:
            exc: what the service's client raised.
            stage: where it failed.
        """
        n = self.batches + 1
        if isinstance(exc, LimitExceededError):
            key = "limits"
            self._fail(key, f"batch {n}: {exc}")
        elif stage is Stage.CONTENT:
            key = "fields"
            self._fail(key, f"batch {n}: {exc}")
        else:
            key = "answer"
            kind = "transient: retried" if isinstance(exc, TransientExportError) else "permanent"
            self._fail(key, f"batch {n}: {exc} ({kind} by the service)")
        self._stop(n, key)

    def rerun(self, outcome: ProviderBatch | ExportError) -> None:
        """The first batch of a second run, asked exactly like the first run's."""
        first = self.first
        if first is None:
            return
        if isinstance(outcome, ExportError):
            self._skip("schema-hash", f"the second run's first request failed: {outcome}")
            return
        same_columns = outcome.columns == first.columns
        if same_columns and outcome.schema_hash != first.schema_hash:
            self._fail(
                "schema-hash",
                f"a new run with the same columns answered schemaHash "
                f"{_quoted(outcome.schema_hash)}, the first run {_quoted(first.schema_hash)}: "
                "the hash must stand for the columns",
            )
        elif not same_columns and outcome.schema_hash == first.schema_hash:
            self._fail(
                "schema-hash",
                "a new run answered other columns with the same schemaHash "
                f"{_quoted(first.schema_hash)}: the hash must change when the columns do",
            )
        else:
            self._pass("schema-hash", "the same in a new run")

    def probed(self, probe: Probe, outcome: ProviderBatch | ExportError, stage: Stage) -> None:
        """The outcome of one :data:`PROBES` request.

        A refusal is an HTTP 4xx other than 429 or an envelope error code: the service
        fails the task with the Provider's message (permanent). Anything else fails the
        rule: an accepted request, a transient answer (HTTP 5xx, 429, a timeout) that the
        service would retry, or a ``"200"`` answer that is merely malformed.
        """
        if isinstance(outcome, ProviderBatch):
            self._fail(
                probe.rule,
                f'{probe.what} was accepted (code "200" with {outcome.row_count} rows); '
                "the Provider must refuse it",
            )
        elif isinstance(outcome, TransientExportError):
            self._fail(
                probe.rule,
                f"{probe.what} was answered as a transient failure, which the service "
                f"retries: {outcome}; refuse it with HTTP 400/401/403 or an envelope code",
            )
        elif stage is Stage.CONTENT or not isinstance(outcome, ProviderContractError):
            self._fail(
                probe.rule,
                f'{probe.what} was answered code "200" with a malformed answer ({outcome}) '
                "instead of a refusal",
            )
        else:
            self._pass(probe.rule, f"{probe.what}: refused ({outcome})")

    def cannot_probe(self, probe: Probe, reason: str) -> None:
        """A probe that could not be sent (e.g. no snapshot token to tamper)."""
        self._skip(probe.rule, f"{probe.what}: {reason}")

    def findings(self) -> tuple[Finding, ...]:
        """One finding per rule of :data:`RULES`, in order: ``FAIL`` when any evidence
        failed (the first failure, with the count of the others), else ``PASS`` when any
        passed, else ``SKIP`` with the reason."""
        if not self._concluded:
            self._concluded = True
            self._conclude_run()
        findings: list[Finding] = []
        for rule in RULES:
            evidence = self._evidence[rule.key]
            if evidence.failed:
                more = evidence.failures - 1
                detail = evidence.failed[0] + (f" (and {more} more)" if more else "")
                findings.append(Finding(rule, Verdict.FAIL, detail))
            elif evidence.passed:
                findings.append(Finding(rule, Verdict.PASS, "; ".join(evidence.passed)))
            else:
                reason = evidence.skipped[0] if evidence.skipped else "not checked"
                findings.append(Finding(rule, Verdict.SKIP, reason))
        return tuple(findings)

    def _conclude_run(self) -> None:
        """Pass the run's rules that no batch broke, once the run got far enough to show
        them; skip the others with the reason."""
        good, stopped = self._good, self._stopped or "not reached"
        seen = f"{good} batch{'es' if good != 1 else ''}, {self.rows} rows"
        if self.batches:
            self._pass("answer", f"{self.batches} requests of the run answered")
        for key, detail in (
            ("fields", seen),
            ("limits", f"{seen}, at most {self._batch_size} rows each"),
            ("cells", f"{self._cells} cells fit their columns"),
        ):
            if good:
                self._pass(key, detail)
            else:
                self._skip(key, stopped)
        if self.ended:
            self._pass("end", f"hasMore false after {seen}")
        else:
            self._skip("end", stopped)
        if good >= 2:
            self._pass("cursor", f"advanced over {seen}")
            self._pass("schema-hash", f"the same on {good} batches")
            if self._pin.token is None:
                self._skip(
                    "snapshot-token",
                    "the first batch has no snapshotToken: rows added during an export "
                    "would be in it",
                )
            else:
                self._pass("snapshot-token", f"kept over {good} batches")
        else:
            reason = (
                "one batch only: ask for more rows (--parameters) or a smaller --batch-size"
                if self.ended
                else stopped
            )
            for key in ("cursor", "snapshot-token", "schema-hash"):
                self._skip(key, reason)

    def _failed_keys(self) -> set[str]:
        return {key for key, evidence in self._evidence.items() if evidence.failed}


def _quoted(text: str | None) -> str:
    return "null" if text is None else f"'{clip(text)}'"
