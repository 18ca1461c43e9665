"""One warning about a Provider's data, as a task keeps it: its kind and its detail. Pure.

The writer and the run know what they warn about when they warn, so the kind travels with
the sentence from the moment it is made (:class:`~actors.core.xlsx.warning_counts.
WarningCounts`, :func:`~actors.core.provider.batch_rules.final_total_rows`) through the
worker's replies, the run's result and the task row (``warnings_json``) to the task JSON
(``dataWarnings``) and what people read of each kind (:mod:`actors.core.messages`):
nothing ever reads a kind back out of the words.

Stored as a JSON list of ``{"kind", "detail"}`` objects. A task that succeeded before
kinds were stored keeps a list of sentences: each reads as a :attr:`WarningKind.NOTE`
with its sentence as the detail, nothing lost.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["DataWarning", "WarningKind", "warnings_from_json", "warnings_to_json"]


class WarningKind(StrEnum):
    """What a data warning is about (the page words each kind: ``actors/core/messages.py``)."""

    #: Cells cut to Excel's 32,767-character limit.
    TRUNCATED_CELLS = "truncated-cells"
    #: Values that did not fit their column's type, written as text.
    INVALID_VALUES = "invalid-values"
    #: Row keys that are not declared columns, left out.
    UNDECLARED_FIELDS = "undeclared-fields"
    #: The Provider sent fewer rows than its ``totalRows`` announced.
    FEWER_ROWS = "fewer-rows"
    #: Anything else in words: a count of further notes, or a sentence stored before kinds.
    NOTE = "note"


@dataclass(frozen=True, slots=True)
class DataWarning:
    """One data warning of a run.

    Attributes:
        kind: what it is about.
        detail: the sentence, in English, with its counts and a few examples (never a
            cell's value, §12), e.g. ``"2 cells truncated to 32767 characters (batch 1
            row 7 column 'remark')"``.
    """

    kind: WarningKind
    detail: str

    def to_json(self) -> dict[str, str]:
        """``{"kind", "detail"}``: the stored and the API's shape."""
        return {"kind": self.kind.value, "detail": self.detail}


def warnings_to_json(warnings: Iterable[DataWarning]) -> str | None:
    """The ``warnings_json`` column value: a JSON list, or ``None`` when there are none."""
    items = [w.to_json() for w in warnings]
    return json.dumps(items) if items else None


def warnings_from_json(text: str | None) -> list[DataWarning]:
    """The warnings a ``warnings_json`` value holds; ``[]`` for ``None`` or anything that is
    not a JSON list. A sentence stored before kinds is a :attr:`WarningKind.NOTE`; an
    object with a kind this version does not know is one too (its detail kept); an item
    that is neither a sentence nor an object with a detail is skipped."""
    if not text:
        return []
    try:
        value = json.loads(text)
    except ValueError:
        return []
    if not isinstance(value, list):
        return []
    found: list[DataWarning] = []
    for item in value:
        if isinstance(item, str):
            found.append(DataWarning(WarningKind.NOTE, item))
        elif isinstance(item, dict) and isinstance(item.get("detail"), str):
            try:
                kind = WarningKind(str(item.get("kind")))
            except ValueError:
                kind = WarningKind.NOTE
            found.append(DataWarning(kind, item["detail"]))
    return found
