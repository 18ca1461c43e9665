"""Helpers of the operator's command tests (``tests/actors/cli/test_cli_ops*.py``): run the
commands against a database URL, and run store code over the same database."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio
from click.testing import CliRunner, Result

from actors.cli.main import main
from actors.composition.database import open_database
from actors.core.models import Task
from actors.plumbing.config import Settings
from db.ids import IdGenerator
from db.sqlite import wall_clock_ms
from db.store import ExportStore
from tests.helpers import TOPIC, claim, create, exec_sql, make_settings


def run_store(
    url: str,
    tmp_path: Path,
    fn: Callable[[ExportStore], Awaitable[Any]],
    *,
    migrate: bool = False,
) -> Any:
    """Run ``fn`` with a store over ``url`` (real clocks), in a trio run of its own."""
    settings: Settings = make_settings(tmp_path, database_url=url)

    async def go() -> Any:
        async with open_database(settings, migrate=migrate) as db:
            return await fn(ExportStore(db, IdGenerator(wall_clock_ms), topic=TOPIC))

    return trio.run(go)


def cli(url: str, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    """``export-center ARGS`` over the database at ``url`` (data directory ``tmp_path``),
    the demo Provider's service allowed whatever the database (the built-in registry names
    it; on MySQL it is off by default); the result keeps stdout and stderr apart
    (``result.stdout``, ``result.stderr``)."""
    env = {
        "FILE_EXPORT_DATABASE_URL": url,
        "FILE_EXPORT_DATA_DIR": str(tmp_path),
        "FILE_EXPORT_DEMO_PROVIDER": "true",
        **(env or {}),
    }
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


async def seed_dead_run(store: ExportStore) -> Task:
    """A RUNNING task whose instance died long ago: its lease ended 40 s and its
    execution deadline 4 s ago (by DB time)."""
    task = await claim(store, await create(store), "host-a:1", lease=300, max_duration=1800)
    await exec_sql(
        store,
        "UPDATE file_export_task SET lease_until = {now-:lease}, "
        "execution_deadline_at = {now-:deadline} WHERE id = :id",
        {"lease": 40, "deadline": 4, "id": task.id},
    )
    return task
