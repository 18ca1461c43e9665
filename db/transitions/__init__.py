"""One SQL text per transition, written once for every dialect (see ``db.dialect``).

Every time decision reads the DB clock through ``{now}`` (§8.6, docs/design-rules.md §8.6).
Every executor write is fenced by id + dispatch_version + lease_owner + status RUNNING
(docs/design-rules.md §8.4). Each UPDATE also sets ``updated_at`` because SQLite has no
``ON UPDATE`` clause.

Names follow the transition they perform; the seed section that defines it is given.

Every statement reads through an index whose leading columns match its equality filter
and whose next columns match its range and its ORDER BY, so its cost follows the rows it
returns (or the live PENDING/RUNNING rows it looks at), never the finished history.
Filters are written so that both planners can use them: no OR across columns, no function
on an indexed column, one statement per combination of optional filters. The comment
above each statement names its index (see ``db/schema``); ``tests/db/test_query_plans.py``
checks the plan of every statement on SQLite and MariaDB.

Each statement is named once: as a field of its subject's class (``create``, ``reads``,
``outbox``, ``execution``, ``manual``, ``history``, ``reconciler``, ``instance``), its
text the field's default, the comment above it its index. :class:`Statements` joins the
subjects, so a type checker sees every name a store uses; the store renders ``TEMPLATES``
once for its dialect and reads each text by its name.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from db.transitions.create import CreateStatements
from db.transitions.execution import ExecutionStatements
from db.transitions.history import HistoryStatements
from db.transitions.instance import InstanceStatements
from db.transitions.manual import ManualStatements
from db.transitions.outbox import OutboxStatements
from db.transitions.reads import ReadStatements
from db.transitions.reconciler import ReconcilerStatements

if TYPE_CHECKING:
    from db.dialect import Dialect


@dataclass(frozen=True)
class Statements(
    InstanceStatements,
    ReconcilerStatements,
    HistoryStatements,
    ManualStatements,
    ExecutionStatements,
    OutboxStatements,
    ReadStatements,
    CreateStatements,
):
    """Every statement by its name: the fields of the subjects' classes, which must not
    share a name (``tests/db/test_transitions.py``). ``TEMPLATES`` holds the templates,
    ``render`` the same texts for one dialect (the store renders them once, when it is
    built)."""

    def render(self, dialect: Dialect) -> Statements:
        """These texts rendered for ``dialect`` (``db.dialect``: ``{now}``, ``:name`` …)."""
        return Statements(**{f.name: dialect.render(getattr(self, f.name)) for f in fields(self)})


TEMPLATES = Statements()
