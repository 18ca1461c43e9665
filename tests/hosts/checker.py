"""The invariants after a partition, read from the database and the bucket (Jepsen-style:
the history decides, not what the test hoped).

:func:`check` reads every task, its history and its outbox rows from MariaDB, and every
object and incomplete upload from the bucket, and returns what breaks:

1. every task is terminal (SUCCEEDED, FAILED, CANCELLED) once the cluster had time to
   settle — none stuck PENDING or RUNNING;
2. no task has more than one SUCCEEDED run (history: ``succeeded`` at most once);
3. exactly one object per SUCCEEDED task, its recorded key, and no object for any other
   task;
4. no incomplete upload is left;
5. no command was queued for a task that had finished: a ``dispatched`` after the task's
   final event must be of an outbox row due before it (``due_at``). A send already on
   its way when its publisher was cut off may land after the heal — at-least-once
   delivery cannot take it back, and the consumer acks it as a no-claim — but nothing
   may *decide* to send for a finished task (a re-send, a new command).

It also counts what the figures need: tasks by status, attempts, runs that did not end in
SUCCEEDED (``attempt_failed``, ``handed_back``, ``lease_recovered``).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import trio

from db.store import ExportStore
from tests.s3_helpers import admin_client

FINAL = ("succeeded", "cancelled", "quarantined")
TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED", "EXPIRED")


@dataclass
class Report:
    """What :func:`check` found.

    Attributes:
        violations: one line per broken invariant (empty: all hold).
        statuses: tasks by status.
        attempts: the attempt count of every task (``attempt_count``), summed.
        max_attempts: the largest attempt count of one task.
        interrupted: runs that ended otherwise than in success, by history kind.
        late_sends: commands queued before their task finished that reached the broker
            after it (a publisher cut off mid-send), each acked as a no-claim.
    """

    violations: list[str] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    attempts: int = 0
    max_attempts: int = 0
    interrupted: Counter[str] = field(default_factory=Counter)
    late_sends: int = 0

    def line(self) -> str:
        """The figures in one line."""
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(self.statuses.items()))
        broken = ", ".join(f"{k} {v}" for k, v in sorted(self.interrupted.items())) or "none"
        return (
            f"tasks {sum(self.statuses.values())} ({statuses}); attempts {self.attempts}"
            f" (max {self.max_attempts} for one task); runs interrupted: {broken};"
            f" commands landed after their task finished: {self.late_sends}"
        )


async def _rows(store: ExportStore, sql: str) -> list[dict[str, Any]]:
    async with store.db.transaction() as tx:
        return [dict(r) for r in await tx.fetchall(store.db.dialect.render(sql), {})]


def _bucket(bucket: str) -> tuple[dict[str, list[str]], list[str]]:
    client = admin_client()
    objects: dict[str, list[str]] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="exports/"):
        for item in page.get("Contents", []):
            objects.setdefault(item["Key"].split("/")[1], []).append(item["Key"])
    uploads = client.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    return objects, [u["Key"] for u in uploads]


async def check(store: ExportStore, bucket: str) -> Report:
    """Read the database and the bucket; return the broken invariants and the figures."""
    report = Report()
    tasks = await _rows(store, "SELECT id, status, object_key, attempt_count FROM file_export_task")
    events = await _rows(
        store,
        "SELECT task_id, id, kind, detail_json, created_at FROM file_export_task_event"
        " ORDER BY task_id, id",
    )
    outbox = await _rows(
        store, "SELECT task_id, dispatch_version, due_at, created_at FROM file_export_outbox"
    )
    queued = {
        (int(r["task_id"]), int(r["dispatch_version"])): r["due_at"] or r["created_at"]
        for r in outbox
    }
    objects, uploads = await trio.to_thread.run_sync(_bucket, bucket)

    history: dict[int, list[str]] = {}
    details: dict[int, list[tuple[Any, dict[str, Any]]]] = {}
    for event in events:
        history.setdefault(int(event["task_id"]), []).append(str(event["kind"]))
        details.setdefault(int(event["task_id"]), []).append(
            (event["created_at"], json.loads(event["detail_json"]))
        )
    for task in tasks:
        task_id, status = int(task["id"]), str(task["status"])
        report.statuses[status] += 1
        report.attempts += int(task["attempt_count"])
        report.max_attempts = max(report.max_attempts, int(task["attempt_count"]))
        kinds = history.get(task_id, [])
        for kind in ("attempt_failed", "handed_back", "lease_recovered"):
            report.interrupted[kind] += kinds.count(kind)
        if status not in TERMINAL:
            report.violations.append(f"task {task_id} is {status}, not terminal")
        if kinds.count("succeeded") > 1:
            report.violations.append(f"task {task_id} succeeded {kinds.count('succeeded')} times")
        stored = objects.pop(str(task_id), [])
        if status == "SUCCEEDED":
            if stored != [task["object_key"]]:
                report.violations.append(
                    f"task {task_id} SUCCEEDED with {task['object_key']} but the bucket holds"
                    f" {stored}"
                )
        elif stored:
            report.violations.append(f"task {task_id} is {status} but the bucket holds {stored}")
        finals = ("attempt_failed",) if status == "FAILED" else FINAL
        last_final = max((i for i, k in enumerate(kinds) if k in finals), default=None)
        if last_final is not None:
            finished_at = details[task_id][last_final][0]
            for i in range(last_final + 1, len(kinds)):
                if kinds[i] != "dispatched":
                    continue
                version = int(details[task_id][i][1].get("version", 0))
                due = queued.get((task_id, version))
                if due is None or due >= finished_at:
                    report.violations.append(
                        f"task {task_id}: a command (version {version}) was queued after it"
                        f" finished ({due} >= {finished_at})"
                    )
                else:
                    report.late_sends += 1
    for task_id, keys in objects.items():
        report.violations.append(f"objects of no task {task_id}: {keys}")
    for key in uploads:
        report.violations.append(f"incomplete upload left: {key}")
    return report
