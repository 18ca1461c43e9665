"""What this process's executors hold, shared by its consumer slots and its reconciler.

Three jobs, the first two about database blips:

* **Claim exclusivity within the process.** A slot takes a task here before it claims it
  and gives it back when its run is settled. A second delivery of the same task to
  another slot meanwhile is acked at once (it would be "running elsewhere" anyway). That
  is what lets the store recognise a claim whose COMMIT answer was lost: after a re-run
  finds the task RUNNING at that version under this instance's ``lease_owner``, no other
  slot of this process can be the one that claimed it (``ExportStore.claim_task``).
* **Causes of outcomes that could not be written.** When the database stays unreachable
  past a run's lease margin, the slot gives up settling (the reconciler will recover the
  lease) and notes here why the run ended — the export's own error, or "finished but the
  result could not be saved". This process's reconciler uses the note for the message
  the user finally sees, instead of "executor lost". (Another instance's reconciler
  cannot see it and says the lease expired, naming both possible causes.)
* **Waking a run whose task was cancelled.** A slot registers a wake-up for the run it
  executes (``track_run``); when the API of this process cancels that task it calls
  ``cancelled``, and the run's watchdog renews the lease at once instead of at the next
  heartbeat — the renewal matches 0 rows and the run aborts. A run on another instance
  is not reached this way: it aborts at its next batch boundary, where its fenced
  progress write matches 0 rows (``actors.pipeline.runner``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable


class LocalClaims:
    """In-memory, per process; everything here is an optimisation of messages and of a
    rare race, never a source of truth (the database is).

    Args:
        max_notes: notes kept at most; the oldest are dropped first.
    """

    def __init__(self, max_notes: int = 1000) -> None:
        self._held: set[int] = set()
        self._runs: dict[int, Callable[[], None]] = {}
        self._notes: OrderedDict[tuple[int, int], str] = OrderedDict()
        self._max_notes = max_notes

    def take(self, task_id: int) -> bool:
        """Hold ``task_id`` for one slot; False if another slot of this process holds it."""
        if task_id in self._held:
            return False
        self._held.add(task_id)
        return True

    def release(self, task_id: int) -> None:
        """The slot is done with the task (settled, or given up)."""
        self._held.discard(task_id)

    def holds(self, task_id: int) -> bool:
        return task_id in self._held

    def track_run(self, task_id: int, wake: Callable[[], None]) -> None:
        """A slot runs ``task_id``; ``wake`` makes its watchdog look at the task now."""
        self._runs[task_id] = wake

    def untrack_run(self, task_id: int) -> None:
        """The run of ``task_id`` has ended."""
        self._runs.pop(task_id, None)

    def cancelled(self, task_id: int) -> None:
        """The task was just cancelled (its CANCELLED status committed): wake its run if
        one of this process's slots executes it; otherwise do nothing. Only a speed-up:
        the database is the truth, and the run would find out at its next fenced write."""
        wake = self._runs.get(task_id)
        if wake is not None:
            wake()

    def note_unsettled(self, task_id: int, dispatch_version: int, cause: str) -> None:
        """Remember why attempt ``dispatch_version`` of ``task_id`` ended, because its
        outcome could not be written before the lease margin."""
        self._notes[(task_id, dispatch_version)] = cause
        self._notes.move_to_end((task_id, dispatch_version))
        while len(self._notes) > self._max_notes:
            self._notes.popitem(last=False)

    def take_note(self, task_id: int, dispatch_version: int) -> str | None:
        """The noted cause for that attempt, removed; ``None`` if there is none."""
        return self._notes.pop((task_id, dispatch_version), None)
