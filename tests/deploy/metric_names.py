"""Metric names in PromQL expressions and in a ``/metrics`` page, for the tests that keep
the alert rules and the dashboard in step with what the service exports.

Expressions are read with regular expressions over tokens, not parsed: quoted strings,
label matchers ``{...}``, range and offset brackets ``[...]`` and the label lists of
``by``/``without``/``on``/``ignoring``/``group_left``/``group_right`` are removed, then
every identifier not followed by ``(`` (a function or an aggregation) and not a PromQL
keyword is a metric name.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
ALERTS = REPO / "deploy" / "prometheus" / "alerts.yml"
ALERT_TESTS = REPO / "deploy" / "prometheus" / "alerts.test.yml"
DASHBOARD = REPO / "deploy" / "grafana" / "export-center.json"
OPERATIONS = REPO / "docs" / "operations.md"

#: Metric names the alert rules and the dashboard may use before the service exports
#: them (empty: every name is exported). Remove a name here when the code that exports it
#: lands; the metric-name test fails while a listed name is already exported, so this list
#: cannot go stale.
NOT_YET_EXPORTED: frozenset[str] = frozenset()

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_BRACES = re.compile(r"\{[^{}]*\}")
_BRACKETS = re.compile(r"\[[^\[\]]*\]")
_LABEL_LISTS = re.compile(
    r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", re.IGNORECASE
)
_IDENT = re.compile(r"(?<![\w:.])([a-zA-Z_:][a-zA-Z0-9_:]*)(?![\w:])(\s*\()?")
_KEYWORDS = frozenset(
    {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring"}
    | {"group_left", "group_right", "inf", "nan", "atan2"}
)


def metric_names_in(expr: str) -> set[str]:
    """Metric names used by one PromQL expression.

    Args:
        expr: a PromQL expression (an alert rule's ``expr``, a dashboard target).

    Returns:
        The names of the series it selects, e.g. ``{"export_task_completed_total"}``.
    """
    text = _STRINGS.sub(" ", expr)
    text = _BRACES.sub(" ", text)
    text = _BRACKETS.sub(" ", text)
    text = _LABEL_LISTS.sub(" ", text)
    return {
        m.group(1)
        for m in _IDENT.finditer(text)
        if m.group(2) is None and m.group(1).lower() not in _KEYWORDS
    }


def exported_names(page: str) -> set[str]:
    """Every series name a Prometheus text page can hold, from its ``# TYPE`` lines (a
    labelled metric with no child yet has only those) and its sample lines.

    A histogram ``h`` gives ``h_bucket``, ``h_sum``, ``h_count``; a counter is named as its
    TYPE line says (``…_total``).

    Args:
        page: the body of ``GET /metrics``.
    """
    names: set[str] = set()
    for line in page.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(maxsplit=3)
            names.add(name)
            if kind in ("histogram", "summary"):
                names |= {f"{name}_sum", f"{name}_count"}
            if kind == "histogram":
                names.add(f"{name}_bucket")
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{\s]", line, maxsplit=1)[0])
    return names


def alert_rules() -> list[dict[str, Any]]:
    """The alerting rules of ``deploy/prometheus/alerts.yml``, in file order."""
    doc = yaml.safe_load(ALERTS.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"] if "alert" in rule]


def dashboard() -> dict[str, Any]:
    """``deploy/grafana/export-center.json``, parsed."""
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def dashboard_exprs() -> list[tuple[str, str]]:
    """(panel title, expr) of every target of every panel of the dashboard, rows' nested
    panels included."""
    out = []
    stack = list(dashboard()["panels"])
    while stack:
        panel = stack.pop(0)
        stack.extend(panel.get("panels", []))
        for target in panel.get("targets", []):
            out.append((panel["title"], target["expr"]))
    return out


def used_names() -> dict[str, set[str]]:
    """Metric name -> where it is used (``alert NAME`` or ``panel TITLE``)."""
    uses: dict[str, set[str]] = {}
    for rule in alert_rules():
        for name in metric_names_in(rule["expr"]):
            uses.setdefault(name, set()).add(f"alert {rule['alert']}")
    for title, expr in dashboard_exprs():
        for name in metric_names_in(expr):
            uses.setdefault(name, set()).add(f"panel {title!r}")
    return uses
