"""Installs are reproducible, and deploy/ stands apart from tests/.

The lock files pin every dependency pyproject.toml names, at a version its range allows,
with hashes (``deploy/dev lock`` writes them; ``deploy/dev`` and the Dockerfile install
from them). A dependency added to pyproject.toml without re-locking fails here, not on the
next fresh clone."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^ ;\\]+)", re.MULTILINE)


def pins(lock: str) -> dict[str, str]:
    text = (ROOT / lock).read_text()
    return {canonicalize_name(name): version for name, version in PIN.findall(text)}


@pytest.mark.parametrize(
    ("lock", "requirements"),
    [
        ("requirements.lock", PYPROJECT["dependencies"]),
        (
            "requirements-test.lock",
            PYPROJECT["dependencies"] + PYPROJECT["optional-dependencies"]["test"],
        ),
    ],
)
def test_every_dependency_is_pinned_within_its_range(lock: str, requirements: list[str]) -> None:
    pinned = pins(lock)
    for line in requirements:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        assert name in pinned, f"{req.name} is not in {lock}: run deploy/dev lock"
        assert req.specifier.contains(pinned[name], prereleases=True), (
            f"{lock} pins {req.name}=={pinned[name]}, outside {req.specifier}: run deploy/dev lock"
        )


@pytest.mark.parametrize("lock", ["requirements.lock", "requirements-test.lock"])
def test_every_pin_carries_a_hash(lock: str) -> None:
    blocks = re.split(r"\n(?=[A-Za-z0-9])", (ROOT / lock).read_text().split("\n", 2)[2])
    for block in blocks:
        if PIN.match(block):
            assert "--hash=sha256:" in block, f"{block.splitlines()[0]} has no hash"


def test_the_install_paths_use_the_locks() -> None:
    dev = (ROOT / "deploy/dev").read_text()
    assert "--require-hashes -r requirements-test.lock" in dev
    docker = (ROOT / "deploy/compose/Dockerfile").read_text()
    assert "--require-hashes -r requirements.lock" in docker


def test_nothing_under_deploy_imports_tests() -> None:
    """deploy/ may be imported by tests (deploy/bench/history.py), never the other way."""
    import ast

    offenders = []
    for path in sorted((ROOT / "deploy").rglob("*.py")):
        if "node_modules" in path.parts:
            continue  # the npm packages the test command installs (one ships a .py file)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno} imports {name}"
                for name in names
                if name == "tests" or name.startswith("tests.")
            ]
    assert offenders == []
