"""The troubleshooting table of ``docs/operations.md``: every row the core can diagnose
(``actors.core.ops.troubleshooting.Symptom``) is in the table under its anchor with a query
section, and every SQL block there runs on MariaDB and SQLite and finds the tasks of its
row — one task seeded per row by the store's own transitions on the real clock, plus a
healthy running task that no query may list; ``inspect``'s diagnosis of the same tasks
agrees with the queries (issue 12 item 4)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio_asyncio

from actors.core.ops.troubleshooting import Symptom, diagnose
from db.ids import IdGenerator
from db.mysql import MysqlDatabase
from db.sqlite import SqliteDatabase, wall_clock_ms
from db.store import ExportStore
from tests.helpers import (
    MYSQL_TEST_URL,
    REPO,
    TOPIC,
    claim,
    complete,
    create,
    exec_sql,
    reset_mysql,
)

DOC = REPO / "docs" / "operations.md"
SQL_BLOCK = re.compile(r"```sql\n(.*?)```", re.S)
DIALECT_MARK = {"-- MariaDB / MySQL": "mariadb", "-- SQLite": "sqlite"}


@dataclass(frozen=True)
class Query:
    symptom: Symptom
    dialect: str | None  # None: one text for both
    sql: str


def troubleshooting_section() -> str:
    text = DOC.read_text()
    start = text.index("\n## Troubleshooting\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def doc_queries() -> list[Query]:
    """Every SQL block of each row's query section, with its dialect."""
    section = troubleshooting_section()
    queries = []
    parts = re.split(r'<a id="query-([a-z-]+)"></a>', section)
    for anchor, body in zip(parts[1::2], parts[2::2], strict=True):
        for block in SQL_BLOCK.findall(body):
            first = block.splitlines()[0].strip()
            queries.append(Query(Symptom(anchor), DIALECT_MARK.get(first), block))
    return queries


def test_every_row_has_its_anchor_query_and_both_dialects() -> None:
    section = troubleshooting_section()
    table = [line for line in section.splitlines() if line.startswith("| <a id=")]
    rows = [re.match(r'\| <a id="([a-z-]+)"></a>', line) for line in table]
    assert [m.group(1) for m in rows if m] == [s.value for s in Symptom]  # the core's order
    for line in table:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == 4 and all(cells), line  # symptom, query, cause, action
        anchor = re.search(r"\(#(query-[a-z-]+)\)", cells[1])
        assert anchor and f'<a id="{anchor.group(1)}"></a>' in section, line
    assert "[`export-center inspect ID`](#operators-commands)" in section
    assert "\n## Operator's commands\n" in DOC.read_text()  # the anchor it links to
    by_symptom: dict[Symptom, set[str | None]] = {}
    for q in doc_queries():
        by_symptom.setdefault(q.symptom, set()).add(q.dialect)
    for symptom in Symptom:
        dialects = by_symptom.get(symptom)
        assert dialects in ({None}, {"mariadb", "sqlite"}, {None, "mariadb", "sqlite"}), (
            symptom,
            dialects,
        )


@pytest.fixture(params=["sqlite", "mariadb"])
async def real_clock_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[ExportStore]:
    """The store on the real clock (the queries compare with the database's own now)."""
    if request.param == "sqlite":
        db = SqliteDatabase(tmp_path / "ops.db", clock_ms=wall_clock_ms)
        db.migrate()
        yield ExportStore(db, IdGenerator(wall_clock_ms), topic=TOPIC)
        await db.aclose()
        return
    async with trio_asyncio.open_loop() as loop:
        mdb = MysqlDatabase(MYSQL_TEST_URL, loop)
        await reset_mysql(mdb)
        yield ExportStore(mdb, IdGenerator(wall_clock_ms), topic=TOPIC)
        await mdb.aclose()


async def shift(store: ExportStore, table: str, task_id: int, **seconds_ago: float) -> None:
    """Move a row's times into the past, by the database clock."""
    sets = ", ".join(f"{col} = {{now-:{col}}}" for col in seconds_ago)
    key = "id" if table == "file_export_task" else "task_id"
    await exec_sql(
        store,
        f"UPDATE {table} SET {sets} WHERE {key} = :task_id",
        {**seconds_ago, "task_id": task_id},
    )


async def send_commands(store: ExportStore) -> None:
    """What the publisher does: every due command SENT."""
    for row in await store.claim_due_outbox("publisher", 30, 100):
        assert await store.mark_outbox_sent(row.id, "publisher")


async def seed(store: ExportStore) -> tuple[dict[Symptom, set[int]], int]:
    """One task per troubleshooting row (two for lease recovery: one still RUNNING, one
    already recovered), and a healthy RUNNING task; their ids. Each of its own export type,
    to stay under the active tasks allowed per type."""
    stuck = await create(store, user_id=1, export_type="T1")
    backlog = await create(store, user_id=2, export_type="T2")
    expired_lease = await claim(store, await create(store, user_id=3, export_type="T3"), lease=300)
    recovered = await claim(store, await create(store, user_id=4, export_type="T4"), lease=300)
    poisoned = await create(store, user_id=5, export_type="T5")
    retrying = await claim(store, await create(store, user_id=6, export_type="T6"))
    spent = await create(store, user_id=7, export_type="T7", max_attempts=1)
    expired_file = await claim(store, await create(store, user_id=8, export_type="T8"))
    past_deadline = await claim(store, await create(store, user_id=9, export_type="T9"), lease=300)
    healthy = await claim(
        store, await create(store, user_id=10, export_type="T10"), lease=300, max_duration=600
    )
    permanent = await claim(store, await create(store, user_id=11, export_type="T11"))
    waiting = await claim(
        store, await create(store, user_id=12, export_type="T12"), lease=300, max_duration=600
    )

    [poison_row] = await store.list_outbox(poisoned.id)
    await send_commands(store)  # every command so far SENT (the backlog's comes below)
    await shift(store, "file_export_task", stuck.id, next_retry_at=700)
    await shift(store, "file_export_task", expired_lease.id, lease_until=40)
    await shift(store, "file_export_task", recovered.id, lease_until=40)
    [lost] = [t for t in await store.expired_leases(10) if t.id == recovered.id]
    await store.recover_expired_lease(lost, "lease expired", "lease expired, attempts spent")
    await store.quarantine(poison_row.event_id, poisoned.id, 1, "undecodable body")
    await store.schedule_retry(retrying, "owner-a", "Provider unavailable", 900)
    await store.fail_task(await claim(store, spent), "owner-a", "Provider unavailable")
    assert await complete(store, expired_file, retention_seconds=1)
    await store.fail_task(permanent, "owner-a", "provider contract: column 'x' undeclared")
    await shift(store, "file_export_task", waiting.id, started_at=120)
    await shift(store, "file_export_task", expired_file.id, expires_at=400)
    await shift(store, "file_export_task", past_deadline.id, execution_deadline_at=4)
    await send_commands(store)  # the recovered task's new command: sent, not a backlog
    await exec_sql(  # the backlog: its command back to unsent, due 200 s ago
        store,
        "UPDATE file_export_outbox SET status = 'PENDING', sent_at = NULL,"
        " next_retry_at = {now-:ago}, due_at = {now-:ago} WHERE task_id = :id",
        {"ago": 200, "id": backlog.id},
    )
    expected = {
        Symptom.STUCK_PENDING: {stuck.id},
        Symptom.OUTBOX_BACKLOG: {backlog.id},
        Symptom.LEASE_RECOVERY: {expired_lease.id, recovered.id},
        Symptom.QUARANTINED: {poisoned.id},
        Symptom.RETRIES: {retrying.id, spent.id, recovered.id},  # recovery counts one
        Symptom.EXPIRED_NOT_CLEANED: {expired_file.id},
        Symptom.PAST_DEADLINE: {past_deadline.id},
        Symptom.PERMANENT_FAILURE: {permanent.id},
        Symptom.WAITING_ON_PROVIDER: {waiting.id},
    }
    return expected, healthy.id


async def test_every_query_runs_and_finds_its_tasks(real_clock_store: ExportStore) -> None:
    store = real_clock_store
    dialect = "sqlite" if store.db.dialect.is_sqlite else "mariadb"
    expected, healthy = await seed(store)
    found: dict[Symptom, set[int]] = {}
    ran = 0
    for q in doc_queries():
        if q.dialect not in (None, dialect):
            continue
        async with store.db.transaction() as tx:
            rows = await tx.fetchall(q.sql.strip().rstrip(";"))
        ran += 1
        ids = {int(next(iter(r.values()))) for r in rows}  # the first column: the task id
        assert healthy not in ids, q.sql
        found.setdefault(q.symptom, set()).update(ids)
    assert ran >= len(Symptom)
    assert found == expected

    # ``export-center inspect`` names the same rows for the same tasks.
    diagnosed: dict[Symptom, set[int]] = {}
    for task_id in set().union(*expected.values()) | {healthy}:
        seen = await store.inspect_task(task_id)
        assert seen is not None
        for finding in diagnose(seen):
            diagnosed.setdefault(finding.symptom, set()).add(task_id)
    assert diagnosed == expected
