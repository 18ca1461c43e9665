"""Every metric name the alert rules and the Grafana dashboard use is one the real service
exports (issue 12 item 2): a renamed metric must not leave an alert that can never fire or
a panel that stays empty.

The service is the real process (``python -m actors`` on embedded defaults, a free port, a
temporary data directory); its ``/metrics`` page is scraped over HTTP. Names the code does
not export yet are listed in ``NOT_YET_EXPORTED`` (tests/deploy/metric_names.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.deploy.metric_names import (
    NOT_YET_EXPORTED,
    OPERATIONS,
    REPO,
    dashboard,
    dashboard_exprs,
    exported_names,
    metric_names_in,
    used_names,
)

READY = re.compile(r"ready at (http://127\.0\.0\.1:\d+)")


@pytest.fixture(scope="module")
def metrics_page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``GET /metrics`` of a freshly started service process."""
    tmp = tmp_path_factory.mktemp("metric-names")
    log_path = tmp / "serve.log"
    env = {
        **os.environ,
        "FILE_EXPORT_DATA_DIR": str(tmp / "data"),
        "FILE_EXPORT_HTTP_BIND": "127.0.0.1:0",
        "FILE_EXPORT_JWT_SECRET": "metric-names-test-secret-" + "z" * 32,
        "FILE_EXPORT_INSTANCE_ID": "metric-names",
    }
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "actors"],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    try:
        deadline = time.monotonic() + 60
        while not (m := READY.search(log_path.read_text())):
            assert proc.poll() is None, f"the service exited:\n{log_path.read_text()}"
            assert time.monotonic() < deadline, f"not ready in 60 s:\n{log_path.read_text()}"
            time.sleep(0.05)  # polls the log for the ready line (a condition, not a delay)
        response = httpx.get(m.group(1) + "/metrics", timeout=10)
        assert response.status_code == 200, response.text
        yield response.text
    finally:
        proc.kill()
        proc.wait()


def test_every_metric_used_by_alerts_and_dashboard_is_exported(metrics_page: str) -> None:
    names = exported_names(metrics_page)
    missing = {
        name: sorted(where)
        for name, where in used_names().items()
        if name not in names and name not in NOT_YET_EXPORTED
    }
    assert not missing, f"used but not exported by the service: {missing}"


def test_not_yet_exported_lists_only_missing_names_in_use(metrics_page: str) -> None:
    """NOT_YET_EXPORTED shrinks as the code lands: a listed name that the service now
    exports, or that nothing uses, must be removed from it."""
    names = exported_names(metrics_page)
    landed = sorted(NOT_YET_EXPORTED & names)
    assert not landed, f"exported now: remove {landed} from NOT_YET_EXPORTED"
    unused = sorted(NOT_YET_EXPORTED - used_names().keys())
    assert not unused, f"used by no alert or panel: remove {unused} from NOT_YET_EXPORTED"


def test_metric_name_tokens() -> None:
    """The regex reader finds series names and nothing else (functions, label names,
    keywords, durations, numbers, strings)."""
    expr = (
        'sum by (job, type) (increase(export_task_completed_total{status="FAILED",'
        ' type=~"export_x.*"}[10m] offset 5m)) / on (job) group_left (type)'
        " max without (instance) (export_outbox_pending) > bool 1e3"
        " and histogram_quantile(0.95, rate(export_provider_request_seconds_bucket[5m:1m]))"
        " unless absent(up)"
    )
    assert metric_names_in(expr) == {
        "export_task_completed_total",
        "export_outbox_pending",
        "export_provider_request_seconds_bucket",
        "up",
    }


def test_dashboard_loads_as_a_grafana_dashboard() -> None:
    """The fields Grafana's dashboard model needs to import the file: a uid, a title, a
    schema version, and panels with an id, a type, a position and (except rows) targets
    with a refId and an expression."""
    dash = dashboard()
    assert dash["uid"] == "export-center" and dash["title"]
    assert isinstance(dash["schemaVersion"], int)
    ids = []
    for panel in dash["panels"]:
        ids.append(panel["id"])
        assert panel["type"] and panel["title"]
        assert set(panel["gridPos"]) == {"h", "w", "x", "y"}
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24, panel["title"]
        if panel["type"] == "row":
            continue
        assert panel["targets"], panel["title"]
        ref_ids = [t["refId"] for t in panel["targets"]]
        assert len(set(ref_ids)) == len(ref_ids), panel["title"]
        assert all(t["expr"].strip() for t in panel["targets"])
    assert len(set(ids)) == len(ids), "panel ids must be unique"


def test_dashboard_covers_the_issue_topics() -> None:
    """Throughput, queue age, outbox, failures by type, Provider latency, storage."""
    names = set().union(*(metric_names_in(expr) for _, expr in dashboard_exprs()))
    for topic in (
        "export_task_created_total",
        "export_task_completed_total",
        "export_task_queue_age_seconds",
        "export_outbox_oldest_age_seconds",
        "export_outbox_pending",
        "export_provider_request_seconds_bucket",
        "export_storage_bytes",
        "export_storage_free_bytes",
    ):
        assert topic in names, topic


def test_operations_guide_explains_every_metric(metrics_page: str) -> None:
    """docs/operations.md has a row for every metric family the service exports and for
    every name it will export (NOT_YET_EXPORTED)."""
    families = {
        line.split()[2]
        for line in metrics_page.splitlines()
        if line.startswith("# TYPE ") and not line.split()[2].endswith("_created")
    }
    guide = OPERATIONS.read_text()
    missing = sorted(n for n in families | NOT_YET_EXPORTED if f"| `{n}` |" not in guide)
    assert not missing, f"not explained in docs/operations.md: {missing}"
