"""Each import contract refuses a module put in the wrong place (docs/architecture.md, "Layers").

``lint-imports`` in the test command shows that the code keeps every contract; a contract
that could never fail would show the same. So each case here copies the tree's Python
files into a temporary directory, adds one probe import that breaks exactly one rule, and
runs ``lint-imports`` on that copy with the repository's own ``pyproject.toml``: the
contract named must come out BROKEN, naming the probe. The unchanged copy keeps them all.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("actors", "web", "db", "tests", "deploy")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the packages' Python files and of pyproject.toml."""
    root = tmp_path_factory.mktemp("tree")
    for package in PACKAGES:
        for source in (REPO / package).rglob("*.py"):
            target = root / source.relative_to(REPO)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    shutil.copyfile(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def lint(root: Path, contract: str | None = None) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over ``root`` (its pyproject.toml, its packages first on the path)."""
    args = [str(LINT_IMPORTS), "--no-cache", "--no-logo"]
    if contract is not None:
        args += ["--contract", contract]
    return subprocess.run(
        args,
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


#: (contract id, probe module path — a new module, or one of the tree that gets the line
#: added —, its import line, what the rule forbids)
PROBES = [
    (
        "actors-layers",
        "actors/storage/probe.py",
        "import actors.pipeline.runner",
        "storage over pipeline",
    ),
    ("actors-layers", "actors/probe.py", "import actors.core", "a module without a layer"),
    ("house-layers", "actors/plumbing/probe.py", "import web.app", "plumbing over web"),
    (
        "core-layers",
        "actors/core/http/probe.py",
        "import actors.core.usecases",
        "a wing over the use cases",
    ),
    (
        "core-layers",
        "actors/core/ports/probe.py",
        "import actors.core.provider.check",
        "a port over a wing",
    ),
    (
        "core-layers",
        "actors/core/probe.py",
        "import actors.core.models",
        "a core module without a layer",
    ),
    ("core-no-io", "actors/core/xlsx/probe.py", "import uuid", "randomness in the core"),
    ("core-no-io", "actors/core/probe_io.py", "import asyncio", "an event loop in the core"),
    (
        "ports-independent",
        "actors/core/ports/transport.py",
        "import actors.core.ports.storage",
        "a port using another",
    ),
    ("web-imports", "web/probe.py", "import db.store", "web importing db"),
    ("web-imports", "web/probe.py", "import actors.plumbing.config", "web importing an actor room"),
    ("db-importers", "actors/storage/probe.py", "import db.store", "an actor room importing db"),
    ("db-importers", "actors/credentials.py", "import web.identity", "credentials importing web"),
    ("db-imports", "db/probe.py", "import actors.plumbing.config", "db importing an actor room"),
    (
        "one-provider-client",
        "actors/pipeline/provider/probe.py",
        "import httpx",
        "httpx on the Provider side",
    ),
    (
        "production-no-tests",
        "actors/plumbing/probe.py",
        "import tests.helpers",
        "production importing tests",
    ),
    (
        "production-no-tests",
        "web/probe.py",
        "import deploy.bench.bench_workers",
        "production importing deploy",
    ),
    (
        "tests-share-from-tests",
        "tests/web/probe.py",
        "import deploy.bench.bench_workers",
        "a test importing deploy",
    ),
    ("no-sibling-cycles", "actors/plumbing/probe.py", "import actors.plumbing.wakeup", "a cycle"),
    (
        "worker-imports",
        "actors/pipeline/writer/probe.py",
        "import trio",
        "the worker importing trio",
    ),
]


def test_the_unchanged_tree_keeps_every_contract(tree: Path) -> None:
    result = lint(tree)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(("contract", "module", "line", "rule"), PROBES, ids=[p[3] for p in PROBES])
def test_a_misplaced_import_breaks_its_contract(
    tree: Path, tmp_path: Path, contract: str, module: str, line: str, rule: str
) -> None:
    copy = tmp_path / "tree"
    shutil.copytree(tree, copy)
    probe = copy / module
    if probe.exists():  # a module that exists gets the wrong import added
        probe.write_text(probe.read_text() + f"\n{line}  # a probe: {rule}\n")
    else:
        probe.write_text(f'"""A probe: {rule}."""\n\n{line}\n', encoding="utf-8")
    if contract == "no-sibling-cycles":
        # the plumbing's wake-up imports the probe back: a cycle between siblings
        wakeup = copy / "actors/plumbing/wakeup.py"
        wakeup.write_text(wakeup.read_text() + "\nimport actors.plumbing.probe  # noqa\n")
    if contract == "worker-imports":
        # reached from the worker's entry point through a module it imports
        session = copy / "actors/pipeline/worker/session.py"
        session.write_text(session.read_text() + "\nimport actors.pipeline.writer.probe  # noqa\n")
    result = lint(copy, contract)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "BROKEN" in result.stdout
    # the report names the module the probe is in (a cycle names it from its package)
    name = Path(module).stem
    assert f".{name}" in result.stdout or name in result.stdout.split(), result.stdout
