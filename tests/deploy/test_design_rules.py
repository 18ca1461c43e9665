"""Every design-rule citation in the repository resolves to a section of
docs/design-rules.md.

Docstrings, comments and documents cite design rules by number ("§8.3", "§8.5-2",
"§3 principle 5"); the number means the heading of docs/design-rules.md that starts with
it. A citation without such a heading would point nowhere, so a new citation needs its rule
written down first. README.md and the other documents are read by people without the code
at hand: there a citation must be a link to the section's anchor, never a bare number.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "docs" / "design-rules.md"
#: Where citations are looked for: the code, its tests and tools, and every document.
CITING_ROOTS = ("actors", "web", "db", "deploy", "examples", "tests", "docs", "README.md")

#: "§8.3" in "§8.3.1", "§8.5-2", "(§12)", "§19.1 bullet": the dotted number only.
CITATION = re.compile(r"§(\d+(?:\.\d+)*)")
#: A rule heading: "## §8.3 Lease renewal … <a id="s8.3"></a>".
HEADING = re.compile(r"^## §(\d+(?:\.\d+)*) (.+?) <a id=\"s([\d.]+)\"></a>$")
#: A markdown link; its text may cite a section, its target must then be that section.
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]*)\)")


def rule_sections() -> dict[str, str]:
    """The sections of docs/design-rules.md: number → title.

    Raises:
        AssertionError: a "## §" line is not a well-formed heading, its anchor does not
            match its number, or a number appears twice.
    """
    sections: dict[str, str] = {}
    for line in RULES.read_text(encoding="utf-8").splitlines():
        if not line.startswith("## §"):
            continue
        m = HEADING.match(line)
        assert m, f"malformed rule heading (want '## §N Title <a id=\"sN\"></a>'): {line!r}"
        number, title, anchor = m.groups()
        assert anchor == number, f"heading §{number} has anchor s{anchor}"
        assert number not in sections, f"§{number} has two headings"
        sections[number] = title
    return sections


def text_files() -> Iterator[Path]:
    """Every text file under :data:`CITING_ROOTS` (bytecode, binary files and the npm
    packages the test command installs under deploy/ skipped)."""
    for root in CITING_ROOTS:
        path = REPO / root
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        for file in candidates:
            if file.is_file() and not {"__pycache__", "node_modules"} & set(file.parts):
                yield file


def citations() -> Iterator[tuple[str, str]]:
    """``(where, number)`` for every citation: ``where`` is ``path:line``."""
    for file in text_files():
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # images, fonts: nothing to cite
        for lineno, line in enumerate(text.splitlines(), 1):
            for m in CITATION.finditer(line):
                yield f"{file.relative_to(REPO)}:{lineno}", m.group(1)


def test_rule_headings_are_numbered_in_order() -> None:
    """The sections follow the design's numbering, so a reader can find one by scanning."""
    numbers = list(rule_sections())
    keys = [tuple(int(part) for part in n.split(".")) for n in numbers]
    assert keys == sorted(keys), numbers
    assert len(numbers) >= 40  # every section the code cites today


def test_every_cited_section_has_a_rule() -> None:
    """A "§N" anywhere in the code, tests, deploy files or documents has a heading
    "## §N …" in docs/design-rules.md."""
    sections = rule_sections()
    missing = [f"{where}: §{number}" for where, number in citations() if number not in sections]
    assert not missing, "cited, but no section in docs/design-rules.md:\n" + "\n".join(missing)


def test_citations_are_found() -> None:
    """The scan sees real citations: a docstring, a comment and a document link."""
    found = {(where.split(":")[0], number) for where, number in citations()}
    assert ("actors/core/dispatch.py", "8.2") in found
    assert ("db/transitions/reconciler.py", "8.5") in found
    assert ("README.md", "14") in found


def test_documents_link_their_citations() -> None:
    """README.md and docs/*.md cite a rule only as a link to its anchor, e.g.
    ``[§14](docs/design-rules.md#s14)``: the number in the text is the anchor's."""
    sections = rule_sections()
    documents = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    problems: list[str] = []
    for doc in documents:
        if doc == RULES:
            continue  # the rules cite each other by number, inside one page
        for lineno, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{doc.relative_to(REPO)}:{lineno}"
            for m in LINK.finditer(line):
                text, target = m.groups()
                if "design-rules.md#" in target:
                    anchor = target.rsplit("#", 1)[1]
                    if not (anchor.startswith("s") and anchor[1:] in sections):
                        problems.append(f"{where}: link to a missing section: {target}")
                for number in CITATION.findall(text):
                    if not target.endswith(f"design-rules.md#s{number}"):
                        problems.append(f"{where}: §{number} links to {target!r}")
            for number in CITATION.findall(LINK.sub("", line)):
                problems.append(f"{where}: bare §{number}: link it to design-rules.md#s{number}")
    assert not problems, "\n".join(problems)
