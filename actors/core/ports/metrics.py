"""The metrics the HTTP side records and serves: the few shapes of a prometheus metric it
uses, and the set of them (``ApiMetrics``)."""

from __future__ import annotations

from typing import Protocol


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
    """The metrics the HTTP side records and serves (``actors.plumbing.metrics.Metrics``)."""

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
