"""Prometheus metrics (§13), on a registry owned by one app instance.

The global default registry is never used: tests start many instances in one process and
would collide on duplicated series.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

_DURATION_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600)
#: Provider batch latency, seconds: past the 15 s read timeout up to the 60 s total limit
#: of one request (FILE_EXPORT_PROVIDER_REQUEST_TIMEOUT_SECONDS), so a slow Provider shows
#: where it is slow instead of piling into "+Inf".
_PROVIDER_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60)
#: The ``duty`` labels of ``export_file_delete_failures_total``.
FILE_DELETE_DUTIES = ("expire", "orphan_clean", "lease_recover")


class Metrics:
    """Every metric of §13 with the seed's names and labels, plus a few of our own
    (``export_actor_restarts_total``, ``export_registry_reload_failures_total``,
    ``export_consumer_no_claim_total``, ``export_outbox_send_total``,
    ``export_reconciler_errors_total``, ``export_provider_map_reload_failures_total``,
    ``export_file_delete_failures_total``)."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry(auto_describe=True)
        self.task_created = Counter(
            "export_task_created_total", "Export tasks created", ["type"], registry=r
        )
        self.task_completed = Counter(
            "export_task_completed_total",
            "Export tasks that reached SUCCEEDED, FAILED or CANCELLED",
            ["type", "status"],
            registry=r,
        )
        self.task_duration = Histogram(
            "export_task_duration_seconds",
            "Duration of one export run",
            ["type"],
            buckets=_DURATION_BUCKETS,
            registry=r,
        )
        self.task_queue_age = Gauge(
            "export_task_queue_age_seconds", "Age of the oldest due PENDING task", registry=r
        )
        self.outbox_pending = Gauge(
            "export_outbox_pending", "Outbox rows not yet sent (PENDING or CLAIMED)", registry=r
        )
        self.outbox_oldest_age = Gauge(
            "export_outbox_oldest_age_seconds", "Age of the oldest unsent outbox row", registry=r
        )
        self.outbox_max_attempt = Gauge(
            "export_outbox_max_attempt",
            "Largest attempt_count among unsent outbox rows",
            registry=r,
        )
        self.provider_request = Histogram(
            "export_provider_request_seconds",
            "Provider batch request latency",
            ["service", "type"],
            buckets=_PROVIDER_BUCKETS,
            registry=r,
        )
        self.provider_failure = Counter(
            "export_provider_failure_total",
            "Failed Provider batch requests",
            ["service", "type"],
            registry=r,
        )
        self.reconciler_action = Counter(
            "export_reconciler_action_total", "Reconciler actions taken", ["action"], registry=r
        )
        self.dlq_messages = Counter(
            "export_dlq_messages_total", "Messages received by the DLQ handler", registry=r
        )
        self.storage_bytes = Gauge(
            "export_storage_bytes", "Bytes used by stored export files", registry=r
        )
        self.storage_free_bytes = Gauge(
            "export_storage_free_bytes",
            "Bytes free where this instance stores export files (NaN for an S3 bucket,"
            " which has no free space to tell)",
            registry=r,
        )
        self.storage_writable = Gauge(
            "export_storage_writable",
            "1 if this instance's last storage probe could write, read back and delete a file",
            registry=r,
        )
        self.transport_up = Gauge(
            "export_transport_up",
            "1 if this instance's command transport is up (the embedded bus always is; for"
            " RocketMQ, the NameServer routes the command topic and the clients started)",
            registry=r,
        )
        self.transport_up.set(1)
        self.actor_restarts = Counter(
            "export_actor_restarts_total",
            "Actor restarts after an unexpected exception",
            ["actor"],
            registry=r,
        )
        self.registry_reload_failures = Counter(
            "export_registry_reload_failures_total",
            "Registry reloads rejected by validation (old registry kept)",
            registry=r,
        )
        self.consumer_no_claim = Counter(
            "export_consumer_no_claim_total",
            "Commands acked without running them, by reason: the task is gone, at a newer "
            "version, finished, running or not yet due, another claimer won, or its "
            "requester holds its fair share of slots",
            ["reason"],
            registry=r,
        )
        self.outbox_send = Counter(
            "export_outbox_send_total", "Outbox send attempts", ["result"], registry=r
        )
        self.reconciler_errors = Counter(
            "export_reconciler_errors_total",
            "Reconciler duties that failed one pass (the other duties still ran)",
            ["duty"],
            registry=r,
        )

        # -- operator signals: rejected reloads, files left behind (issue 22 item 5) -----
        self.provider_map_reload_failures = Counter(
            "export_provider_map_reload_failures_total",
            "Provider map reloads rejected by validation (old map kept)",
            registry=r,
        )
        self.file_delete_failures = Counter(
            "export_file_delete_failures_total",
            "Export files the reconciler failed to delete, by duty: expire (past retention; "
            "retried every pass), orphan_clean, lease_recover (a dead run's partial file)",
            ["duty"],
            registry=r,
        )
        for duty in FILE_DELETE_DUTIES:
            self.file_delete_failures.labels(duty)  # at 0, so increase() sees the first

        # -- the progress streams of the page (web/progress.py, web/progress_feed.py) -----
        self.progress_streams = Gauge(
            "export_progress_streams", "Progress streams this instance serves now", registry=r
        )
        self.progress_streams_refused = Counter(
            "export_progress_streams_refused_total",
            "Progress streams refused by a cap: user (FILE_EXPORT_PROGRESS_STREAMS_PER_USER) "
            "or instance (FILE_EXPORT_PROGRESS_STREAMS_PER_INSTANCE); the page polls instead",
            ["reason"],
            registry=r,
        )
        for reason in ("user", "instance"):
            self.progress_streams_refused.labels(reason)
        self.progress_feed_reads = Counter(
            "export_progress_feed_reads_total",
            "Database reads of the progress feed: one per interval while any stream is open",
            registry=r,
        )

        # -- CPU and memory: the service process, and its export workers ----------------
        # process_cpu_seconds_total, process_resident_memory_bytes … of the service process
        # (the standard collector); the export workers are its child processes.
        ProcessCollector(registry=r)
        r.register(WorkerProcessCollector())

    def exposition(self) -> bytes:
        """Every metric of this instance in the Prometheus text format (``/metrics``;
        ``actors.core.ports.metrics.ApiMetrics``)."""
        return generate_latest(self.registry)

    # ProviderObserver protocol (actors.pipeline.provider.client)
    def observe_request(self, service: str, export_type: str, seconds: float, ok: bool) -> None:
        self.provider_request.labels(service, export_type).observe(seconds)
        if not ok:
            self.provider_failure.labels(service, export_type).inc()


class WorkerProcessCollector(Collector):
    """The export worker processes' share of CPU and memory, which the standard
    ``process_*`` metrics of the service process leave out (Linux ``/proc``; nothing
    elsewhere).

    * ``export_workers_cpu_seconds_total``: CPU seconds, user and system, of the child
      processes that ended and were reaped (``os.times``): one export worker per run.
    * ``export_workers_resident_memory_bytes``: resident memory of the child processes
      alive now (the running workers and the spare).
    """

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        times = os.times()
        cpu = CounterMetricFamily(
            "export_workers_cpu_seconds_total",
            "CPU seconds of this instance's finished export worker processes",
        )
        cpu.add_metric([], times.children_user + times.children_system)
        yield cpu
        rss = GaugeMetricFamily(
            "export_workers_resident_memory_bytes",
            "Resident memory of this instance's export worker processes alive now, bytes",
        )
        rss.add_metric([], float(sum(_rss_bytes(pid) for pid in _child_pids())))
        yield rss


def _child_pids() -> list[int]:
    """Process ids of this process's children (``/proc/self/task/*/children``)."""
    pids: list[int] = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return pids
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/children") as f:
                pids.extend(int(p) for p in f.read().split())
        except (OSError, ValueError):
            continue
    return pids


def _rss_bytes(pid: int) -> int:
    """VmRSS of ``pid`` in bytes; 0 when it is gone or unreadable."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0
