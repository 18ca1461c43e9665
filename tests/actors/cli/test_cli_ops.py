"""``export-center tasks list|show|cancel|retry`` and ``inspect`` on SQLite and MariaDB:
the commands read the database named by the environment (as ``migrate`` does), tell
leases and deadlines by DB time, name the troubleshooting row that applies, and cancel and
retry through the API's own transitions."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from actors.core.data_warning import DataWarning, WarningKind
from actors.core.models import Task, TaskStatus
from actors.storage.keys import new_object_key
from db.store import ExportStore
from tests.actors.cli.operator_cli import cli, run_store, seed_dead_run
from tests.deploy.metric_names import REPO
from tests.helpers import claim, complete, create, exec_sql, new_task


def test_list_and_show_every_tenant_by_db_time(database_url: str, tmp_path: Path) -> None:
    async def seed(store: ExportStore) -> tuple[Task, Task]:
        queued = await create(store, user_id=1)
        other = await create(store, user_id=2, tenant_id=9)
        return queued, await claim(store, other, "host-b:7", lease=300, max_duration=1800)

    queued, running = run_store(database_url, tmp_path, seed)
    listed = cli(database_url, tmp_path, "tasks", "list")
    assert listed.exit_code == 0, listed.output
    header, first, second = listed.output.splitlines()
    assert header.split() == [
        "TASK",
        "STATUS",
        "TYPE",
        "VERSION",
        "ATTEMPT",
        "TENANT/APP/USER",
        "WHEN",
        "LAST",
        "ERROR",
    ]
    assert first.startswith(f"{running.id} ") and "RUNNING" in first and "t9/PLATFORM/u2" in first
    assert " 1       1 of 3  " in first  # version 1, its first attempt of 3
    assert "lease ends in 4 min 5" in first  # 300 s lease, a moment of DB time gone
    assert second.startswith(f"{queued.id} ") and "PENDING" in second and "next try " in second

    only = cli(database_url, tmp_path, "tasks", "list", "--status", "PENDING", "--limit", "5")
    assert [line.split()[0] for line in only.output.splitlines()[1:]] == [str(queued.id)]
    none = cli(database_url, tmp_path, "tasks", "list", "--type", "ORDER_LIST")
    assert none.exit_code == 0 and none.output == "no tasks\n"

    shown = cli(database_url, tmp_path, "tasks", "show", f"EXP{running.id}")  # as the page shows it
    assert shown.exit_code == 0, shown.output
    assert f"task {running.id} (EXP{running.id}) CUSTOMER_LIST RUNNING" in shown.output
    assert "requester   tenant 9, app PLATFORM, user 2" in shown.output
    assert "lease       host-b:7, ends in 4 min 5" in shown.output
    assert "deadline    in 29 min 5" in shown.output

    async def rename(store: ExportStore) -> None:
        await exec_sql(
            store,
            "UPDATE file_export_task SET task_name = :name WHERE id = :id",
            {"name": "客户名单\ntask 1 SUCCEEDED", "id": queued.id},
        )

    run_store(database_url, tmp_path, rename)
    named = cli(database_url, tmp_path, "tasks", "show", str(queued.id))
    assert "  name        客户名单\\ntask 1 SUCCEEDED\n" in named.output  # no forged line

    missing = cli(database_url, tmp_path, "tasks", "show", "123")
    assert missing.exit_code == 1 and "export task 123 not found" in missing.output
    bad = cli(database_url, tmp_path, "tasks", "show", "12a")
    assert bad.exit_code == 2 and "is not a task: give its id" in bad.output


def test_inspect_names_the_troubleshooting_row(database_url: str, tmp_path: Path) -> None:
    task = run_store(database_url, tmp_path, seed_dead_run)
    seen = cli(database_url, tmp_path, "inspect", str(task.id))
    assert seen.exit_code == 0, seen.output
    out = seen.output
    assert "lease       host-a:1, ended 40." in out and "s ago" in out
    assert "deadline    passed 4." in out
    # claimed before its command was sent: the claim closed the command (never sent)
    assert "outbox (1 rows)\n  v1   SENT" in out
    assert re.search(r"event [0-9a-f-]{36}  trace [0-9a-f]{32}  ", out)  # to find its logs
    assert "not sent: the task was claimed from the database first\n" in out
    assert "events (newest 2, oldest first)" in out and " claimed " in out
    assert "troubleshooting\n  lease-recovery: RUNNING on host-a:1 whose lease ended 40." in out
    assert "see docs/operations.md#lease-recovery" in out
    assert "  past-deadline: still RUNNING; its deadline passed 4." in out
    assert "see docs/operations.md#past-deadline" in out

    healthy = run_store(database_url, tmp_path, lambda store: create(store, user_id=3))
    fine = cli(database_url, tmp_path, "inspect", str(healthy.id), "--events", "1")
    assert "troubleshooting\n  no troubleshooting row applies" in fine.output
    assert "events (newest 1, oldest first)" in fine.output


def test_cancel_and_retry_use_the_api_transitions(database_url: str, tmp_path: Path) -> None:
    task = run_store(database_url, tmp_path, create)

    cancelled = cli(database_url, tmp_path, "tasks", "cancel", str(task.id))
    assert cancelled.exit_code == 0 and cancelled.output == f"task {task.id} cancelled\n"
    again = cli(database_url, tmp_path, "tasks", "cancel", str(task.id))
    assert again.exit_code == 0 and again.output == f"task {task.id} already cancelled\n"

    async def history(store: ExportStore) -> tuple[Task | None, list[str]]:
        return await store.get_task(task.id), [
            e.kind.value for e in await store.list_task_events(task.id)
        ]

    now, kinds = run_store(database_url, tmp_path, history)
    assert now is not None and now.status == TaskStatus.CANCELLED
    assert now.failure_message == "cancelled by an operator"
    assert kinds == ["created", "cancelled"]

    retried = cli(database_url, tmp_path, "tasks", "retry", str(task.id))
    assert retried.exit_code == 0, retried.output
    assert retried.output == f"task {task.id} retried as version 2, PENDING\n"
    now, kinds = run_store(database_url, tmp_path, history)
    assert now is not None and now.status == TaskStatus.PENDING and now.dispatch_version == 2
    assert kinds == ["created", "cancelled", "retry_scheduled"]

    refused = cli(database_url, tmp_path, "tasks", "retry", str(task.id))
    assert refused.exit_code == 1
    assert "only FAILED or CANCELLED tasks can be retried; the task is PENDING" in refused.output

    async def finish(store: ExportStore) -> None:
        running = await claim(store, now)
        assert await complete(store, running)

    run_store(database_url, tmp_path, finish)
    late = cli(database_url, tmp_path, "tasks", "cancel", str(task.id))
    assert late.exit_code == 1
    assert (
        f"task {task.id}: only PENDING or RUNNING tasks can be cancelled; the task is SUCCEEDED"
        in late.output
    )


def test_a_missing_sqlite_file_is_not_created(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/typo.db"
    result = cli(url, tmp_path, "tasks", "list")
    assert result.exit_code == 1 and "no SQLite database at" in result.output
    assert not (tmp_path / "typo.db").exists()


def test_retry_deletes_the_leftover_file_like_the_api(database_url: str, tmp_path: Path) -> None:
    """A RUNNING task cancelled keeps its attempt's file key; the retry deletes the file
    (when the command can reach the storage directory) before the new version runs."""
    key_holder: dict[str, str] = {}

    async def seed(store: ExportStore) -> Task:
        running = await claim(store, await create(store))
        key = new_object_key(running.id)
        assert await store.record_object_key(running, "owner-a", key)
        key_holder["key"] = key
        return running

    task = run_store(database_url, tmp_path, seed)
    leftover = tmp_path / "files" / key_holder["key"]
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"partial")
    assert cli(database_url, tmp_path, "tasks", "cancel", str(task.id)).exit_code == 0
    retried = cli(database_url, tmp_path, "tasks", "retry", str(task.id))
    assert retried.exit_code == 0, retried.output
    assert not leftover.exists()


@pytest.mark.parametrize(
    "command", [("tasks", "show"), ("tasks", "cancel"), ("tasks", "retry"), ("inspect",)]
)
@pytest.mark.parametrize(
    ("raw", "code", "says"),
    [
        ("99999999999999999999999", 1, "not found"),  # past the id range: no such task
        ("18446744073709551616", 1, "not found"),
        ("+5", 2, "is not a task: give its id"),
        ("٥", 2, "is not a task: give its id"),  # a non-ASCII digit
    ],
)
def test_a_task_id_outside_the_rule_is_an_error_not_a_traceback(
    tmp_path: Path, command: tuple[str, ...], raw: str, code: int, says: str
) -> None:
    # The id is checked before any database is opened (the URL need not exist).
    result = cli(f"sqlite:///{tmp_path}/none.db", tmp_path, *command, raw)
    assert result.exit_code == code, result.output
    assert says in result.output
    assert "Traceback" not in result.output


def test_show_and_inspect_tell_the_trace_id_and_the_warnings(
    database_url: str, tmp_path: Path
) -> None:
    """The trace id finds the task's log lines; the warnings are those the API's task JSON
    shows (stored with SUCCEEDED), escaped like any text from outside."""
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    warning = "1 cells truncated to 32767 characters (batch 1 row 7 column 're\x1bmark')"

    async def seed(store: ExportStore) -> tuple[Task, Task]:
        plain = await create(store, user_id=1)  # created before trace ids: none
        traced = await store.create_task(replace(new_task(2), trace_id=trace))
        assert traced.task is not None
        running = await claim(store, traced.task)
        assert await complete(
            store, running, warnings=[DataWarning(WarningKind.TRUNCATED_CELLS, warning)]
        )
        return plain, running

    plain, done = run_store(database_url, tmp_path, seed)
    for command in (("tasks", "show"), ("inspect",)):
        shown = cli(database_url, tmp_path, *command, str(done.id))
        assert shown.exit_code == 0, shown.output
        assert f"\n  trace       {trace}\n" in shown.output
        assert "\n  warnings    1\n    - 1 cells truncated to 32767 characters" in shown.output
        assert "re\\x1bmark" in shown.output and "\x1b" not in shown.output
        quiet = cli(database_url, tmp_path, *command, str(plain.id))
        assert "\n  trace       -\n" in quiet.output
        assert "warnings" not in quiet.output


def test_retry_checks_the_registry_in_force_like_the_api(database_url: str, tmp_path: Path) -> None:
    """A type disabled (or gone) in FILE_EXPORT_REGISTRY since the task ran refuses the
    operator's retry as it refuses the API's, and the output says why."""
    task = run_store(database_url, tmp_path, create)
    assert cli(database_url, tmp_path, "tasks", "cancel", str(task.id)).exit_code == 0
    default = (REPO / "actors" / "defaults" / "registry.yaml").read_text()
    assert "    enabled: true\n" in default
    disabled = tmp_path / "disabled.yaml"
    disabled.write_text(default.replace("    enabled: true\n", "    enabled: false\n", 1))
    env = {"FILE_EXPORT_REGISTRY": str(disabled)}

    refused = cli(database_url, tmp_path, "tasks", "retry", str(task.id), env=env)
    assert refused.exit_code == 1
    assert f"task {task.id} not retried: export type CUSTOMER_LIST is disabled" in refused.output
    assert str(disabled) in refused.output  # which registry said so

    gone = tmp_path / "gone.yaml"
    gone.write_text("definitions: {}\n")
    unknown = cli(
        database_url,
        tmp_path,
        "tasks",
        "retry",
        str(task.id),
        env={"FILE_EXPORT_REGISTRY": str(gone)},
    )
    assert unknown.exit_code == 1 and "unknown export type 'CUSTOMER_LIST'" in unknown.output

    async def status(store: ExportStore) -> Task | None:
        return await store.get_task(task.id)

    still = run_store(database_url, tmp_path, status)
    assert still is not None and still.status == TaskStatus.CANCELLED
    assert still.dispatch_version == 1

    enabled = cli(database_url, tmp_path, "tasks", "retry", str(task.id))  # built-in registry
    assert enabled.exit_code == 0, enabled.output
