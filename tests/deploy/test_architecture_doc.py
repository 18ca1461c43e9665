"""docs/architecture.md, "Layers", says what the import contracts enforce, no more, no less.

The contracts in ``pyproject.toml`` are the one source: ``lint-imports`` proves the code
keeps them. The page is held to them here, so it cannot drift: its list names every
contract and no other, and its drawing puts the rooms in the order the layer contracts
give (a room drawn above another may import it; one drawn below may not).
"""

from __future__ import annotations

import re
import tomllib
from itertools import combinations
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "architecture.md"
#: A room in the drawing: a path after white space or a line of the drawing, e.g.
#: "actors/cli/", "web/" (not "db/store/" inside a sentence).
ROOM = re.compile(r"(?:^|(?<=[\s│]))((?:actors/[a-z_]+(?:/|\.py))|web/|db/)")
#: A wing or layer of the core in the drawing's core block, e.g. "usecases.py", "http/".
CORE_ROOM = re.compile(r"([a-z_]+)(?:/|\.py)|(the domain)")


def contracts() -> list[dict[str, Any]]:
    """The import contracts of pyproject.toml, in order."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    return list(config["tool"]["importlinter"]["contracts"])


def contract(contract_id: str) -> dict[str, Any]:
    (found,) = [c for c in contracts() if c["id"] == contract_id]
    return found


def layers_section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## Layers")
    return text[start : text.index("\n## ", start + 1)]


def listed_contracts(section: str) -> list[str]:
    """The bold names that start the section's bullets (a name may wrap over lines)."""
    bullets = re.split(r"\n(?=- )", section)
    names = []
    for bullet in bullets:
        match = re.match(r"- \*\*(.+?)\*\*", bullet, re.S)
        if match:
            names.append(" ".join(match.group(1).split()))
    return names


def drawing(section: str) -> list[str]:
    """The lines of the section's first fenced block."""
    return section.split("```\n", 2)[1].splitlines()


def room_order(lines: list[str]) -> list[str]:
    """The rooms of the drawing as dotted names, in the order they are first drawn."""
    order: list[str] = []
    for line in lines:
        for match in ROOM.finditer(line):
            name = match.group(1).removesuffix("/").removesuffix(".py").replace("/", ".")
            if name not in order:
                order.append(name)
    return order


def core_order(lines: list[str]) -> list[str]:
    """The core's layers as drawn under ``actors/core/``, left to right, top to bottom."""
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("actors/core/"))
    order: list[str] = []
    for line in lines[start + 1 :]:
        left = line[:40]  # the names column; the right column is prose
        for match in CORE_ROOM.finditer(left):
            name = "domain" if match.group(2) else match.group(1)
            if name not in order:
                order.append(name)
    return order


def layer_members(layer: str, prefix: str = "") -> list[str]:
    return [prefix + m.strip() for m in re.split(r"[|:]", layer.strip("()")) if m.strip()]


def misordered(order: list[str], layers: list[str], prefix: str = "") -> list[str]:
    """Pairs drawn in the reverse of the contract's order, and layer members not drawn."""
    position = {name: i for i, name in enumerate(order)}
    problems = []
    groups = [layer_members(layer, prefix) for layer in layers]
    for members in groups:
        problems += [f"{m} is not drawn" for m in members if m not in position]
    for upper, lower in combinations(groups, 2):
        for a in upper:
            for b in lower:
                if a in position and b in position and position[a] > position[b]:
                    problems.append(f"{a} must be drawn above {b}")
    return problems


def test_the_page_names_every_contract_and_no_other() -> None:
    named = listed_contracts(layers_section())
    assert sorted(named) == sorted(c["name"] for c in contracts())


def test_the_drawing_puts_the_actors_rooms_in_the_contracts_order() -> None:
    order = room_order(drawing(layers_section()))
    layers = [layer for layer in contract("actors-layers")["layers"] if layer != "__main__"]
    assert misordered(order, layers, prefix="actors.") == []


def test_the_actors_package_lists_its_rooms_in_the_contracts_order() -> None:
    """``actors/__init__.py``'s docstring lists the rooms too: every one, in order."""
    lines = (REPO / "actors" / "__init__.py").read_text(encoding="utf-8").splitlines()
    layers = [layer for layer in contract("actors-layers")["layers"] if layer != "__main__"]
    assert misordered(room_order(lines), layers, prefix="actors.") == []


def test_the_drawing_puts_the_house_in_the_contracts_order() -> None:
    order = room_order(drawing(layers_section()))
    assert misordered(order, contract("house-layers")["layers"]) == []


def test_the_drawing_puts_the_core_in_the_contracts_order() -> None:
    order = core_order(drawing(layers_section()))
    layers = contract("core-layers")["layers"]
    # the domain is one row in the drawing: its many modules stand for one layer there
    layers = [layer if "|" in layer or ":" not in layer else "domain" for layer in layers]
    assert misordered(order, layers) == []


def bullets(section: str) -> dict[str, str]:
    """Each listed contract's bullet text, by contract name, white space folded."""
    found = {}
    for bullet in re.split(r"\n(?=- )", section):
        match = re.match(r"- \*\*(.+?)\*\*(.*)", bullet, re.S)
        if match:
            found[" ".join(match.group(1).split())] = " ".join(match.group(2).split())
    return found


def test_each_layer_of_independent_rooms_is_named_so_on_the_page() -> None:
    """A layer of rooms the contract keeps apart (``a | b``) is written so in its
    contract's bullet, and the bullet says they are independent; a page that claimed
    independence the contracts do not keep, or kept quiet about it, fails."""
    texts = bullets(layers_section())
    problems = []
    for c in contracts():
        if c["type"] != "layers":
            continue
        text = texts[c["name"]]
        for layer in c["layers"]:
            if "|" not in layer:
                continue
            written = " | ".join(m.strip() for m in layer.split("|"))
            if f"`{written}`" not in text:
                problems.append(f"{c['name']}: `{written}` not in its bullet")
        claimed = re.findall(r"`([^`]*\|[^`]*)`", text)
        for group in claimed:
            if group not in [" | ".join(m.strip() for m in lay.split("|")) for lay in c["layers"]]:
                problems.append(
                    f"{c['name']}: the page says `{group}` are independent; no layer does"
                )
    assert problems == []


def test_the_checks_see_a_drawing_in_the_wrong_order() -> None:
    """The order check is not vacuous: swapping two rooms of the drawing is caught."""
    lines = drawing(layers_section())
    order = room_order(lines)
    swapped = order.copy()
    i, j = swapped.index("actors.pipeline"), swapped.index("actors.plumbing")
    swapped[i], swapped[j] = swapped[j], swapped[i]
    layers = [layer for layer in contract("actors-layers")["layers"] if layer != "__main__"]
    assert "actors.pipeline must be drawn above actors.plumbing" in misordered(
        swapped, layers, prefix="actors."
    )
    assert listed_contracts("- **a** x\n- **b\n  c** y\n") == ["a", "b c"]
