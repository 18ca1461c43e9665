"""Schema versions, and the ordered upgrade steps that bring a database to this code's.

Every database records the versions applied to it in ``file_export_schema_version``
(``version``, ``description``, ``applied_at``); the highest row is its version. ``migrate``
(SQLite at every start, MariaDB/MySQL by ``export-center migrate``) reads what it finds and
follows ``plan_migration``:

- an empty database gets the whole schema of ``db/schema/<dialect>.sql`` and is stamped at
  ``LATEST_VERSION``;
- a database with export tables but no version table has the schema of before the
  download-center tables: version ``BASELINE_VERSION`` (1), recorded as such;
- a database below ``LATEST_VERSION`` gets each later step of ``STEPS``, in order, each
  recorded the moment it is done (so an interrupted run resumes with the step it was in);
- a database above ``LATEST_VERSION`` was migrated by a newer release: ``SchemaVersionError``,
  nothing is touched.

Every operation of a step is idempotent (it asks the catalogue first: neither SQLite nor
MySQL 8 has ``ADD COLUMN IF NOT EXISTS`` or ``CREATE INDEX IF NOT EXISTS`` in both), so a
database that already has part of a step, e.g. one migrated by a release that had no version
table yet, gets only what it lacks. A step's DDL is frozen here as it was written: the
schema files describe the newest schema of a fresh database, the steps the road to it, and
``tests/db/test_schema_migration.py`` checks that both end at the same columns and indexes.

The migration is written once, without IO, as a generator (``migration``, ``schema_check``)
that yields each ``Query`` and is sent back its rows; ``db.sqlite`` drives it synchronously
inside one transaction, ``db.mysql`` through its asynchronous connection.

The operations are ``db/migration_ops.py``'s, the ordered steps ``db/migration_steps.py``'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, TypeVar

from actors.core.errors import ConfigError
from db.dialect import Dialect
from db.migration_ops import (
    INDEX_EXISTS,
    TABLE_EXISTS,
    Query,
    Rows,
    Step,
    catalogue_has,
    ddl,
    query,
)
from db.migration_steps import BASELINE_VERSION, LATEST_VERSION, STEPS

T = TypeVar("T")


class SchemaVersionError(ConfigError):
    """The database's schema version does not fit this code: it is newer (migrated by a
    newer release; this one must not run against it), older (MariaDB/MySQL: run
    ``export-center migrate`` first), or the version table contradicts the tables found.
    Raised before anything is changed."""


# -- the schema file -----------------------------------------------------------------------


def schema_sql(dialect_name: str) -> str:
    """The DDL text for ``sqlite`` or ``mysql`` shipped in ``db/schema``: the whole schema
    of a fresh database at ``LATEST_VERSION``."""
    return resources.files("db").joinpath("schema", f"{dialect_name}.sql").read_text("utf-8")


def schema_statements(dialect_name: str) -> list[str]:
    """The statements of ``db/schema/<dialect_name>.sql``, comments removed, in file order."""
    statements = []
    for stmt in re.split(r";\s*\n", schema_sql(dialect_name)):
        body = "\n".join(
            line for line in stmt.splitlines() if not line.lstrip().startswith("--")
        ).strip()
        if body:
            statements.append(body)
    return statements


_CREATE_INDEX = re.compile(r"CREATE\s+(?:UNIQUE\s+)?INDEX\s+(\w+)\s+ON\s+(\w+)", re.IGNORECASE)
_DROP_INDEX = re.compile(r"DROP\s+INDEX\s+(\w+)\s+ON\s+(\w+)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class IndexChange:
    """A MySQL schema statement that creates or drops one index, and when it is due: MySQL 8
    has no ``IF [NOT] EXISTS`` for indexes, so ``migrate`` asks the catalogue first."""

    table: str
    name: str
    create: bool

    @classmethod
    def parse(cls, statement: str) -> IndexChange | None:
        """The index change ``statement`` makes, or ``None`` for any other statement."""
        if m := _CREATE_INDEX.match(statement):
            return cls(m.group(2), m.group(1), create=True)
        if m := _DROP_INDEX.match(statement):
            return cls(m.group(2), m.group(1), create=False)
        return None

    def due(self, present: bool) -> bool:
        """Run it? A create when the index is missing, a drop when it is there."""
        return present != self.create


VERSION_TABLE = "file_export_schema_version"

_VERSION_TABLE_DDL = {
    "sqlite": f"""CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (
  version INTEGER NOT NULL PRIMARY KEY,
  description TEXT NOT NULL,
  applied_at INTEGER NOT NULL
)""",
    "mysql": f"""CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (
  version INT NOT NULL COMMENT 'db/migrations.py: 0 marks a fresh install under way',
  description VARCHAR(255) NOT NULL,
  applied_at DATETIME(3) NOT NULL,
  PRIMARY KEY (version)
) ENGINE=InnoDB COMMENT='schema versions applied to this database'""",
}
#: SQLite takes the time from the caller (its ``db_now_ms()`` may follow a test's mock
#: clock, which a start-up outside trio cannot read); MySQL from the server.
_RECORD = (
    f"INSERT INTO {VERSION_TABLE} (version, description, applied_at)"
    " VALUES (:version, :description, {applied_at})"
)
#: Version 0 marks a fresh install under way: a run that finds it starts the install over
#: (MySQL commits each DDL statement by itself, so an install can stop half done).
_INSTALLING = 0


# -- the plan ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MigrationPlan:
    """What ``migrate`` does to a database.

    Attributes:
        found: the version found; ``None`` for an empty database (or an install that
            stopped half way).
        fresh: install the whole schema file and stamp it at the latest version.
        steps: the steps to apply, in order (empty when fresh or already current).
    """

    found: int | None
    fresh: bool
    steps: tuple[Step, ...]


def plan_migration(
    has_task_table: bool, versions: Sequence[int], steps: Sequence[Step] = STEPS
) -> MigrationPlan:
    """Decide what brings a database to the latest version of ``steps``.

    Args:
        has_task_table: ``file_export_task`` exists.
        versions: the versions recorded in the version table (empty when it is missing).
        steps: the known steps, ascending by version.

    Returns:
        The plan; see the module docstring for the rules.

    Raises:
        SchemaVersionError: the database is newer than ``steps`` know, or records a
            version while it has no task table.
    """
    latest = steps[-1].version if steps else BASELINE_VERSION
    top = max(versions, default=None)
    if top is not None and top > latest:
        raise SchemaVersionError(
            f"the database schema is at version {top}, newer than the latest this release"
            f" knows ({latest}): it was migrated by a newer Export Center. Run that release"
            " (or a newer one); this one must not read or write it."
        )
    if (top is None and not has_task_table) or top == _INSTALLING:
        return MigrationPlan(None, fresh=True, steps=())
    if not has_task_table:
        raise SchemaVersionError(
            f"{VERSION_TABLE} records version {top} but the table file_export_task is"
            " missing: the database is damaged; restore it from a backup"
        )
    found = top if top is not None else BASELINE_VERSION
    return MigrationPlan(found, fresh=False, steps=tuple(s for s in steps if s.version > found))


@dataclass(frozen=True, slots=True)
class MigrationResult:
    """What a ``migrate`` run did.

    Attributes:
        found: the version found (``None``: an empty database).
        version: the version the database is at now.
        fresh: the whole schema was installed.
        applied: the steps applied, in order.
    """

    found: int | None
    version: int
    fresh: bool
    applied: tuple[Step, ...]

    @property
    def changed(self) -> bool:
        """Did the run change the schema?"""
        return self.fresh or bool(self.applied)

    def summary(self) -> str:
        """Lines for the operator: each applied step, then where the schema is now."""
        if self.fresh:
            return f"created the schema at version {self.version} (empty database)"
        if not self.applied:
            return f"schema already at version {self.version}: nothing to apply"
        lines = [f"applied version {s.version}: {s.description}" for s in self.applied]
        lines.append(f"schema upgraded from version {self.found} to {self.version}")
        return "\n".join(lines)


# -- the conversations ---------------------------------------------------------------------


def _read_state(dialect: Dialect) -> Generator[Query, Rows, tuple[bool, list[int]]]:
    has_tasks = yield from catalogue_has(dialect, TABLE_EXISTS, table="file_export_task")
    versions: list[int] = []
    if (yield from catalogue_has(dialect, TABLE_EXISTS, table=VERSION_TABLE)):
        rows = yield query(dialect, f"SELECT version FROM {VERSION_TABLE}")
        versions = [int(r["version"]) for r in rows]
    return has_tasks, versions


def _record(dialect: Dialect, version: int, description: str, now_ms: int) -> Query:
    params: dict[str, Any] = {"version": version, "description": description[:255]}
    if dialect.is_sqlite:
        params["applied_at"] = now_ms
        sql = _RECORD.replace("{applied_at}", ":applied_at")
    else:
        sql = _RECORD.replace("{applied_at}", "{now}")
    return query(dialect, sql, params)


def migration(dialect: Dialect, now_ms: int) -> Generator[Query, Rows, MigrationResult]:
    """Bring the database to ``LATEST_VERSION`` (see the module docstring).

    Args:
        dialect: the database's dialect.
        now_ms: the time recorded as ``applied_at``, epoch milliseconds (informational:
            no decision reads it).

    Returns:
        What was done (through ``StopIteration.value``; drivers return it).

    Raises:
        SchemaVersionError: from ``plan_migration``, before any change.
    """
    has_tasks, versions = yield from _read_state(dialect)
    plan = plan_migration(has_tasks, versions)
    if plan.fresh or plan.steps or not versions:
        yield ddl(dialect, _VERSION_TABLE_DDL[dialect.name])
    if plan.fresh:
        if _INSTALLING not in versions:
            yield _record(dialect, _INSTALLING, "fresh install under way", now_ms)
        for body in schema_statements(dialect.name):
            change = None if dialect.is_sqlite else IndexChange.parse(body)
            if change is not None:
                present = yield from catalogue_has(
                    dialect, INDEX_EXISTS, table=change.table, name=change.name
                )
                if not change.due(present):
                    continue
            yield ddl(dialect, body)
        yield _record(dialect, LATEST_VERSION, "created at this version (empty database)", now_ms)
        yield query(dialect, f"DELETE FROM {VERSION_TABLE} WHERE version = :v", {"v": _INSTALLING})
    else:
        if not versions:
            yield _record(
                dialect,
                BASELINE_VERSION,
                "found without a version table: the schema of before the download-center tables",
                now_ms,
            )
        for step in plan.steps:
            for op in step.operations:
                yield from op.apply(dialect)
            yield _record(dialect, step.version, step.description, now_ms)
    # Seed rows (the guard row) come back when missing, whatever the version.
    for body in schema_statements(dialect.name):
        if body.upper().startswith("INSERT"):
            yield ddl(dialect, body)
    return MigrationResult(plan.found, LATEST_VERSION, plan.fresh, plan.steps)


def schema_check(dialect: Dialect) -> Generator[Query, Rows, int]:
    """The start-up check of a database that is not migrated at start (MariaDB/MySQL).

    Returns:
        The database's version, which is ``LATEST_VERSION``.

    Raises:
        SchemaVersionError: the database is newer (see ``plan_migration``) or older than
            this code; the message says what to do.
    """
    has_tasks, versions = yield from _read_state(dialect)
    plan = plan_migration(has_tasks, versions)
    if plan.fresh or plan.steps:
        found = "empty" if plan.fresh else f"at version {plan.found}"
        raise SchemaVersionError(
            f"the database schema is {found}; this release needs version {LATEST_VERSION}:"
            " run `export-center migrate` first"
        )
    return LATEST_VERSION


def drive(conversation: Generator[Query, Rows, T], run: Callable[[Query], Rows]) -> T:
    """Run a conversation with a synchronous ``run(query) -> rows``; return its result."""
    try:
        query = next(conversation)
        while True:
            query = conversation.send(run(query))
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
