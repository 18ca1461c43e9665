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

Adding a step: append a ``Step`` with the next version to ``STEPS`` and make the same
change in both schema files.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, TypeVar

from actors.core.errors import ConfigError
from db.dialect import Dialect

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


# -- catalogue probes ----------------------------------------------------------------------

_TABLE_EXISTS = {
    "sqlite": "SELECT 1 AS present FROM sqlite_master WHERE type = 'table' AND name = :table",
    "mysql": "SELECT 1 AS present FROM information_schema.TABLES"
    " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = :table",
}
_INDEX_EXISTS = {
    "sqlite": "SELECT 1 AS present FROM sqlite_master"
    " WHERE type = 'index' AND tbl_name = :table AND name = :name",
    "mysql": "SELECT 1 AS present FROM information_schema.STATISTICS"
    " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = :table AND INDEX_NAME = :name LIMIT 1",
}
_COLUMN_EXISTS = {
    "sqlite": "SELECT 1 AS present FROM pragma_table_info(:table) WHERE name = :name",
    "mysql": "SELECT 1 AS present FROM information_schema.COLUMNS"
    " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = :table AND COLUMN_NAME = :name",
}


@dataclass(frozen=True, slots=True)
class Query:
    """One statement for a driver to run.

    Attributes:
        sql: rendered for the dialect (MySQL: pyformat, every literal ``%`` doubled; run it
            with the ``params`` dict even when it is empty).
        params: its named parameters.
    """

    sql: str
    params: Mapping[str, Any] = field(default_factory=dict)


#: What a driver sends back for a ``Query``: its rows (``[]`` for a statement without).
Rows = list[dict[str, Any]]
#: A migration or check written as a generator: yields queries, is sent their rows.
Conversation = Generator[Query, Rows, Any]


def _query(dialect: Dialect, sql: str, params: Mapping[str, Any] | None = None) -> Query:
    return Query(dialect.render(sql), dict(params or {}))


def _ddl(dialect: Dialect, sql: str) -> Query:
    # DDL is not a transition template: only pyformat's % needs escaping.
    return Query(sql if dialect.is_sqlite else sql.replace("%", "%%"))


def _present(dialect: Dialect, probes: Mapping[str, str], **params: str) -> Conversation:
    rows = yield _query(dialect, probes[dialect.name], params)
    return bool(rows)


# -- upgrade operations --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CreateTable:
    """Create a table when it is missing (its DDL as written when the step was added)."""

    name: str
    sqlite: str
    mysql: str

    def apply(self, dialect: Dialect) -> Conversation:
        """Run it unless the table is there."""
        if not (yield from _present(dialect, _TABLE_EXISTS, table=self.name)):
            yield _ddl(dialect, self.sqlite if dialect.is_sqlite else self.mysql)


@dataclass(frozen=True, slots=True)
class CreateIndex:
    """Create a secondary index when it is missing. ``columns`` like ``(a, b)``."""

    table: str
    name: str
    columns: str

    def apply(self, dialect: Dialect) -> Conversation:
        """Run it unless an index of that name is there."""
        if not (yield from _present(dialect, _INDEX_EXISTS, table=self.table, name=self.name)):
            yield _ddl(dialect, f"CREATE INDEX {self.name} ON {self.table} {self.columns}")


@dataclass(frozen=True, slots=True)
class DropIndex:
    """Drop a retired secondary index when it is there."""

    table: str
    name: str

    def apply(self, dialect: Dialect) -> Conversation:
        """Run it if the index is there."""
        if (yield from _present(dialect, _INDEX_EXISTS, table=self.table, name=self.name)):
            on = "" if dialect.is_sqlite else f" ON {self.table}"
            yield _ddl(dialect, f"DROP INDEX {self.name}{on}")


@dataclass(frozen=True, slots=True)
class AddColumn:
    """Add a column at the end of an existing table when it is missing (so a migrated
    table has the columns of a fresh one in the same order)."""

    table: str
    name: str
    sqlite: str
    mysql: str

    def apply(self, dialect: Dialect) -> Conversation:
        """Run it unless the column is there."""
        if not (yield from _present(dialect, _COLUMN_EXISTS, table=self.table, name=self.name)):
            definition = self.sqlite if dialect.is_sqlite else self.mysql
            yield _ddl(dialect, f"ALTER TABLE {self.table} ADD COLUMN {self.name} {definition}")


@dataclass(frozen=True, slots=True)
class Backfill:
    """Fill a column just added to existing rows: one ``UPDATE`` written once for both
    dialects (``{now}``-free, no dialect function), idempotent by its own ``WHERE`` (it
    only touches rows still unset), so an interrupted step can run it again. On MySQL it
    must assign ``updated_at = updated_at`` (``ON UPDATE CURRENT_TIMESTAMP`` would move
    it otherwise)."""

    table: str
    sql: str

    def apply(self, dialect: Dialect) -> Conversation:
        """Run it."""
        yield _ddl(dialect, self.sql)


Operation = CreateTable | CreateIndex | DropIndex | AddColumn | Backfill


@dataclass(frozen=True, slots=True)
class Step:
    """One schema version: what brings a database from ``version - 1`` to ``version``.

    Attributes:
        version: the version the database is at once the step is applied.
        description: one line, printed by ``export-center migrate`` and recorded.
        operations: applied in order, each idempotent.
    """

    version: int
    description: str
    operations: tuple[Operation, ...]


#: The schema of before the download-center tables, as deployed without a version table.
BASELINE_VERSION = 1

STEPS: tuple[Step, ...] = (
    Step(
        2,
        "download-center tables: file_export_task_event and its indexes, the list and"
        " retention indexes",
        (
            CreateTable(
                "file_export_task_event",
                sqlite="""CREATE TABLE IF NOT EXISTS file_export_task_event (
  id INTEGER NOT NULL PRIMARY KEY,
  task_id INTEGER NOT NULL,
  kind TEXT NOT NULL,
  detail_json TEXT NOT NULL,
  created_at INTEGER NOT NULL
)""",
                mysql="""CREATE TABLE IF NOT EXISTS file_export_task_event (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT COMMENT 'commit order within a task',
  task_id BIGINT UNSIGNED NOT NULL,
  kind VARCHAR(32) NOT NULL COMMENT 'actors/core/events.py TaskEventKind',
  detail_json TEXT NOT NULL COMMENT 'the fields of the kind',
  created_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (id)
) ENGINE=InnoDB COMMENT='append-only history of each task, written with its transitions'""",
            ),
            CreateIndex(
                "file_export_task_event", "idx_file_export_task_event_task", "(task_id, id)"
            ),
            CreateIndex(
                "file_export_task_event", "idx_file_export_task_event_age", "(created_at, id)"
            ),
            CreateIndex("file_export_task", "idx_file_export_expiry", "(status, expires_at, id)"),
            CreateIndex(
                "file_export_task",
                "idx_file_export_requester_status",
                "(tenant_id, app_code, requested_by, status, id)",
            ),
            CreateIndex("file_export_task", "idx_file_export_scope", "(tenant_id, app_code, id)"),
            CreateIndex(
                "file_export_task",
                "idx_file_export_scope_status",
                "(tenant_id, app_code, status, id)",
            ),
            CreateIndex(
                "file_export_outbox", "idx_file_export_outbox_sent", "(status, sent_at, id)"
            ),
            # replaced by idx_file_export_requester_status
            DropIndex("file_export_task", "idx_file_export_requester_active"),
        ),
    ),
    Step(
        3,
        "file_export_task.trace_id and warnings_json columns",
        (
            AddColumn(
                "file_export_task",
                "trace_id",
                sqlite="TEXT NULL",
                mysql="VARCHAR(32) NULL"
                " COMMENT 'W3C trace id (32 lowercase hex), created at the API'",
            ),
            AddColumn(
                "file_export_task",
                "warnings_json",
                sqlite="TEXT NULL",
                mysql="TEXT NULL"
                " COMMENT 'JSON list of the data warnings of the last successful run'",
            ),
        ),
    ),
    Step(
        4,
        "list indexes ordered by requested_at: the list's requested-at range and order",
        (
            CreateIndex(
                "file_export_task",
                "idx_file_export_requester_time",
                "(tenant_id, app_code, requested_by, requested_at, id)",
            ),
            CreateIndex(
                "file_export_task",
                "idx_file_export_requester_status_time",
                "(tenant_id, app_code, requested_by, status, requested_at, id)",
            ),
            CreateIndex(
                "file_export_task",
                "idx_file_export_scope_time",
                "(tenant_id, app_code, requested_at, id)",
            ),
            CreateIndex(
                "file_export_task",
                "idx_file_export_scope_status_time",
                "(tenant_id, app_code, status, requested_at, id)",
            ),
            # replaced by the four above (the list orders by requested_at, then id)
            DropIndex("file_export_task", "idx_file_export_requester"),
            DropIndex("file_export_task", "idx_file_export_requester_status"),
            DropIndex("file_export_task", "idx_file_export_scope"),
            DropIndex("file_export_task", "idx_file_export_scope_status"),
        ),
    ),
    Step(
        5,
        "file_export_task.handback_count and file_export_outbox.due_at columns",
        (
            AddColumn(
                "file_export_task",
                "handback_count",
                sqlite="INTEGER NOT NULL DEFAULT 0",
                mysql="INT NOT NULL DEFAULT 0 COMMENT 'hand-backs in a row since an attempt"
                " last ended otherwise (actors/core/handback.py)'",
            ),
            AddColumn(
                "file_export_outbox",
                "due_at",
                sqlite="INTEGER NULL",
                mysql="DATETIME(3) NULL COMMENT 'first due since written or re-queued; send"
                " back-off never moves it (NULL: written by a release before it)'",
            ),
            # The unsent rows only (status-led index; SENT rows are history and are never
            # counted). A row never tried is due from next_retry_at; a row tried at least
            # once was due at its first claim, which its back-off has overwritten: the
            # earlier of its last attempt (updated_at) and next_retry_at is the best
            # bound left. It is never earlier than the truth: the age it gives may read
            # short, never long (no false alarm after a migrate).
            Backfill(
                "file_export_outbox",
                """UPDATE file_export_outbox
   SET due_at = CASE WHEN attempt_count = 0 OR next_retry_at <= updated_at
                     THEN next_retry_at ELSE updated_at END,
       updated_at = updated_at
 WHERE status IN ('PENDING', 'CLAIMED') AND due_at IS NULL""",
            ),
        ),
    ),
)

#: The version this code reads and writes.
LATEST_VERSION = STEPS[-1].version

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
    has_tasks = yield from _present(dialect, _TABLE_EXISTS, table="file_export_task")
    versions: list[int] = []
    if (yield from _present(dialect, _TABLE_EXISTS, table=VERSION_TABLE)):
        rows = yield _query(dialect, f"SELECT version FROM {VERSION_TABLE}")
        versions = [int(r["version"]) for r in rows]
    return has_tasks, versions


def _record(dialect: Dialect, version: int, description: str, now_ms: int) -> Query:
    params: dict[str, Any] = {"version": version, "description": description[:255]}
    if dialect.is_sqlite:
        params["applied_at"] = now_ms
        sql = _RECORD.replace("{applied_at}", ":applied_at")
    else:
        sql = _RECORD.replace("{applied_at}", "{now}")
    return _query(dialect, sql, params)


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
        yield _ddl(dialect, _VERSION_TABLE_DDL[dialect.name])
    if plan.fresh:
        if _INSTALLING not in versions:
            yield _record(dialect, _INSTALLING, "fresh install under way", now_ms)
        for body in schema_statements(dialect.name):
            change = None if dialect.is_sqlite else IndexChange.parse(body)
            if change is not None:
                present = yield from _present(
                    dialect, _INDEX_EXISTS, table=change.table, name=change.name
                )
                if not change.due(present):
                    continue
            yield _ddl(dialect, body)
        yield _record(dialect, LATEST_VERSION, "created at this version (empty database)", now_ms)
        yield _query(dialect, f"DELETE FROM {VERSION_TABLE} WHERE version = :v", {"v": _INSTALLING})
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
            yield _ddl(dialect, body)
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
