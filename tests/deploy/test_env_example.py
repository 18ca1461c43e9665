"""deploy/env.example lists every environment variable the service reads, with its real
default (issue 12 item 3), so it cannot go stale: the names are compared with the
Settings fields' variable names, and the values it shows are loaded through the real
settings loader and compared with the defaults.
"""

from __future__ import annotations

import re

import pytest
from pydantic import AliasChoices

from actors.service.config import Settings, load_settings
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
    out = {}
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        assert isinstance(alias, AliasChoices), f"{name}: no environment variable"
        for choice in alias.choices:
            out[str(choice)] = name
    return out


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
