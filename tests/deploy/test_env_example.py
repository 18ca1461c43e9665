"""deploy/env.example and the README's table list every environment variable the service
reads, and every variable they list is read: the names are compared with the Settings
fields' variable names, each variable is set and seen to change its setting, and the
values env.example shows are loaded through the real settings loader and compared with
the defaults.
"""

from __future__ import annotations

import re

import pytest

from actors.plumbing.config_loading import environment_variables, load_settings
from tests.deploy.metric_names import REPO

ENV_EXAMPLE = REPO / "deploy" / "env.example"
#: a variable line, active ("NAME=value") or showing the default ("# NAME=value")
LINE = re.compile(r"^(#\s?)?([A-Z][A-Z0-9_]*)=(.*)$")
#: set in the example to a value other than the embedded default, on purpose: the staged
#: switches are written out as off (the default with the rocketmq transport)
STAGED_SWITCHES = {
    "FILE_EXPORT_RECONCILER_ENABLED",
    "FILE_EXPORT_PUBLISHER_ENABLED",
    "FILE_EXPORT_CONSUMER_ENABLED",
}


def settings_variables() -> dict[str, str]:
    """variable name -> Settings field name, for every field."""
    return environment_variables()


def example_lines() -> dict[str, tuple[bool, str]]:
    """variable -> (active, value) for every variable line of env.example."""
    out: dict[str, tuple[bool, str]] = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        if m := LINE.match(line):
            assert m.group(2) not in out, f"{m.group(2)} twice in env.example"
            out[m.group(2)] = (m.group(1) is None, m.group(3))
    return out


def test_env_example_names_every_variable_the_service_reads() -> None:
    documented = set(example_lines())
    read = set(settings_variables())
    assert not read - documented, f"missing from deploy/env.example: {sorted(read - documented)}"
    assert not documented - read, f"not read by the service: {sorted(documented - read)}"


def test_every_variable_has_a_comment_above_it() -> None:
    lines = ENV_EXAMPLE.read_text().splitlines()
    for i, line in enumerate(lines):
        if LINE.match(line):
            above = lines[i - 1]
            assert above.startswith("# ") and not LINE.match(above), f"no comment for {line}"


def test_staged_switches_are_off_and_active() -> None:
    lines = example_lines()
    for name in STAGED_SWITCHES:
        assert lines[name] == (True, "false"), name


def test_the_values_shown_are_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every value the example shows, loaded by the real loader, gives the same settings as
    no variable at all (except the staged switches, written out as off)."""
    variables = settings_variables()
    for name in variables:
        monkeypatch.delenv(name, raising=False)
    defaults = load_settings()
    for name, (_, value) in example_lines().items():
        if value:  # empty: no fixed default, the comment says what applies
            monkeypatch.setenv(name, value)
    shown = load_settings()
    for var, field in variables.items():
        if var in STAGED_SWITCHES:
            assert getattr(shown, field) is False
            continue
        if field == "instance_id":  # host:pid, different per process
            continue
        assert getattr(shown, field) == getattr(defaults, field), var


#: a value other than the default for every variable, valid on its own (with
#: COMPANIONS), so that setting the variable alone must change what the service reads
OTHER_VALUE = {
    "FILE_EXPORT_DATA_DIR": "/srv/export-center",
    "FILE_EXPORT_DATABASE_URL": "mysql://u:p@db:3306/export_center",
    "FILE_EXPORT_STORAGE_DIR": "/srv/files",
    "FILE_EXPORT_STORAGE": "s3",
    "FILE_EXPORT_S3_ENDPOINT": "https://minio.internal:9000",
    "FILE_EXPORT_S3_BUCKET": "exports",
    "FILE_EXPORT_S3_REGION": "cn-hangzhou",
    "FILE_EXPORT_S3_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "FILE_EXPORT_S3_SECRET_ACCESS_KEY": "secret",
    "FILE_EXPORT_S3_ADDRESSING": "virtual",
    "FILE_EXPORT_S3_CA_BUNDLE": "/etc/ssl/private-ca.pem",
    "FILE_EXPORT_S3_PART_SIZE_MB": "16",
    "FILE_EXPORT_S3_PUBLIC_ENDPOINT": "https://files.example.com",
    "FILE_EXPORT_DOWNLOAD_MODE": "redirect",
    "FILE_EXPORT_DOWNLOAD_URL_SECONDS": "60",
    "FILE_EXPORT_TRANSPORT": "rocketmq",
    "FILE_EXPORT_HTTP_BIND": "0.0.0.0:9090",
    "FILE_EXPORT_REGISTRY": "/etc/export-center/registry.yaml",
    "FILE_EXPORT_PROVIDER_MAP": "/etc/export-center/providers.yaml",
    "FILE_EXPORT_PROVIDER_URLS": '{"crm": "http://crm:8000"}',
    "FILE_EXPORT_DEMO_PROVIDER": "false",
    "FILE_EXPORT_JWT_SECRET": "k" * 32,
    "FILE_EXPORT_JWT_JWKS_URL": "https://idp.example/.well-known/jwks.json",
    "FILE_EXPORT_JWT_PUBLIC_KEY_FILE": "/etc/export-center/idp.pem",
    "FILE_EXPORT_JWT_ALGORITHMS": "RS256",
    "FILE_EXPORT_JWT_ISSUER": "https://idp.example",
    "FILE_EXPORT_OIDC_ISSUER": "https://idp.example/realms/company",
    "FILE_EXPORT_OIDC_CLIENT_ID": "export-center",
    "FILE_EXPORT_OIDC_CLIENT_SECRET": "client-secret",
    "FILE_EXPORT_OIDC_SCOPES": "openid profile export_center",
    "FILE_EXPORT_OIDC_REDIRECT_URL": "https://exports.example/auth/callback",
    "FILE_EXPORT_OIDC_DISPLAY_NAME": "Acme SSO",
    "FILE_EXPORT_JWT_AUDIENCE": "export-center",
    "FILE_EXPORT_JWT_CLAIM_USER": "uid",
    "FILE_EXPORT_JWT_CLAIM_TENANT": "org",
    "FILE_EXPORT_JWT_CLAIM_APP": "app",
    "FILE_EXPORT_JWT_CLAIM_PERMS": "roles",
    "INTERNAL_SERVICE_TOKEN": "internal",
    "FILE_EXPORT_INSTANCE_ID": "pod-7",
    "FILE_EXPORT_LOG_LEVEL": "debug",
    "FILE_EXPORT_LOG_FORMAT": "json",
    "FILE_EXPORT_COOKIE_SECURE": "always",
    "FILE_EXPORT_METRICS_TOKEN": "scrape-token",
    "FILE_EXPORT_PROGRESS_POLL_SECONDS": "2",
    "FILE_EXPORT_PROGRESS_WRITE_SECONDS": "0",
    "FILE_EXPORT_PROGRESS_STREAMS_PER_USER": "3",
    "FILE_EXPORT_PROGRESS_STREAMS_PER_INSTANCE": "100",
    "FILE_EXPORT_RECONCILER_ENABLED": "false",
    "FILE_EXPORT_PUBLISHER_ENABLED": "false",
    "FILE_EXPORT_CONSUMER_ENABLED": "false",
    "FILE_EXPORT_CONSUMER_CONCURRENCY": "8",
    "FILE_EXPORT_MAX_ACTIVE_TASKS_PER_USER": "4",
    "FILE_EXPORT_MAX_ACTIVE_TASKS_PER_TYPE": "6",
    "FILE_EXPORT_TYPE_RESERVED_PLACES": "0",
    "FILE_EXPORT_CONSUMER_RESERVED_SLOTS": "0",
    "FILE_EXPORT_PUBLISHER_POLL_MS": "1000",
    "FILE_EXPORT_PUBLISHER_BATCH_SIZE": "10",
    "FILE_EXPORT_PUBLISHER_LEASE_SECONDS": "30",
    "FILE_EXPORT_RECONCILER_POLL_MS": "1000",
    "FILE_EXPORT_CONSUMER_POLL_MS": "500",
    "FILE_EXPORT_TRANSPORT_CHECK_SECONDS": "5",
    "FILE_EXPORT_METRICS_SAMPLE_SECONDS": "5",
    "FILE_EXPORT_REDISPATCH_GRACE_SECONDS": "10",
    "FILE_EXPORT_SENT_STALE_SECONDS": "120",
    "FILE_EXPORT_TASK_LEASE_SECONDS": "600",
    "FILE_EXPORT_TASK_HEARTBEAT_SECONDS": "30",
    "FILE_EXPORT_MAX_DURATION_MINUTES": "10",
    "FILE_EXPORT_MAX_FILE_SIZE_MB": "5",
    "FILE_EXPORT_RETENTION_DAYS": "1",
    "FILE_EXPORT_EVENT_RETENTION_DAYS": "3",
    "FILE_EXPORT_RETRY_BACKOFF_SECONDS": "1,2",
    "FILE_EXPORT_PUBLISH_BACKOFF_SECONDS": "1",
    "FILE_EXPORT_SHUTDOWN_GRACE_SECONDS": "5",
    "FILE_EXPORT_MAX_HANDBACKS": "0",
    "FILE_EXPORT_WORKER_NICE": "5",
    "FILE_EXPORT_WORKER_SCHED_IDLE": "true",
    "FILE_EXPORT_PROVIDER_REQUEST_TIMEOUT_SECONDS": "20",
    "FILE_EXPORT_DB_RETRY_SECONDS": "0",
    "MQ_TOPIC_PREFIX": "test_",
    "ROCKETMQ_NAME_SERVER": "ns:9876",
    "FILE_EXPORT_MAX_RECONSUME_TIMES": "5",
}
#: what a variable needs beside it to be valid
COMPANIONS = {
    "FILE_EXPORT_TRANSPORT": {"MQ_TOPIC_PREFIX": "", "ROCKETMQ_NAME_SERVER": "ns:9876"},
    "FILE_EXPORT_STORAGE": {"FILE_EXPORT_S3_BUCKET": "exports"},
    "FILE_EXPORT_DOWNLOAD_MODE": {"FILE_EXPORT_STORAGE": "s3", "FILE_EXPORT_S3_BUCKET": "b"},
    "FILE_EXPORT_OIDC_ISSUER": {
        "FILE_EXPORT_OIDC_CLIENT_ID": "ec",
        "FILE_EXPORT_JWT_JWKS_URL": "https://idp.example/jwks",
    },
}


def test_there_is_another_value_for_every_variable() -> None:
    assert set(OTHER_VALUE) == set(settings_variables())


@pytest.mark.parametrize("variable", sorted(OTHER_VALUE))
def test_every_variable_is_read(variable: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Setting the variable alone changes its setting: the name is the one the service
    reads (a renamed field or a lost alias would leave the default in place)."""
    for name in settings_variables():
        monkeypatch.delenv(name, raising=False)
    field = settings_variables()[variable]
    default = getattr(load_settings(), field)
    for name, value in {variable: OTHER_VALUE[variable], **COMPANIONS.get(variable, {})}.items():
        monkeypatch.setenv(name, value)
    assert getattr(load_settings(), field) != default


#: a row of the README's settings table: "| `NAME` / `_SUFFIX` … | default | meaning |"
README_ROW = re.compile(r"^\| (`[A-Z0-9_]+`(?:\s*[/,]\s*`[A-Z0-9_]+`)*) \|")


def readme_variables() -> set[str]:
    """Every variable the README's settings table names; ``_SUFFIX`` abbreviates
    ``FILE_EXPORT_SUFFIX``."""
    names: set[str] = set()
    for line in (REPO / "README.md").read_text().splitlines():
        if m := README_ROW.match(line):
            for name in re.findall(r"`([A-Z0-9_]+)`", m.group(1)):
                names.add("FILE_EXPORT" + name if name.startswith("_") else name)
    return names


def test_the_readme_table_names_exactly_the_variables_read() -> None:
    named, read = readme_variables(), set(settings_variables())
    assert not named - read, f"in the README, not read by the service: {sorted(named - read)}"
    assert not read - named, f"read by the service, missing from the README: {sorted(read - named)}"
