"""Export worker processes in the real service (issue 9 items 2 and 3): real HTTP, the demo
Provider, SQLite, a real child process per run, killed for real."""

from __future__ import annotations

import logging
import os
import re
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from actors.pipeline.attempt import RunContext
from actors.runtime import Runtime
from tests.helpers import API, client_for, exec_sql, make_settings, running_service, wait_for_status


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[Runtime]:
    settings = make_settings(
        tmp_path,
        publisher_poll_ms=100,
        reconciler_poll_ms=300,
        consumer_concurrency=2,
        task_lease_seconds=6,
        task_heartbeat_seconds=0.5,
        retry_backoff_seconds=(0.2,),
        shutdown_grace_seconds=5,
    )
    async with running_service(settings) as rt:
        yield rt


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def running_worker(rt: Runtime, task_id: str) -> RunContext:
    """The slot's context of ``task_id`` once its worker runs and has written rows."""
    async with client_for(rt) as client:
        with trio.fail_after(60):
            while True:
                task = (await client.get(f"{API}/{task_id}")).json()["data"]
                contexts = [s.current for s in rt.slots if s.current is not None]
                ctx = next((c for c in contexts if str(c.task.id) == task_id), None)
                if ctx is not None and ctx.worker_pid and int(task["processedRows"]) > 0:
                    return ctx
                await trio.sleep(0.02)


async def create_export(rt: Runtime, rows: int) -> str:
    async with client_for(rt) as client:
        body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": rows}}
        created = (await client.post(API, json=body)).json()
    assert created["code"] == "200", created
    task_id: str = created["data"]["id"]
    return task_id


async def test_a_worker_killed_mid_run_costs_one_attempt_and_the_retry_succeeds(
    service: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 9 item 3: SIGKILL the worker mid-run (as the OOM killer would): the attempt
    ends as a transient failure naming the signal and the batch, its partial file is
    deleted, the service stays up and the next attempt writes the whole file."""
    task_id = await create_export(service, 30_000)
    with caplog.at_level(logging.WARNING, logger="actors.supervised"):
        ctx = await running_worker(service, task_id)
        first_key, pid = ctx.file.key, ctx.worker_pid
        assert first_key is not None and pid is not None
        os.kill(pid, signal.SIGKILL)
        async with client_for(service) as client:
            task = await wait_for_status(client, task_id, "SUCCEEDED", "FAILED", timeout=120)
            assert (await client.get(API)).json()["code"] == "200"  # the service is up
    assert task["status"] == "SUCCEEDED", task["failureMessage"]
    assert task["attemptCount"] == 2 and task["dispatchVersion"] == 2
    assert task["processedRows"] == "30000"
    failures = [
        r.error  # type: ignore[attr-defined]
        for r in caplog.records
        if r.getMessage() == "transient failure; retry scheduled"
    ]
    assert len(failures) == 1, failures
    # The worker fetches, decodes and writes behind; the kill lands during a Fetch ("while
    # fetching batch n (batch n-1 being written)") or the Finish after the last batch
    # ("while writing batch n"): the two requests a run waits on.
    assert re.search(
        r"export worker process died \(SIGKILL\) while (fetching|writing) batch \d+", failures[0]
    ), failures
    assert not alive(pid)
    keys = [o.key for o in await service.storage.list_objects()]
    assert first_key not in keys  # the killed attempt's partial file is deleted
    assert len(keys) == 1 and keys[0].startswith(f"exports/{task_id}/")


async def test_a_lost_lease_kills_the_worker_within_a_second(service: Runtime) -> None:
    """Issue 9 item 2: another instance took the task over (the lease owner changed), so
    the watchdog's next renewal matches 0 rows and cancels the run's scope: the worker
    process is gone within a second of that cancel, and the partial file with it."""
    task_id = await create_export(service, 200_000)
    ctx = await running_worker(service, task_id)
    pid = ctx.worker_pid
    assert pid is not None and ctx.file.key is not None
    await exec_sql(
        service.store,
        "UPDATE file_export_task SET lease_owner = 'another-instance' WHERE id = :id",
        {"id": int(task_id)},
    )
    with trio.fail_after(10):
        while ctx.abort_reason is None:
            await trio.sleep(0.005)
    with trio.fail_after(1):
        while alive(pid):
            await trio.sleep(0.005)
    with trio.fail_after(10):
        while await service.storage.size(ctx.file.key) is not None:
            await trio.sleep(0.02)
    assert ctx.abort_reason.value == "lease_lost"


def worker_children() -> list[int]:
    """Export worker processes that are children of this (test) process."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # gone meanwhile
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and b"actors.pipeline.worker.main" in cmdline:
            found.append(int(entry.name))
    return found


async def test_a_spare_worker_waits_from_the_start_and_is_gone_after_the_stop(
    tmp_path: Path,
) -> None:
    """The service starts one worker ahead of its first export (~0.2 s of Python start and
    imports off the export's time); stopping the service kills and reaps it."""
    async with running_service(make_settings(tmp_path, consumer_concurrency=2)):
        spares = worker_children()
        assert len(spares) == 1
    assert worker_children() == []
    assert not alive(spares[0])
