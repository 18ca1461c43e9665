"""Log lines name tasks by structured fields, not in their text (issue 23): a message is a
constant event text to search and alert on, and ``taskId``, ``dispatchVersion``,
``eventId`` … are fields (``actors.core.log_context.task_fields``), so a query on one
field finds every line of a task. This test keeps the kind of fault fixed: it reads every
logging call of the service's code and fails on one that formats an identifier into its
message again. How such a line reaches a JSON shipper: ``test_logging_setup.py``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
LEVELS = {"debug", "info", "warning", "error", "exception", "critical", "log"}
#: An identifier formatted into a message: "task %s", "outbox %s", "event %s", "v%d" …
IDENTIFIER_IN_TEXT = re.compile(r"\b(task|outbox|event|message|user)\s+%|\bv%d|\btask\s*\{")


def logging_calls() -> list[tuple[str, int, str]]:
    """(file, line, message) of every logging call with a constant message."""
    found = []
    for package in ("actors", "web", "db"):
        for path in sorted((REPO / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if not (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in LEVELS
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in ("log", "logger", "logging")
                ):
                    continue
                args = node.args[1:] if node.func.attr == "log" else node.args
                if args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
                    found.append((str(path.relative_to(REPO)), node.lineno, args[0].value))
    return found


def test_the_scan_sees_the_service_s_logging_calls() -> None:
    messages = {message for _, _, message in logging_calls()}
    assert len(messages) > 80
    assert {"task failed", "task succeeded", "lease expired"} <= messages


def test_no_message_formats_a_task_or_other_identifier_into_its_text() -> None:
    offenders = [
        f"{file}:{line}: {message!r}"
        for file, line, message in logging_calls()
        if IDENTIFIER_IN_TEXT.search(message)
    ]
    assert offenders == [], "pass the ids as fields: extra=task_fields(…)\n" + "\n".join(offenders)
