"""Print the import structure between the rooms of the code: what each room imports.

A room is a package directly under ``actors/`` (or ``actors/pipeline/``), a top-level
module of ``actors/``, or one of ``web`` and ``db``; ``actors/core`` is one room. For each
room it prints the lines of code it holds and the rooms it imports (with the number of
import statements), from the top down (a room before the rooms it reaches), so a
structural change can be compared before and after::

    .venv/bin/python deploy/rooms.py                 # the checkout you stand in
    git worktree add /tmp/before <commit> && (cd /tmp/before &&
        "$OLDPWD/.venv/bin/python" "$OLDPWD/deploy/rooms.py")   # another commit's

It reads the imports with grimp (import-linter's graph, installed with the test tools).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import grimp

#: The checkout measured: the one the command runs in.
REPO = Path.cwd()
#: Packages whose sub-packages are rooms of their own.
SPLIT = ("actors", "actors.pipeline")


def room(module: str) -> str:
    """The room a module belongs to."""
    parts = module.split(".")
    if parts[0] != "actors":
        return parts[0]
    if (
        len(parts) >= 3
        and parts[1] == "pipeline"
        and (REPO / "actors/pipeline" / parts[2]).is_dir()
    ):
        return ".".join(parts[:3])
    return ".".join(parts[:2]) if len(parts) > 1 else "actors"


def lines_of(module: str) -> int:
    path = REPO.joinpath(*module.split("."))
    source = path.with_suffix(".py") if path.with_suffix(".py").is_file() else path / "__init__.py"
    try:
        return sum(1 for _ in source.open(encoding="utf-8"))
    except OSError:
        return 0


def main() -> int:
    sys.path.insert(0, str(REPO))
    graph = grimp.build_graph("actors", "web", "db", cache_dir=None)
    sizes: Counter[str] = Counter()
    arrows: dict[str, Counter[str]] = {}
    for module in sorted(graph.modules):
        home = room(module)
        sizes[home] += lines_of(module)
        for imported in graph.find_modules_directly_imported_by(module):
            target = room(imported)
            if target != home:
                count = len(graph.get_import_details(importer=module, imported=imported)) or 1
                arrows.setdefault(home, Counter())[target] += count
    for name in sorted(sizes, key=lambda r: (-len(_floor(r, arrows)), r)):
        imports = ", ".join(f"{t} ({n})" for t, n in sorted(arrows.get(name, {}).items()))
        print(f"{name:28} {sizes[name]:>6} lines  -> {imports or 'nothing of ours'}")
    return 0


def _floor(
    name: str, arrows: dict[str, Counter[str]], seen: frozenset[str] = frozenset()
) -> set[str]:
    """Every room ``name`` reaches (to order rooms from the top down)."""
    reached: set[str] = set()
    for target in arrows.get(name, {}):
        if target not in seen and target != name:
            reached |= {target} | _floor(target, arrows, seen | {name})
    return reached


if __name__ == "__main__":
    sys.exit(main())
