"""Production defaults are production's (issue 22 item 6, item 8): what an instance gets
when a variable is not set, by store and transport (actors/plumbing/config.py,
deploy/env.example)."""

from __future__ import annotations

import pytest

from actors.plumbing.config_loading import load_settings

#: Variables these tests decide; the caller's own values must not reach them.
DECIDED = (
    "FILE_EXPORT_DEMO_PROVIDER",
    "FILE_EXPORT_TRANSPORT",
    "FILE_EXPORT_DATABASE_URL",
    "MQ_TOPIC_PREFIX",
    "ROCKETMQ_NAME_SERVER",
    "FILE_EXPORT_WORKER_NICE",
    "FILE_EXPORT_WORKER_SCHED_IDLE",
)
ROCKETMQ = {"transport": "rocketmq", "mq_topic_prefix": "", "rocketmq_name_server": "ns:9876"}
MYSQL = {"database_url": "mysql://u:p@db:3306/export_center"}


@pytest.fixture(autouse=True)
def _no_caller_values(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in DECIDED:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("overrides", "mounted"),
    [
        ({}, True),  # embedded: SQLite under the data directory, in-process bus
        ({"database_url": "sqlite:///tmp/x.db"}, True),
        (MYSQL, False),
        (ROCKETMQ, False),
        ({**ROCKETMQ, **MYSQL}, False),
    ],
    ids=["default", "sqlite-file", "mysql", "rocketmq", "mysql-rocketmq"],
)
def test_the_demo_provider_is_mounted_only_on_an_embedded_instance(
    overrides: dict[str, str], mounted: bool
) -> None:
    """A try-out on one machine has the demo data; a MySQL or RocketMQ instance does not
    unless FILE_EXPORT_DEMO_PROVIDER asks for it (docs/operations.md, deploy order)."""
    assert load_settings(**overrides).demo_provider is mounted


@pytest.mark.parametrize("overrides", [{}, MYSQL, ROCKETMQ])
@pytest.mark.parametrize("raw", ["true", "false"])
def test_an_explicit_demo_provider_setting_wins(
    monkeypatch: pytest.MonkeyPatch, overrides: dict[str, str], raw: str
) -> None:
    monkeypatch.setenv("FILE_EXPORT_DEMO_PROVIDER", raw)
    assert load_settings(**overrides).demo_provider is (raw == "true")


def test_export_workers_are_niced_but_not_idle_policy_by_default() -> None:
    """SCHED_IDLE workers starve beside a neighbour's load; nice +10 keeps the API ahead
    and still gives them a share (README, "Benchmarks": deploy/bench/bench_priority.py)."""
    settings = load_settings()
    assert (settings.worker_nice, settings.worker_sched_idle) == (10, False)
