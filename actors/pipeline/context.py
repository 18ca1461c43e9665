"""One execution attempt's context, shared by the executor (``actors/supervised/execution.py``), its
lease keeper and the pipeline.

``RunContext`` carries the claimed task, its export file (``actors/pipeline/run_file.py``)
and the abort machinery: a trio cancel scope for the run; cancelling it kills the run's
export worker process.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import trio

from actors.core.models import Task
from actors.core.outcomes import AbortReason
from actors.pipeline.run_file import RunFile


@dataclass
class RunContext:
    """One execution attempt: the claimed task, its file, and its abort machinery.

    ``abort`` records the first reason and cancels ``scope`` (the run's worker process
    dies with it). ``file`` is the attempt's export file: the pipeline creates it, the
    executor keeps or deletes it as the settlement says (§9.5).
    """

    task: Task
    owner: str
    file: RunFile
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    abort_reason: AbortReason | None = None
    #: Process id of the run's export worker while it runs (tests and diagnostics).
    worker_pid: int | None = None
    #: ``trio.current_time()`` of the claim or of the last lease renewal that landed:
    #: the watchdog and the settle step count the lease margin from it.
    lease_renewed_at: float = 0.0
    #: Set to make the watchdog renew now instead of at its next heartbeat (a cancel of
    #: the task, ``actors.supervised.local_claims.LocalClaims.cancelled``); the watchdog clears it.
    renew_now: trio.Event = field(default_factory=trio.Event)
    #: The run was woken because its task was cancelled: a renewal that then matches 0
    #: rows aborts it as ``AbortReason.CANCELLED``.
    cancel_requested: bool = False

    def wake_for_cancel(self) -> None:
        """The task was cancelled: let the watchdog check the lease now."""
        self.cancel_requested = True
        self.renew_now.set()

    def abort(self, reason: AbortReason) -> None:
        if self.abort_reason is None:
            self.abort_reason = reason
        self.scope.cancel()
