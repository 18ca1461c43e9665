"""The deployment files of deploy/compose hang together (issue 12 item 3).

No container runtime runs in the test environment, so the compose file is checked as data
(PyYAML): the services and their images, the start order, the one-shot topic set-up that
runs deploy/rocketmq/init-topics.sh (the script the test command's broker set-up runs too),
the rendered broker config with autoCreateTopicEnable=false, Prometheus with the alert
rules, and the service with the Procfile's command.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.metric_names import REPO

COMPOSE_DIR = REPO / "deploy" / "compose"
COMPOSE = COMPOSE_DIR / "docker-compose.yml"
ROCKETMQ_DIR = REPO / "deploy" / "rocketmq"


def compose() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return doc


def services() -> dict[str, Any]:
    return compose()["services"]


def depends_on(service: dict[str, Any]) -> dict[str, str]:
    """depends_on in either form, as service -> condition."""
    deps = service.get("depends_on", {})
    if isinstance(deps, list):
        return {name: "service_started" for name in deps}
    return {name: spec.get("condition", "service_started") for name, spec in deps.items()}


def host_mounts(service: dict[str, Any]) -> dict[str, Path]:
    """container path -> repository path of each bind mount of a relative host path."""
    mounts = {}
    for volume in service.get("volumes", []):
        host, container = volume.split(":")[:2]
        if host.startswith("."):
            mounts[container] = (COMPOSE_DIR / host).resolve()
    return mounts


def test_services_and_pinned_images() -> None:
    s = services()
    assert set(s) == {
        "rocketmq-namesrv",
        "rocketmq-broker",
        "rocketmq-topic-init",
        "mariadb",
        "export-center-migrate",
        "export-center",
        "prometheus",
        "minio",
        "minio-bucket-init",
    }
    for name, service in s.items():
        image = service["image"]
        assert ":" in image and not image.endswith(":latest"), f"{name}: pin the image tag"
    rocketmq = {s[n]["image"] for n in ("rocketmq-namesrv", "rocketmq-broker")}
    assert rocketmq == {s["rocketmq-topic-init"]["image"]} == {"apache/rocketmq:5.3.1"}


def test_every_bind_mount_exists_in_the_repository() -> None:
    for name, service in services().items():
        for container, path in host_mounts(service).items():
            assert path.exists(), f"{name}: {path} (mounted at {container}) does not exist"
    build = services()["export-center-migrate"]["build"]
    assert (COMPOSE_DIR / build["context"] / build["dockerfile"]).is_file()


def test_broker_runs_the_rendered_config_without_topic_auto_creation() -> None:
    broker = services()["rocketmq-broker"]
    assert depends_on(broker) == {"rocketmq-namesrv": "service_started"}
    assert host_mounts(broker)["/config"] == ROCKETMQ_DIR
    assert broker["command"] == "sh /config/render-broker-config.sh"
    assert broker["environment"]["ROCKETMQ_NAMESRV_ADDR"] == "rocketmq-namesrv:9876"
    template = (ROCKETMQ_DIR / "broker.conf.template").read_text()
    assert re.search(r"^autoCreateTopicEnable=false$", template, re.MULTILINE)
    assert re.search(r"^autoCreateSubscriptionGroup=false$", template, re.MULTILINE)


def test_topic_init_runs_the_one_script_the_tests_run() -> None:
    init = services()["rocketmq-topic-init"]
    assert depends_on(init) == {"rocketmq-broker": "service_started"}
    assert host_mounts(init)["/config"] == ROCKETMQ_DIR
    assert init["command"] == "sh /config/init-topics.sh"
    assert init["restart"] == "on-failure"
    env = init["environment"]
    template = (ROCKETMQ_DIR / "broker.conf.template").read_text()
    cluster = re.search(r"^brokerClusterName=(\S+)$", template, re.MULTILINE)
    assert cluster and env["ROCKETMQ_CLUSTER"] == cluster.group(1)
    assert env["ROCKETMQ_NAMESRV_ADDR"] == "rocketmq-namesrv:9876"
    assert env["MQ_TOPIC_PREFIX"].startswith("${MQ_TOPIC_PREFIX?")
    # the test command's broker set-up provisions through the same script
    assert '"$HERE/init-topics.sh"' in (ROCKETMQ_DIR / "broker.sh").read_text()


def test_init_topics_refuses_a_missing_setting() -> None:
    """The script names what is missing instead of provisioning a wrong cluster."""
    script = ROCKETMQ_DIR / "init-topics.sh"
    base = {"PATH": "/usr/bin:/bin", "ROCKETMQ_NAMESRV_ADDR": "ns:9876", "ROCKETMQ_CLUSTER": "C"}
    cases = {
        "ROCKETMQ_NAMESRV_ADDR": {k: v for k, v in base.items() if k != "ROCKETMQ_NAMESRV_ADDR"},
        "ROCKETMQ_CLUSTER": {k: v for k, v in base.items() if k != "ROCKETMQ_CLUSTER"},
        "MQ_TOPIC_PREFIX must be set": base,
        "only letters, digits": {**base, "MQ_TOPIC_PREFIX": "bad prefix;"},
    }
    for message, env in cases.items():
        done = subprocess.run(
            ["sh", str(script)], env=env, capture_output=True, text=True, timeout=30
        )
        assert done.returncode != 0 and message in done.stderr, (message, done.stderr)


def test_the_service_starts_after_migrate_and_topic_init_with_staged_switches_off() -> None:
    s = services()
    app = s["export-center"]
    procfile = (REPO / "Procfile").read_text().split(":", 1)[1].split()
    assert app["command"] == procfile
    assert depends_on(app) == {
        "mariadb": "service_healthy",
        "export-center-migrate": "service_completed_successfully",
        "rocketmq-topic-init": "service_completed_successfully",
    }
    assert s["export-center-migrate"]["command"] == ["export-center", "migrate"]
    assert depends_on(s["export-center-migrate"]) == {"mariadb": "service_healthy"}
    env = app["environment"]
    assert env["FILE_EXPORT_TRANSPORT"] == "rocketmq"
    assert env["FILE_EXPORT_DATABASE_URL"].startswith("mysql://")
    assert "@mariadb:3306/" in env["FILE_EXPORT_DATABASE_URL"]
    # the staged switches come from the environment file (deploy/env.example: false) and
    # default to off with the rocketmq transport; a value here would override the file
    for switch in ("RECONCILER", "PUBLISHER", "CONSUMER"):
        assert f"FILE_EXPORT_{switch}_ENABLED" not in env, switch
    assert app["env_file"] == [{"path": "./export-center.env", "required": False}]
    assert "healthz" in " ".join(app["healthcheck"]["test"])
    assert s["mariadb"]["image"].startswith("mariadb:10.11")


def test_prometheus_loads_the_alert_rules() -> None:
    prom = services()["prometheus"]
    mounts = host_mounts(prom)
    rules = REPO / "deploy" / "prometheus" / "alerts.yml"
    assert mounts["/etc/prometheus/alerts.yml"] == rules
    config_path = mounts["/etc/prometheus/prometheus.yml"]
    config = yaml.safe_load(config_path.read_text())
    assert config["rule_files"] == ["alerts.yml"]
    targets = config["scrape_configs"][0]["static_configs"][0]["targets"]
    assert targets == ["export-center:8080"]
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: run deploy/ensure-commands.sh promtool=prometheus"
    done = subprocess.run(
        [promtool, "check", "config", config_path.name],
        cwd=config_path.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_object_store_comes_with_its_profile_and_makes_the_bucket() -> None:
    """MinIO and its bucket set-up start only with ``--profile s3``; the bucket is the one
    the comment tells the operator to name in FILE_EXPORT_S3_BUCKET."""
    s = services()
    assert s["minio"]["profiles"] == s["minio-bucket-init"]["profiles"] == ["s3"]
    assert depends_on(s["minio-bucket-init"]) == {"minio": "service_healthy"}
    assert "mc mb --ignore-existing store/export-center" in s["minio-bucket-init"]["entrypoint"][-1]
    assert "FILE_EXPORT_S3_BUCKET=export-center" in COMPOSE.read_text()
    assert "minio" not in depends_on(s["export-center"])  # a local-storage stack needs none
