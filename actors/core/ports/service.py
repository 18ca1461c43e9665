"""What the web side uses of the running service: the registry, wake-ups, metrics."""

from __future__ import annotations

from typing import Protocol

from actors.core.models import Registry


class RegistryView(Protocol):
    """The export-type registry in force (``actors.service.registry_source.RegistryHolder``).

    Readers take ``current`` once per decision and use that object throughout, so they never
    see a mix of an old and a reloaded registry.
    """

    @property
    def current(self) -> Registry:
        """The registry in force now."""
        ...


class PublisherWakeup(Protocol):
    """The API's side of the publisher's wake-up signal (``actors.service.wakeup.Wakeup``)."""

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


class Counter(Protocol):
    """A monotonic counter (one labelled child of a prometheus ``Counter``)."""

    def inc(self, amount: float = 1) -> None:
        """Add ``amount`` (≥ 0)."""
        ...


class LabelledCounter(Protocol):
    """A counter with labels (a prometheus ``Counter`` declared with label names)."""

    def labels(self, *values: str) -> Counter:
        """The child counter for these label values, in declaration order."""
        ...


class Gauge(Protocol):
    """A value that goes up and down (a prometheus ``Gauge`` without labels)."""

    def set(self, value: float) -> None:
        """Make the value ``value``."""
        ...


class ApiMetrics(Protocol):
    """The metrics the HTTP side records and serves (``actors.service.metrics.Metrics``)."""

    @property
    def task_created(self) -> LabelledCounter:
        """``export_task_created_total{type}``: tasks created through the API."""
        ...

    @property
    def task_completed(self) -> LabelledCounter:
        """``export_task_completed_total{type,status}``: the API counts its cancels."""
        ...

    @property
    def progress_streams(self) -> Gauge:
        """``export_progress_streams``: progress streams this instance serves now."""
        ...

    @property
    def progress_streams_refused(self) -> LabelledCounter:
        """``export_progress_streams_refused_total{reason}``: streams refused by a cap
        (``user``, ``instance``)."""
        ...

    @property
    def progress_feed_reads(self) -> Counter:
        """``export_progress_feed_reads_total``: database reads of the progress feed (one
        per interval while a stream is open, whatever their number)."""
        ...

    def exposition(self) -> bytes:
        """Every metric of this instance in the Prometheus text format, for ``/metrics``."""
        ...
