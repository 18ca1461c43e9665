"""Fixtures of the plumbing tests: a valid registry file (``test_registry_source*.py``)."""

from __future__ import annotations

import pathlib

import pytest

from tests.actors.plumbing.registry_helpers import registry_yaml


@pytest.fixture
def registry_file(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "registry.yaml"
    path.write_text(registry_yaml(500), encoding="utf-8")
    return path
