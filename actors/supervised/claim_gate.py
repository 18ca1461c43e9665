"""The claim gate: every claim by one instance's consumer slots passes through it.

It carries out the fair-share rules of ``actors.core.fairness``:

* ``claim_commanded`` — a command arrived. If the task is due and its requester already
  holds its share of this instance's slots, the claim is *deferred*: no claim is tried,
  the caller acks (and marks the command seen, ``actors.core.dispatch.marks_command_seen``),
  and the task stays PENDING at the same version (no re-send, no new version: the
  reconciler stays the only re-send path, and leaves a seen command alone). Otherwise
  the ordinary fenced claim runs.
* ``claim_next`` — a slot is free (a run settled, or a command needed no run). It claims
  the fairest due PENDING task straight from the database, with the same fenced claim at
  the task's current version. That task's own command, still in flight or arriving
  later, then meets a RUNNING or finished task and is acked as a plain no-claim.

Neither claims while the instance's storage is not known to work (its probe failed, or
has not run since the start): a run could only end at its upload, spending an attempt of
every task it took — a wrong secret key or a missing bucket would burn them all. A
command is then acked unclaimed (``STORAGE_UNAVAILABLE``) and marked seen; its task waits
PENDING at the same version, and the idle slots' claim rounds pick it up once the probe
passes.

The instance's slots decide and claim under one lock, so the count of slots a requester
holds here cannot change between the decision and the claim. Time decisions stay in SQL
(DB clock); the round-robin memory is a counter, not a clock.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable

import trio

from actors.core import fairness
from actors.core.command_message import Command
from actors.core.dispatch import NoClaim
from actors.core.models import Task
from actors.core.outcomes import ClaimResult
from actors.core.ports.store import ClaimStore
from actors.plumbing.config import Settings
from actors.supervised.local_claims import LocalClaims

#: Requesters remembered for round robin; the least recently served are forgotten first,
#: which only ranks them as "never served" (first), as they were.
_SERVED_MEMORY = 4096


class ClaimGate:
    """Fair-share claims for the consumer slots of one instance.

    Args:
        store: the export store.
        settings: ``instance_id`` (the ``lease_owner``), lease and deadline lengths,
            ``consumer_concurrency`` (N) and ``consumer_reserved_slots``.
        storage_ready: whether the instance's storage is known to work now (its last
            probe passed); claims wait while it is not. Always, by default (tests of
            claims alone).
    """

    def __init__(
        self,
        store: ClaimStore,
        settings: Settings,
        storage_ready: Callable[[], bool] = lambda: True,
    ) -> None:
        self.store = store
        self.storage_ready = storage_ready
        self.owner = settings.instance_id
        self.lease_seconds = settings.task_lease_seconds
        self.max_duration_seconds = settings.max_duration_minutes * 60
        self.share = fairness.SlotShare(
            settings.consumer_concurrency, settings.consumer_reserved_slots
        )
        self._lock = trio.Lock()
        self._empty_round: int | None = None  # the last claim round that found nothing
        self._served_seq = itertools.count()
        self._last_served: OrderedDict[fairness.Requester, int] = OrderedDict()

    async def claim_commanded(self, command: Command) -> ClaimResult:
        """Claim the task a command names, unless fair share defers it.

        Returns:
            The claimed task, or the no-claim branch (``DEFERRED_FAIR_SHARE`` included).

        Raises:
            Whatever the store raises; nothing was claimed then.
        """
        if not self.storage_ready():
            return ClaimResult(None, NoClaim.STORAGE_UNAVAILABLE)
        async with self._lock:
            # One slot can never be over its share when free: skip the read.
            if self.share.slots > 1:
                load = await self.store.fair_share_load(self.owner)
                due = load.find(command.task_id)
                if (
                    due is not None
                    and due.dispatch_version == command.dispatch_version
                    and not fairness.may_claim(due.requester, load, self.share)
                ):
                    return ClaimResult(None, NoClaim.DEFERRED_FAIR_SHARE)
            result = await self._claim(command.task_id, command.dispatch_version)
            return result

    async def claim_next(self, local: LocalClaims, round_number: int | None = None) -> Task | None:
        """Claim the fairest due PENDING task this instance may run now.

        Args:
            local: what this process's slots hold. A candidate another slot holds is
                skipped; the claimed task is left held (``local.take``), and the caller
                releases it once its run is settled — so a claim re-run after a lost
                COMMIT can tell its own claim from another slot's (``LocalClaims``).
            round_number: the claim round (``actors.plumbing.wakeup.ClaimRounds``) that woke an
                idle slot, ``None`` for a slot that has just become free. Once one slot
                found nothing to claim in a round, the other slots of that round do not
                read the database again: an idle instance costs one read per round.

        Returns:
            The claimed task, or ``None`` when no due task may run here now.

        Raises:
            Whatever the store raises; nothing was claimed then.
        """
        if not self.storage_ready():
            return None
        async with self._lock:
            if round_number is not None and round_number == self._empty_round:
                return None
            load = await self.store.fair_share_load(self.owner)
            for candidate in fairness.claim_order(load, self.share, self._last_served):
                if not local.take(candidate.task_id):
                    continue  # a delivery of its command is being handled by another slot
                claimed: Task | None = None
                try:
                    claimed = (
                        await self._claim(candidate.task_id, candidate.dispatch_version)
                    ).task
                finally:
                    if claimed is None:
                        local.release(candidate.task_id)
                if claimed is not None:
                    return claimed
            if round_number is not None:
                self._empty_round = round_number
            return None  # nothing due, nothing allowed, or every candidate taken meanwhile

    async def _claim(self, task_id: int, dispatch_version: int) -> ClaimResult:
        result = await self.store.claim_task(
            task_id, dispatch_version, self.owner, self.lease_seconds, self.max_duration_seconds
        )
        if result.task is not None:
            self._served(result.task)
        return result

    def _served(self, task: Task) -> None:
        requester = fairness.Requester(task.tenant_id, task.app_code, task.requested_by)
        self._last_served[requester] = next(self._served_seq)
        self._last_served.move_to_end(requester)
        while len(self._last_served) > _SERVED_MEMORY:
            self._last_served.popitem(last=False)
