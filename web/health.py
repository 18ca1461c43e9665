"""Readiness of the database for ``/healthz``: a cheap probe, cached briefly.

Load balancers poll ``/healthz`` often, from several places; the probe runs at most once
per ``ttl`` seconds whatever the number of callers (concurrent callers share one probe),
and never waits longer than ``timeout`` seconds.
"""

from __future__ import annotations

import logging

import trio

from actors.core.errors import TransientDatabaseError
from actors.core.ports.store import ApiStore

log = logging.getLogger(__name__)

#: Retry budget of one probe, seconds.
PROBE_RETRY_SECONDS = 0.1


class DatabaseProbe:
    """Is the database reachable now? ``SELECT`` of the DB clock, one fresh-connection
    retry at most, cached.

    Args:
        store: the service's store (its pool is used; a dead pooled connection is
            replaced by the store's own retry).
        timeout: seconds one probe may take; slower counts as unreachable.
        ttl: seconds a result is reused.
    """

    def __init__(self, store: ApiStore, *, timeout: float = 1.0, ttl: float = 1.0) -> None:
        # Enough for one retry on a fresh connection (a dead pooled one), no more.
        self._store = store.with_retry_budget(min(timeout, PROBE_RETRY_SECONDS))
        self.timeout = timeout
        self.ttl = ttl
        self._lock = trio.Lock()
        self._checked_at: float | None = None
        self._ok = False
        self.probes = 0

    def _fresh(self) -> bool:
        return self._checked_at is not None and trio.current_time() - self._checked_at < self.ttl

    async def reachable(self) -> bool:
        if self._fresh():
            return self._ok
        async with self._lock:
            if self._fresh():  # another caller probed while this one waited
                return self._ok
            self.probes += 1
            ok = False
            with trio.move_on_after(self.timeout):
                try:
                    await self._store.db_now()
                    ok = True
                except TransientDatabaseError as exc:
                    log.info("readiness probe: database unreachable: %s", exc)
            if ok != self._ok and self._checked_at is not None:
                log.warning("readiness: database %s", "reachable" if ok else "unreachable")
            self._ok = ok
            self._checked_at = trio.current_time()
            return ok
