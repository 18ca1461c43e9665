"""Schema versions and upgrade steps (db/migrations.py), the pure parts: the plan of missing
steps, the index changes read from the statements, one statement per secondary index."""

from __future__ import annotations

import pytest

from db.migration_ops import Step
from db.migration_steps import BASELINE_VERSION, LATEST_VERSION, STEPS
from db.migrations import (
    IndexChange,
    SchemaVersionError,
    plan_migration,
    schema_statements,
)

# -- the pure parts ------------------------------------------------------------------------

S2, S3 = Step(2, "two", ()), Step(3, "three", ())


@pytest.mark.parametrize(
    ("has_tasks", "versions", "found", "fresh", "steps"),
    [
        # empty database: the whole schema
        (False, [], None, True, []),
        # a fresh install that stopped half way (marker 0 still there): start it over
        (True, [0], None, True, []),
        (False, [0], None, True, []),
        # tables but no version rows: the schema of before the version table
        (True, [], 1, False, [2, 3]),
        (True, [1], 1, False, [2, 3]),
        (True, [1, 2], 2, False, [3]),
        (True, [3], 3, False, []),
        (True, [1, 2, 3], 3, False, []),
    ],
)
def test_plan_applies_each_missing_step_in_order(
    has_tasks: bool, versions: list[int], found: int | None, fresh: bool, steps: list[int]
) -> None:
    plan = plan_migration(has_tasks, versions, (S2, S3))
    assert (plan.found, plan.fresh, [s.version for s in plan.steps]) == (found, fresh, steps)


@pytest.mark.parametrize(
    ("has_tasks", "versions", "message"),
    [
        (True, [1, 2, 3, 4], "version 4, newer than the latest this release knows \\(3\\)"),
        (False, [4], "newer than the latest"),
        (False, [2], "file_export_task is missing"),
    ],
)
def test_plan_refuses_a_newer_or_damaged_database(
    has_tasks: bool, versions: list[int], message: str
) -> None:
    with pytest.raises(SchemaVersionError, match=message):
        plan_migration(has_tasks, versions, (S2, S3))


def test_steps_follow_the_baseline_one_version_each() -> None:
    assert [s.version for s in STEPS] == list(range(BASELINE_VERSION + 1, LATEST_VERSION + 1))
    assert all(s.description and s.operations for s in STEPS)


@pytest.mark.parametrize(
    ("statement", "change"),
    [
        (
            "CREATE INDEX idx_a ON file_export_task (status, id)",
            IndexChange("file_export_task", "idx_a", create=True),
        ),
        (
            "CREATE UNIQUE INDEX uk_b\n  ON file_export_outbox (event_id)",
            IndexChange("file_export_outbox", "uk_b", create=True),
        ),
        (
            "DROP INDEX idx_c ON file_export_task",
            IndexChange("file_export_task", "idx_c", create=False),
        ),
        ("CREATE TABLE IF NOT EXISTS t (id INT)", None),
        ("INSERT INTO file_export_task_guard (guard_key) SELECT 'GLOBAL_CREATE'", None),
    ],
)
def test_index_change_is_read_from_the_statement(
    statement: str, change: IndexChange | None
) -> None:
    assert IndexChange.parse(statement) == change


@pytest.mark.parametrize(
    ("create", "present", "due"),
    [(True, False, True), (True, True, False), (False, True, True), (False, False, False)],
)
def test_index_change_runs_only_when_it_changes_something(
    create: bool, present: bool, due: bool
) -> None:
    assert IndexChange("t", "i", create=create).due(present) is due


def test_every_secondary_index_of_the_mysql_schema_is_its_own_statement() -> None:
    """Inside CREATE TABLE an index could not be created only when missing."""
    for stmt in schema_statements("mysql"):
        if stmt.startswith("CREATE TABLE"):
            keys = [line for line in stmt.splitlines() if line.strip().startswith("KEY ")]
            assert keys == [], stmt
