"""What the documents, docstrings and comments point at exists.

A moved module, a renamed room or a retitled section leaves behind sentences that point
nowhere; nothing else fails when that happens, so this does. It reads the prose of the
repository — every line of a document or script, and the docstrings, comments and strings
of Python files (code itself is mypy's) — and checks four kinds of pointer:

* a path of the repository (``actors/pipeline/runner.py``, ``docs/``) exists;
* a dotted name (``actors.storage.local``, ``web.api.current_deps``) is a module, or a
  name defined at the top of one (a class, function, constant or import);
* a section named after a document (``docs/operations.md, "Logs"``, ``README, "Tests"``)
  is a heading of that document (a heading that starts with the words given);
* a link's anchor (``operations.md#object-storage``) is a heading or ``<a id>`` there.

Design-rule citations ("§8.3") are ``test_design_rules.py``'s.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: Paths that exist only once the test command or a person has set them up.
MADE_BY_SETUP = (
    "deploy/axe/node_modules/",
    "deploy/page-checks/node_modules/",
    "deploy/compose/export-center.env",
)
#: Names that documents use as examples of what does not exist.
EXAMPLES = {"actors.helpers", "actors/helpers.py"}
#: Tests whose strings are pointers to nothing on purpose (probes of these checks).
PROBES = {"tests/deploy/test_documents.py", "tests/deploy/test_import_contracts.py"}
#: Files whose text is data, not prose.
DATA = (".lock", ".json", ".png", ".ttc", ".sql")

PATH = re.compile(
    r"(?<![\w/.:@-])((?:actors|web|db|deploy|tests|docs|examples)/[A-Za-z0-9_./*-]*[A-Za-z0-9_/*])"
)
DOTTED = re.compile(r"(?<![\w./-])((?:actors|web|db)(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
SECTION = re.compile(
    r"(?P<doc>README(?:\.md)?|docs/[a-z-]+\.md)`{0,2}(?:'s)?(?:,\s*|\s+\(?)[\"“](?P<title>[^\"”]{2,80})[\"”]"
)
#: A further title of the same citation: ``docs/x.md ("A" and "B")``, ``, "C"``.
MORE_TITLES = re.compile(r"\s*(?:,|and|or)\s*[\"“](?P<title>[^\"”]{2,80})[\"”]")
LINK = re.compile(r"\]\((?P<target>[^)\s#]*\.md)?#(?P<anchor>[^)\s]+)\)")
#: A link to a file of the repository (not a URL, not an anchor of the same page).
FILE_LINK = re.compile(r"\]\((?P<target>(?![a-z]+:|#)[^)\s#]+)(?:#[^)\s]*)?\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
FIELD = re.compile(r"\{[^{}]*\}")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.M)
ANCHOR_ID = re.compile(r"<a id=\"([^\"]+)\"></a>")


def tracked_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    return [REPO / name for name in listed if (REPO / name).is_file()]


def prose(path: Path, text: str) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of what a reader reads: docstrings, comments and strings of
    a Python file; every line of any other text file."""
    if path.suffix != ".py":
        yield from enumerate(text.splitlines(), 1)
        return
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in (tokenize.STRING, tokenize.COMMENT):
            string = token.string
            if token.type == tokenize.STRING and "f" in string[:2].lower():
                string = FIELD.sub("", string)  # an f-string's fields are code
            for offset, line in enumerate(string.splitlines()):
                yield token.start[0] + offset, line


@cache
def top_level_names(source: Path) -> frozenset[str]:
    """Names a module defines or imports at its top level."""
    names: set[str] = set()
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


def module_file(parts: list[str]) -> Path | None:
    base = REPO.joinpath(*parts)
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def dotted_problem(dotted: str) -> str | None:
    """Why ``dotted`` names nothing, or ``None`` when it is a module or a name in one."""
    parts = dotted.split(".")
    for length in range(len(parts), 0, -1):
        source = module_file(parts[:length])
        if source is None:
            continue
        if length == len(parts):
            return None
        if length == 1 and parts[0] == "db":
            return None  # ``db.transaction()``: a variable named db, not the package
        if parts[length] in top_level_names(source):
            return None
        return f"no {parts[length]!r} in {source.relative_to(REPO)}"
    return "no such module"


def path_problem(path: str) -> str | None:
    if path in EXAMPLES or path.startswith(MADE_BY_SETUP):
        return None
    if "*" in path:  # a pattern: it must match something
        return None if next(REPO.glob(path), None) is not None else "matches no path"
    return None if (REPO / path).exists() else "no such path"


@cache
def headings(document: Path) -> tuple[str, ...]:
    """The headings of a markdown document, without markdown punctuation."""
    text = FENCE.sub("", document.read_text(encoding="utf-8"))  # a comment in code is no heading
    return tuple(re.sub(r"[`*]", "", h).strip() for h in HEADING.findall(text))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.lower())
    return text.replace(" ", "-")


@cache
def anchors(document: Path) -> frozenset[str]:
    text = document.read_text(encoding="utf-8")
    return frozenset({slug(h) for h in headings(document)} | set(ANCHOR_ID.findall(text)))


def section_problem(document: str, title: str) -> str | None:
    path = REPO / ("README.md" if document.startswith("README") else document)
    if not path.is_file():
        return f"no document {document}"
    wanted = title.casefold()
    if any(h.casefold().startswith(wanted) for h in headings(path)):
        return None
    return f"no heading {title!r} in {path.relative_to(REPO)}"


def problems_in(path: Path, text: str) -> Iterator[str]:
    """Every pointer in the prose of ``path`` (whose text is ``text``) that points nowhere,
    as ``file:line: what``."""
    where = path.relative_to(REPO)
    lines = list(prose(path, text))
    for number, line in lines:
        for match in PATH.finditer(line):
            found = match.group(1)
            if problem := path_problem(found):
                yield f"{where}:{number}: {found}: {problem}"
        for match in DOTTED.finditer(line):
            found = match.group(1)
            if found not in EXAMPLES and (problem := dotted_problem(found)):
                yield f"{where}:{number}: {found}: {problem}"
        if path.suffix == ".md":
            for match in FILE_LINK.finditer(line):
                if not (path.parent / match["target"]).exists():
                    yield f"{where}:{number}: link to a missing file {match['target']}"
            for match in LINK.finditer(line):
                target = (path.parent / match["target"]) if match["target"] else path
                if not target.is_file():
                    yield f"{where}:{number}: link to a missing document {match['target']}"
                elif match["anchor"] not in anchors(target.resolve()):
                    yield f"{where}:{number}: no section #{match['anchor']} in {target.name}"
    # A section's title may wrap onto the next line: look in the prose joined up.
    starts, parts, offset = [], [], 0
    for number, line in lines:
        piece = line.strip().lstrip("#/*").strip() + " "  # comment marks of py, sh, js
        starts.append((offset, number))
        parts.append(piece)
        offset += len(piece)
    joined = "".join(parts)
    for match in SECTION.finditer(joined):
        titles = [match["title"]]
        end = match.end()
        while more := MORE_TITLES.match(joined, end):
            titles.append(more["title"])
            end = more.end()
        number = max(n for start, n in starts if start <= match.start())
        for raw in titles:
            title = " ".join(raw.split())
            if problem := section_problem(match["doc"], title):
                yield f"{where}:{number}: {match['doc']}, {title!r}: {problem}"


def text_of(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return ""  # a binary file: no prose


def test_every_pointer_in_the_prose_points_at_something() -> None:
    problems = [
        problem
        for path in tracked_files()
        if not path.name.endswith(DATA) and str(path.relative_to(REPO)) not in PROBES
        for problem in problems_in(path, text_of(path))
    ]
    assert not problems, "pointers to nothing:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ("see actors/pipeline/storage.py", "actors/pipeline/storage.py: no such path"),
        ("see ``actors.pipeline.storage``", "no 'storage' in actors/pipeline/__init__.py"),
        ("see ``actors.core.models.Nothing``", "'Nothing' in actors/core/models.py"),
        ('(docs/architecture.md, "Dispatch")', "no heading 'Dispatch'"),
        (
            '(README, "Session cookie,\n# export types and stale")',
            "no heading 'Session cookie, export",
        ),
        ("[x](operations.md#no-such-part)", "no section #no-such-part in operations.md"),
        ('see ``docs/operations.md`` ("Logs" and "No such part")', "no heading 'No such part'"),
        ("[guide](no-such-guide.md)", "link to a missing file no-such-guide.md"),
        ("[code](../examples/provider/nothing.py)", "link to a missing file"),
    ],
)
def test_a_stale_pointer_is_caught(line: str, found: str) -> None:
    """Each kind of pointer, made stale, is reported (the check is not vacuous)."""
    problems = list(problems_in(REPO / "docs" / "probe.md", f"# Probe\n\n{line}\n"))
    assert any(found in p for p in problems), problems


@pytest.mark.parametrize(
    ("line",),
    [
        ("see actors/pipeline/runner.py and docs/",),
        ("``actors.storage.local.LocalDirectoryStorage`` and ``web.api``",),
        ('(docs/operations.md, "Logs")',),
        ('(README, "Session cookie, export\n   types and live progress")',),
        ("[x](architecture.md#layers)",),
    ],
)
def test_a_true_pointer_passes(line: str) -> None:
    assert list(problems_in(REPO / "docs" / "probe.md", f"# Probe\n\n{line}\n")) == []
