"""Fixtures of the operator's command tests (``tests/actors/cli/test_cli_ops*.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from db.store import ExportStore
from tests.actors.cli.operator_cli import run_store
from tests.helpers import MYSQL_TEST_URL


@pytest.fixture(params=["sqlite", "mariadb"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database with the schema, on each dialect; its URL for the commands."""
    url = f"sqlite:///{tmp_path}/ops.db" if request.param == "sqlite" else MYSQL_TEST_URL

    async def reset(store: ExportStore) -> None:
        async with store.db.transaction() as tx:
            for table in ("file_export_task_event", "file_export_outbox", "file_export_task"):
                await tx.execute(f"DELETE FROM {table}")

    run_store(url, tmp_path, reset, migrate=True)
    yield url
