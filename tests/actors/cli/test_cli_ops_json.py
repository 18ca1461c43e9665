"""``export-center tasks list|show|cancel|retry --json`` and ``inspect --json`` on SQLite
and MariaDB: one JSON document on stdout (UTF-8, nothing else there), the task as the
API's ``GET .../export-tasks/{id}`` answers it, what ``inspect`` adds by DB time, each
cancel and retry outcome, and a failure as ``{"error": ...}`` with the text mode's exit
status."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from actors.core.data_warning import DataWarning, WarningKind
from actors.core.models import Task
from actors.core.ops.operator_json import OperatorOutcome
from actors.storage.local import LocalDirectoryStorage
from db.store import ExportStore
from tests.actors.cli.operator_cli import cli, run_store, seed_dead_run
from tests.deploy.metric_names import REPO
from tests.helpers import API, claim, complete, create, exec_sql, new_task
from tests.servers import api_app, headers

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
NAME = "客户名单 «März»"


def document(result: Result) -> Any:
    """The one JSON document a ``--json`` command printed: stdout as a whole must parse,
    as UTF-8 (not ``\\u`` escapes: ``ensure_ascii=False``)."""
    return json.loads(result.stdout_bytes.decode("utf-8"))


async def seed(store: ExportStore) -> dict[str, int]:
    """A SUCCEEDED task with a trace id, warnings and a non-ASCII name, a PENDING one
    waiting to retry after a failure, and a RUNNING one: between them every field of the
    task object that can be null is null in one and set in another."""
    made = await store.create_task(replace(new_task(7, params={"rowCount": 5}), trace_id=TRACE))
    assert made.task is not None
    await exec_sql(
        store,
        "UPDATE file_export_task SET task_name = :name WHERE id = :id",
        {"name": NAME, "id": made.task.id},
    )
    running = await claim(store, made.task)
    warning = "1 cells truncated to 32767 characters (batch 1 row 7 column 'remark')"
    assert await complete(
        store,
        running,
        rows=5,
        total_rows=6,
        warnings=[DataWarning(WarningKind.TRUNCATED_CELLS, warning)],
    )

    waiting = await claim(store, await create(store, user_id=7, params={"n": 2}))
    await store.schedule_retry(waiting, "owner-a", "provider timed out", backoff_seconds=60)
    busy = await claim(store, await create(store, user_id=7, params={"n": 3}), "host-b:2")
    return {"succeeded": made.task.id, "waiting": waiting.id, "running": busy.id}


def test_the_task_object_is_what_the_api_answers(database_url: str, tmp_path: Path) -> None:
    """The operator's task object and the API's cannot drift: ``tasks show --json``,
    each item of ``tasks list --json`` and ``inspect --json``'s ``task`` equal the
    ``data`` of ``GET /api/platform/v1/files/export-tasks/{id}`` for the same task
    (same keys, same values), for a finished, a waiting and a running task."""
    ids = run_store(database_url, tmp_path, seed)

    async def api_view(store: ExportStore) -> dict[int, dict[str, Any]]:
        app, _ = api_app(store, LocalDirectoryStorage(tmp_path / "files"))
        client = app.test_client()
        answers = {}
        for tid in ids.values():
            body = await (await client.get(f"{API}/{tid}", headers=headers(7))).get_json()
            assert body["code"] == "200", body
            answers[tid] = body["data"]
        return answers

    api = run_store(database_url, tmp_path, api_view)
    done = api[ids["succeeded"]]
    assert done["taskName"] == NAME and done["traceId"] == TRACE and done["warnings"]
    assert api[ids["waiting"]]["lastError"] == "provider timed out"

    listed = cli(database_url, tmp_path, "tasks", "list", "--json")
    assert listed.exit_code == 0, listed.output
    assert document(listed) == [api[tid] for tid in sorted(ids.values(), reverse=True)]
    assert NAME.encode() in listed.stdout_bytes  # UTF-8 as is, not escaped
    for tid in ids.values():
        shown = cli(database_url, tmp_path, "tasks", "show", str(tid), "--json")
        assert shown.exit_code == 0, shown.output
        assert document(shown) == api[tid]
        inspected = cli(database_url, tmp_path, "inspect", str(tid), "--json")
        assert inspected.exit_code == 0, inspected.output
        assert document(inspected)["task"] == api[tid]


def test_list_json_filters_and_an_empty_list(database_url: str, tmp_path: Path) -> None:
    ids = run_store(database_url, tmp_path, seed)
    pending = cli(database_url, tmp_path, "tasks", "list", "--status", "PENDING", "--json")
    assert [t["id"] for t in document(pending)] == [str(ids["waiting"])]
    none = cli(database_url, tmp_path, "tasks", "list", "--type", "ORDER_LIST", "--json")
    assert none.exit_code == 0 and none.stdout == "[]\n" and none.stderr == ""


def test_inspect_json_tells_lease_deadline_outbox_events_and_rows(
    database_url: str, tmp_path: Path
) -> None:
    """What ``inspect`` shows beyond the task, as data: the lease and the deadline in
    seconds from DB time (negative: passed), the outbox rows with their trace, the events
    as the API's history shows them, and the troubleshooting rows by id and text."""

    task = run_store(database_url, tmp_path, seed_dead_run)
    seen = cli(database_url, tmp_path, "inspect", str(task.id), "--json")
    assert seen.exit_code == 0, seen.output
    doc = document(seen)
    assert doc["task"]["status"] == "RUNNING" and doc["nextRetryInSeconds"] is None
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", doc["dbTime"])
    lease = doc["lease"]
    assert lease["owner"] == "host-a:1" and -45 < lease["endsInSeconds"] <= -40
    assert lease["until"] < doc["dbTime"]
    assert -9 < doc["deadline"]["inSeconds"] <= -4
    [row] = doc["outbox"]
    # claimed before its command was sent: the claim closed it (never sent)
    assert row["dispatchVersion"] == 1 and row["status"] == "SENT"
    assert row["attemptCount"] == 0 and "claimed from the database" in row["lastError"]
    assert re.fullmatch(r"[0-9a-f]{32}", row["traceId"])
    assert [e["kind"] for e in doc["events"]] == ["created", "claimed"]
    assert all(e["taskId"] == str(task.id) for e in doc["events"])
    rows = doc["troubleshooting"]
    assert [r["id"] for r in rows] == ["lease-recovery", "past-deadline"]
    assert rows[0]["text"].startswith("RUNNING on host-a:1 whose lease ended 40.")
    assert rows[1]["doc"] == "docs/operations.md#past-deadline"

    healthy = run_store(database_url, tmp_path, lambda store: create(store, user_id=3))
    fine = document(cli(database_url, tmp_path, "inspect", str(healthy.id), "--json"))
    assert fine["troubleshooting"] == [] and fine["lease"] is None and fine["deadline"] is None
    assert fine["nextRetryInSeconds"] is not None and fine["nextRetryInSeconds"] <= 0


@pytest.mark.parametrize(
    ("command", "answer"),
    [
        (("tasks", "show"), {"error": "export task 123 not found"}),
        (("inspect",), {"error": "export task 123 not found"}),
        (
            ("tasks", "cancel"),
            {
                "id": "123",
                "outcome": "not-found",
                "task": None,
                "error": "export task 123 not found",
            },
        ),
        (
            ("tasks", "retry"),
            {
                "id": "123",
                "outcome": "not-found",
                "task": None,
                "error": "export task 123 not found",
            },
        ),
    ],
)
def test_a_missing_task_is_a_json_error_and_exit_1(
    database_url: str, tmp_path: Path, command: tuple[str, ...], answer: dict[str, Any]
) -> None:
    missing = cli(database_url, tmp_path, *command, "123", "--json")
    assert missing.exit_code == 1
    assert document(missing) == answer
    assert missing.stderr == ""  # the answer is the JSON; nothing else is printed


@pytest.mark.parametrize(
    "command", [("tasks", "show"), ("tasks", "cancel"), ("tasks", "retry"), ("inspect",)]
)
def test_a_bad_id_or_database_is_a_json_error_with_the_text_modes_exit(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    url = f"sqlite:///{tmp_path}/typo.db"
    bad = cli(url, tmp_path, *command, "12a", "--json")
    assert bad.exit_code == 2  # a usage error, as without --json
    assert document(bad) == {
        "error": "Invalid value: '12a' is not a task: give its id (digits) or its number (EXP…)"
    }
    nowhere = cli(url, tmp_path, *command, "5", "--json")
    assert nowhere.exit_code == 1
    assert document(nowhere)["error"].startswith("no SQLite database at")
    assert not (tmp_path / "typo.db").exists()


def test_cancel_and_retry_json_say_what_happened(database_url: str, tmp_path: Path) -> None:
    task = run_store(database_url, tmp_path, create)

    def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, Any]:
        result = cli(database_url, tmp_path, "tasks", *args, str(task.id), "--json", env=env)
        return result.exit_code, document(result)

    code, cancelled = run("cancel")
    assert code == 0 and cancelled["id"] == str(task.id)
    assert cancelled["outcome"] == "cancelled" and "error" not in cancelled
    assert cancelled["task"]["status"] == "CANCELLED"
    assert cancelled["task"]["failureMessage"] == "cancelled by an operator"
    code, again = run("cancel")
    assert code == 0 and again["outcome"] == "already-cancelled"

    default = (REPO / "actors" / "defaults" / "registry.yaml").read_text()
    disabled = tmp_path / "disabled.yaml"
    disabled.write_text(default.replace("    enabled: true\n", "    enabled: false\n", 1))
    code, refused = run("retry", env={"FILE_EXPORT_REGISTRY": str(disabled)})
    assert code == 1 and refused["outcome"] == "type-disabled"
    assert refused["error"].startswith(f"task {task.id} not retried: export type CUSTOMER_LIST")
    assert refused["task"]["status"] == "CANCELLED"
    gone = tmp_path / "gone.yaml"
    gone.write_text("definitions: {}\n")
    code, unknown = run("retry", env={"FILE_EXPORT_REGISTRY": str(gone)})
    assert code == 1 and unknown["outcome"] == "type-unknown"

    async def fill(store: ExportStore) -> None:  # the requester's one active place taken
        await create(store, user_id=7, params={"other": True})

    run_store(database_url, tmp_path, fill)
    code, limited = run("retry", env={"FILE_EXPORT_MAX_ACTIVE_TASKS_PER_USER": "1"})
    assert code == 1 and limited["outcome"] == "user-limit"
    assert limited["error"].endswith(
        "not retried: the requester already has 1 active export tasks; retry when one finishes"
    )

    code, retried = run("retry")
    assert code == 0 and retried["outcome"] == "retried"
    assert retried["task"]["status"] == "PENDING" and retried["task"]["dispatchVersion"] == 2
    code, twice = run("retry")
    assert code == 1 and twice["outcome"] == "not-retryable"
    assert twice["task"]["status"] == "PENDING"

    async def finish(store: ExportStore) -> None:
        current = await store.get_task(task.id)
        assert current is not None
        assert await complete(store, await claim(store, current))

    run_store(database_url, tmp_path, finish)
    code, late = run("cancel")
    assert code == 1 and late["outcome"] == "not-cancellable"
    assert late["task"]["status"] == "SUCCEEDED"
    assert (
        late["error"]
        == f"task {task.id}: only PENDING or RUNNING tasks can be cancelled; the task is SUCCEEDED"
    )


def test_a_warning_goes_to_stderr_and_stdout_stays_one_document(
    database_url: str, tmp_path: Path
) -> None:
    """A retry whose leftover file the command cannot reach says so on stderr; stdout
    still holds the JSON answer alone."""

    async def seed_leftover(store: ExportStore) -> Task:
        running = await claim(store, await create(store))
        assert await store.record_object_key(running, "owner-a", f"exports/{running.id}/x.xlsx")
        await store.cancel_task(running.id, "by a test")
        return running

    task = run_store(database_url, tmp_path, seed_leftover)
    elsewhere = {"FILE_EXPORT_STORAGE_DIR": str(tmp_path / "not-here")}
    retried = cli(database_url, tmp_path, "tasks", "retry", str(task.id), "--json", env=elsewhere)
    assert retried.exit_code == 0, retried.output
    assert document(retried)["outcome"] == "retried"
    assert "not deleted: no " in retried.stderr


def test_stdout_is_utf8_whatever_the_locale(tmp_path: Path) -> None:
    """In a process of its own with an ASCII-only stdout encoding (``LANG=C``,
    ``PYTHONIOENCODING=ascii``), the document is still UTF-8 and alone on stdout."""
    url = f"sqlite:///{tmp_path}/ops.db"

    async def named(store: ExportStore) -> Task:
        task = await create(store)
        await exec_sql(
            store,
            "UPDATE file_export_task SET task_name = :name WHERE id = :id",
            {"name": NAME, "id": task.id},
        )
        return task

    task = run_store(url, tmp_path, named, migrate=True)
    env = {
        **os.environ,
        "FILE_EXPORT_DATABASE_URL": url,
        "FILE_EXPORT_DATA_DIR": str(tmp_path),
        "LANG": "C",
        "LC_ALL": "C",
        "PYTHONIOENCODING": "ascii",
    }
    done = subprocess.run(
        [sys.executable, "-c", "from actors.cli.main import main; main()"]
        + ["tasks", "show", str(task.id), "--json"],
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.decode("utf-8"))["taskName"] == NAME


def test_the_operators_guide_names_every_outcome() -> None:
    """docs/operations.md ("Operator's commands") lists what ``outcome`` can say."""
    guide = (REPO / "docs" / "operations.md").read_text()
    row = next(line for line in guide.splitlines() if line.startswith("| any of them with"))
    assert {o.value for o in OperatorOutcome} <= set(re.findall(r"`([a-z-]+)`", row))
