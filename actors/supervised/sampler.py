"""The gauge sampler: refreshes the queue, outbox and storage gauges on every instance.

The queue and outbox gauges are database-wide (every instance reads the same figures); the
storage gauges are this instance's view of its storage. They used to be refreshed by the
reconciler only, so an instance with the reconciler switched off read 0 — a staged roll-out
showed an empty queue exactly where nothing was dispatching. Every instance now runs this
actor, every ``FILE_EXPORT_METRICS_SAMPLE_SECONDS``.

Each pass also creates the labelled counter series the alert rules rate over (every
registered export type × outcome, every reconciler action, both send results) at 0: Prometheus's
``increase()`` takes a series' first sample as its baseline, so an event counted before
its series was first scraped would never show in an alert.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

import trio

from actors.core.errors import TransientDatabaseError
from actors.core.health import Component, HealthBoard
from actors.core.models import TaskStatus
from actors.core.ports.registry import RegistryView
from actors.core.ports.storage import ExportStorage
from actors.core.ports.store import SamplerStore
from actors.plumbing.metrics import Metrics

log = logging.getLogger(__name__)

#: The reconciler's ``export_reconciler_action_total{action}`` labels
#: (actors/supervised/reconciler.py).
RECONCILER_ACTIONS = ("redispatch", "lease_recover", "outbox_release", "expire", "orphan_clean")
#: The publisher's ``export_outbox_send_total{result}`` labels (actors/supervised/publisher.py).
SEND_RESULTS = ("sent", "failed")
#: Terminal statuses counted by ``export_task_completed_total{type,status}``.
COMPLETED_STATUSES = (TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.CANCELLED)


class GaugeSampler:
    """Refreshes the gauges every ``period`` seconds (see the module docstring).

    Args:
        store: the store's sampling port (``sample_queues``).
        storage: this instance's export storage (``probe``).
        registry: the export types in force, for the counter series created at 0.
        metrics: where the gauges are set.
        period: seconds between two passes.
        health: where the storage probe's result is reported (``/healthz/details``, and
            the claim gate, which claims only while the storage is known to work).
        on_storage_up: called when a probe passes after none had, or after one failed:
            the instance's claims may start (its claim rounds are woken at once).
    """

    def __init__(
        self,
        store: SamplerStore,
        storage: ExportStorage,
        registry: RegistryView,
        metrics: Metrics,
        period: float,
        health: HealthBoard | None = None,
        on_storage_up: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.storage = storage
        self.registry = registry
        self.metrics = metrics
        self.period = period
        self.health = health if health is not None else HealthBoard()
        self.on_storage_up = on_storage_up
        self._storage_error: str | None = None

    async def run(self) -> None:
        """Sample forever; a pass that fails is logged and the next one tries again."""
        while True:
            await self.sample_once()
            await trio.sleep(self.period)

    async def sample_once(self) -> None:
        """One pass: counter series, storage probe, queue and outbox gauges."""
        m = self.metrics
        for export_type in self.registry.current.definitions:
            for status in COMPLETED_STATUSES:
                m.task_completed.labels(export_type, status.value)
        for action in RECONCILER_ACTIONS:
            m.reconciler_action.labels(action)
        for result in SEND_RESULTS:
            m.outbox_send.labels(result)

        probe = await self.storage.probe()
        m.storage_writable.set(1 if probe.writable else 0)
        problem = "" if probe.writable else (probe.error or "not writable")
        if self.health.report(Component.STORAGE, probe.writable, problem) and probe.writable:
            self.on_storage_up()
        # NaN where the storage cannot tell (a bucket): the low-space alert stays silent
        # rather than seeing 0 bytes free.
        m.storage_free_bytes.set(math.nan if probe.free_bytes is None else probe.free_bytes)
        if probe.error != self._storage_error:
            # One line when the storage stops being writable and one when it recovers.
            if probe.error is None:
                log.info("storage is writable again")
            else:
                log.warning("storage probe failed: %s", probe.error)
            self._storage_error = probe.error

        try:
            sample = await self.store.sample_queues()
        except TransientDatabaseError as exc:
            # The gauges keep their last values; the database health is logged elsewhere.
            log.debug("queue gauges not refreshed: %s", exc)
            return
        m.task_queue_age.set(sample.queue_age_seconds)
        m.outbox_pending.set(sample.outbox_pending)
        m.outbox_oldest_age.set(sample.outbox_oldest_age_seconds)
        m.outbox_max_attempt.set(sample.outbox_max_attempt)
