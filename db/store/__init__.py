"""The export store: every state transition of tasks and outbox rows, dialect-neutral.

Each public method is one transaction built from the SQL texts in ``db.transitions``. The
store makes no decisions of its own beyond the ones the seed puts inside a transaction
(limits under the guard lock, the attempt ceiling of an automatic retry); the decisions are
pure functions in ``actors.core`` and the actors carry them out.

The transitions are grouped by caller, one module each; ``ExportStore`` is all of them
over one database:

* ``api`` — create, list, read, cancel, manual retry, history, downloads, the progress
  feed's reads (the API and the operator's commands);
* ``claim`` — the claim of an attempt and the fair-share read (the consumer slots and
  their claim gate);
* ``execution`` — the lease, the file's key, progress and the deadline check of a running
  attempt (the lease keeper, the export runner);
* ``settlement`` — complete / fail / retry / hand back (the consumer slots' execution);
* ``outbox`` — the publisher's claims and send results, DLQ quarantine, the embedded
  bus's start-up requeue;
* ``reconciliation`` — re-dispatch, lease recovery, expiry, pruning, gauges;
* ``progress`` — the progress stream's read of a caller's live and newest tasks;
* ``inspection`` — the operator's read-only queries (``export-center tasks``, ``inspect``);
* ``base`` (what they share: rendered SQL, the fenced one-row write, outbox inserts),
  ``rows`` (row ↔ ``Task`` / ``OutboxRow``), ``retry`` (the ``retrying`` wrapper and
  ``DbHealth``).

Each actor is given the store typed as the port it needs (``actors.core.ports``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from db.store.api import ApiTransitions
from db.store.claim import ClaimTransitions
from db.store.execution import ExecutionTransitions
from db.store.inspection import InspectionQueries
from db.store.outbox import OutboxTransitions
from db.store.progress import ProgressReads
from db.store.reconciliation import ReconciliationTransitions
from db.store.settlement import SettlementTransitions

__all__ = ["ExportStore"]


class ExportStore(
    ApiTransitions,
    ClaimTransitions,
    ExecutionTransitions,
    SettlementTransitions,
    OutboxTransitions,
    ReconciliationTransitions,
    ProgressReads,
    InspectionQueries,
):
    """Every transition over one ``Database`` (see the module docstring for the groups).

    Every public method retries database faults (``db.store.retry.retrying``). Reads are
    safe to re-run because they write nothing; each writing transition's docstring says
    why re-running it after a lost COMMIT gives the same answer.

    Args:
        db: the SQLite or MySQL database.
        ids: snowflake generator for task and outbox ids.
        topic: the command topic written into outbox rows, with ``MQ_TOPIC_PREFIX`` (§6.2).
        clock_label: returns an ISO-8601 instance-clock time, used only for the command's
            ``occurredAt`` label (§8.6 allows instance clocks for labels).
        retry_policy: how transitions retry database faults (``actors.core.db_retry``).
    """


if TYPE_CHECKING:
    from actors.core.ports import store as ports

    def _implements_every_port(
        store: ExportStore,
    ) -> tuple[
        ports.ApiStore,
        ports.ClaimStore,
        ports.RunStore,
        ports.ExecutionStore,
        ports.OutboxStore,
        ports.QuarantineStore,
        ports.ReconcilerStore,
        ports.SamplerStore,
        ports.InspectionStore,
    ]:
        """Never called: mypy checks here that the store is every port an actor is given."""
        return store, store, store, store, store, store, store, store, store
