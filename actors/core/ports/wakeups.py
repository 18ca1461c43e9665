"""Wake-ups the API gives after a commit: the publisher (a new outbox row) and a running
export of this process (its task was cancelled). Speed-ups only: the publisher polls and a
run elsewhere ends at its next fenced write."""

from __future__ import annotations

from typing import Protocol


class PublisherWakeup(Protocol):
    """The API's side of the publisher's wake-up signal (``actors.plumbing.wakeup.Wakeup``)."""

    def set(self) -> None:
        """Wake the publisher now: a create or retry has just committed its outbox row."""
        ...


class RunWakeup(Protocol):
    """The API's side of waking a running export.

    Implemented by ``actors.supervised.local_claims.LocalClaims``.
    """

    def cancelled(self, task_id: int) -> None:
        """``task_id`` was just cancelled: if a slot of this process runs it, make its
        watchdog look now rather than at the next heartbeat. A speed-up only: a run
        elsewhere ends at its next fenced write."""
        ...
