"""Reconciler (§8.5, §15) on the mock clock, with the DB clock following it.

Docstrings name the §19.1 bullet each test covers.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import trio
import trio.testing

from actors.core.models import OutboxStatus, TaskStatus
from actors.core.outcomes import ExportResult, QuarantineOutcome, RetryOutcome
from actors.pipeline.attempt import RunContext
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.plumbing.wakeup import Wakeup
from actors.storage.keys import new_object_key
from actors.storage.local import LocalDirectoryStorage
from actors.supervised.consumer import ConsumerSlot
from actors.supervised.publisher import Publisher
from actors.supervised.reconciler import LEASE_EXHAUSTED_MESSAGE
from actors.transport.embedded import EmbeddedBus
from db.store import ExportStore
from tests.actors.supervised.reconciler_helpers import (
    Clock,
    force_outbox_sent,
    mark_all_sent,
    queue_settings,
    reconciler_for,
)
from tests.helpers import claim, create, exec_sql, new_task
from tests.servers import json_log


async def test_reconciler_does_not_skip_a_backoff_window(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """§19.1 Reconciler 不得跳过退避窗口: a task retried with next_retry_at 15 min out whose
    outbox row is already SENT is left alone every pass until 60 s after next_retry_at."""
    rec = reconciler_for(store, storage, settings, metrics)
    task = await create(store)
    running = await claim(store, task)
    assert await store.schedule_retry(running, "owner-a", "503", 900) == RetryOutcome.SCHEDULED
    await force_outbox_sent(store, task.id, 2)
    start = trio.current_time()
    while trio.current_time() - start < 959:
        actions = await rec.reconcile_once()
        assert actions["redispatch"] == 0, trio.current_time() - start
        [row] = [r for r in await store.list_outbox(task.id) if r.dispatch_version == 2]
        assert row.status == OutboxStatus.SENT
        await trio.sleep(30)
    await trio.sleep(960 - (trio.current_time() - start))
    assert (await rec.reconcile_once())["redispatch"] == 1
    after = await store.get_task(task.id)
    assert after.dispatch_version == 2 and after.status == TaskStatus.PENDING


async def test_redispatch_keeps_the_dispatch_version(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """§19.1 Reconciler 补投不递增任务版本: a SENT row past the window goes back to PENDING,
    same row, same version."""
    task = await create(store)
    await mark_all_sent(store)
    [sent] = await store.list_outbox(task.id)
    await trio.sleep(settings.sent_stale_seconds + 1)
    assert (await reconciler_for(store, storage, settings, metrics).reconcile_once())[
        "redispatch"
    ] == 1
    [row] = await store.list_outbox(task.id)
    assert row.id == sent.id and row.event_id == sent.event_id
    assert row.status == OutboxStatus.PENDING and row.dispatch_version == 1
    assert (await store.get_task(task.id)).dispatch_version == 1


async def test_redispatch_case_a_inserts_a_same_version_row(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """§19.1 补投两种情形 (A): no outbox row for the current version → a new row, same
    version, new event id; idempotent on the next pass."""
    task = await create(store)
    await exec_sql(store, "DELETE FROM file_export_outbox WHERE task_id = :t", {"t": task.id})
    rec = reconciler_for(store, storage, settings, metrics)
    assert (await rec.reconcile_once())["redispatch"] == 0  # inside the 60 s grace
    await trio.sleep(settings.redispatch_grace_seconds)
    assert (await rec.reconcile_once())["redispatch"] == 1
    [row] = await store.list_outbox(task.id)
    assert row.dispatch_version == 1 and row.status == OutboxStatus.PENDING
    assert (await rec.reconcile_once())["redispatch"] == 0
    assert (await store.get_task(task.id)).dispatch_version == 1


async def test_redispatch_ignores_max_attempts(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """§19.1 补投不受 max_attempts 约束: a PENDING task whose attempts are spent still gets
    its lost command re-sent."""
    task = await create(store, max_attempts=2)
    running = await claim(store, task)
    await store.schedule_retry(running, "owner-a", "503", 0)
    await mark_all_sent(store)
    # the attempt ceiling is reached
    await exec_sql(
        store, "UPDATE file_export_task SET attempt_count = 2 WHERE id = :i", {"i": task.id}
    )
    await trio.sleep(settings.sent_stale_seconds + 1)
    assert (await reconciler_for(store, storage, settings, metrics).reconcile_once())[
        "redispatch"
    ] == 1
    row = [r for r in await store.list_outbox(task.id) if r.dispatch_version == 2][0]
    assert row.status == OutboxStatus.PENDING


async def test_reconciler_never_resends_a_quarantined_row(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """§19.1 Reconciler 永不补投 QUARANTINED; manual retry then makes a new version."""
    task = await create(store)
    await mark_all_sent(store)
    [row] = await store.list_outbox(task.id)
    assert await store.quarantine(row.event_id, task.id, 1, "poison") == (
        QuarantineOutcome.QUARANTINED
    )
    # Even if the task were PENDING again at that version, neither case may touch the row.
    await exec_sql(
        store, "UPDATE file_export_task SET status = 'PENDING' WHERE id = :i", {"i": task.id}
    )
    rec = reconciler_for(store, storage, settings, metrics)
    for _ in range(5):
        await trio.sleep(settings.sent_stale_seconds)
        assert (await rec.reconcile_once())["redispatch"] == 0
    [still] = await store.list_outbox(task.id)
    assert still.status == OutboxStatus.QUARANTINED
    await exec_sql(
        store, "UPDATE file_export_task SET status = 'FAILED' WHERE id = :i", {"i": task.id}
    )
    _, retried = await store.manual_retry(await store.get_task(task.id))
    assert retried is not None and retried.dispatch_version == 2
    rows = {r.dispatch_version: r.status for r in await store.list_outbox(task.id)}
    assert rows == {1: OutboxStatus.QUARANTINED, 2: OutboxStatus.PENDING}


async def test_lease_recovery_makes_a_new_version_or_fails_at_max_attempts(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """§19.1 执行恢复受重试上限约束: an expired RUNNING lease with attempts left becomes
    PENDING v+1 with a new outbox row; with attempt_count >= max_attempts it FAILS."""
    retry_me = await claim(store, await create(store, user_id=1, max_attempts=3), lease=10)
    give_up = await claim(store, await create(store, user_id=2, max_attempts=1), lease=10)
    rec = reconciler_for(store, storage, settings, metrics)
    assert (await rec.reconcile_once())["lease_recover"] == 0  # leases still valid
    await trio.sleep(10)
    assert (await rec.reconcile_once())["lease_recover"] == 2
    a = await store.get_task(retry_me.id)
    assert (a.status, a.dispatch_version, a.lease_owner) == (TaskStatus.PENDING, 2, None)
    assert {r.dispatch_version for r in await store.list_outbox(a.id)} == {1, 2}
    b = await store.get_task(give_up.id)
    assert b.status == TaskStatus.FAILED and b.failure_message == LEASE_EXHAUSTED_MESSAGE
    assert b.dispatch_version == 1 and len(await store.list_outbox(b.id)) == 1


async def test_lease_recovery_deletes_the_dead_runs_partial_file(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    running = await claim(store, await create(store), lease=10)
    key = new_object_key(running.id)
    assert await store.record_object_key(running, "owner-a", key)
    (await storage.create(key)).close()
    await trio.sleep(11)
    await reconciler_for(store, storage, settings, metrics).reconcile_once()
    assert await storage.size(key) is None


async def test_independent_attempt_counters(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """§19.1 Outbox 与任务 attempt_count 相互独立."""
    task = await create(store)
    for _ in range(4):  # four failed sends
        [row] = await store.claim_due_outbox("pub", 60, 10)
        await store.mark_outbox_send_failed(row.id, "pub", 0, "broker down")
    assert (await store.get_task(task.id)).attempt_count == 0
    [row] = await store.claim_due_outbox("pub", 60, 10)
    assert row.attempt_count == 5
    await store.mark_outbox_sent(row.id, "pub")
    running = await claim(store, task)
    assert running.attempt_count == 1
    await store.schedule_retry(running, "owner-a", "503", 0)
    fresh = [r for r in await store.list_outbox(task.id) if r.dispatch_version == 2][0]
    assert fresh.attempt_count == 0


async def test_stuck_claimed_outbox_rows_are_released(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    task = await create(store)
    await store.claim_due_outbox("dead-publisher", 60, 10)
    rec = reconciler_for(store, storage, settings, metrics)
    assert (await rec.reconcile_once())["outbox_release"] == 0
    await trio.sleep(60)
    assert (await rec.reconcile_once())["outbox_release"] == 1
    [row] = await store.list_outbox(task.id)
    assert row.status == OutboxStatus.PENDING and row.dispatch_version == 1


async def test_old_sent_outbox_rows_are_pruned_in_chunks(
    autojump_clock: Clock,
    store: ExportStore,
) -> None:
    for user in range(3):
        await create(store, user_id=user)
    await mark_all_sent(store)
    pending = await create(store, user_id=99)
    await trio.sleep(7 * 86400 + 1)
    assert await store.prune_sent_outbox(7 * 86400, chunk=2) == 2
    assert await store.prune_sent_outbox(7 * 86400, chunk=2) == 1
    assert await store.prune_sent_outbox(7 * 86400, chunk=2) == 0
    [left] = await store.list_outbox(pending.id)  # PENDING rows are never pruned
    assert left.status == OutboxStatus.PENDING


async def test_a_queued_task_is_not_starved_by_redispatch(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    metrics: Metrics,
    tmp_path: Path,
) -> None:
    """§19.1 排队任务不被饿死: with the only slot busy, a second task waits in the queue longer
    than sentStaleSeconds; the reconciler re-sends the same version; when the slot frees,
    a command for the original version still claims it and the task SUCCEEDS once."""
    settings = queue_settings(tmp_path)
    bus = EmbeddedBus()
    publisher = Publisher(store, bus, settings, metrics, Wakeup())
    rec = reconciler_for(store, storage, settings, metrics)
    release_first = trio.Event()
    files: list[str] = []

    async def pipeline(ctx: RunContext) -> ExportResult:
        (await ctx.file.create()).close()
        assert ctx.file.key is not None
        files.append(ctx.file.key)
        if len(files) == 1:
            await release_first.wait()  # the first export occupies the only slot
        return ExportResult(ctx.file.key, "f.xlsx", "x", 0, 0)

    slot = ConsumerSlot("slot-0", store, bus, storage, settings, metrics, pipeline, trio.Event())
    first = await create(store, user_id=1)
    second = await create(store, user_id=2)
    async with trio.open_nursery() as n:
        n.start_soon(slot.run)
        await publisher.publish_due()
        await trio.sleep(120)  # queued 4× longer than sentStaleSeconds
        assert (await store.get_task(second.id)).status == TaskStatus.PENDING
        assert (await rec.reconcile_once())["redispatch"] == 1
        await publisher.publish_due()  # the same version sent again: two commands queued
        assert bus.pending() == 2
        release_first.set()
        with trio.fail_after(60):
            while (await store.get_task(second.id)).status != TaskStatus.SUCCEEDED:
                await trio.sleep(1)
        while bus.pending():
            await trio.sleep(1)
        n.cancel_scope.cancel()
    done = await store.get_task(second.id)
    assert done.dispatch_version == 1 and done.attempt_count == 1
    assert (await store.get_task(first.id)).status == TaskStatus.SUCCEEDED
    assert len(files) == 2  # the duplicate command ran nothing


async def test_duplicate_commands_run_once(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """§19.1 重复命令幂等: two same-version commands consumed at once by two slots: one
    claims and runs, the other sees RUNNING and acks; one file."""
    bus = EmbeddedBus()
    runs: list[int] = []

    async def pipeline(ctx: RunContext) -> ExportResult:
        runs.append(ctx.task.id)
        (await ctx.file.create()).close()
        assert ctx.file.key is not None
        await trio.sleep(5)
        return ExportResult(ctx.file.key, "f.xlsx", "x", 0, 0)

    task = await create(store)
    [row] = await store.claim_due_outbox("pub", 60, 10)
    publisher = Publisher(store, bus, settings, metrics, Wakeup())
    await publisher._send_one(row)
    await publisher._send_one(row)  # a duplicate delivery of the same command
    stopping = trio.Event()
    slots = [
        ConsumerSlot(f"s{i}", store, bus, storage, settings, metrics, pipeline, stopping)
        for i in range(2)
    ]
    async with trio.open_nursery() as n:
        for s in slots:
            n.start_soon(s.run)
        with trio.fail_after(60):
            while (await store.get_task(task.id)).status != TaskStatus.SUCCEEDED:
                await trio.sleep(1)
        n.cancel_scope.cancel()
    assert runs == [task.id]
    assert len(await storage.list_objects()) == 1
    assert metrics.consumer_no_claim.labels("running_elsewhere")._value.get() == 1


async def test_a_lease_recovery_line_carries_the_tasks_trace_id(
    autojump_clock: Clock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """Issue 12: the task's identifiers and trace id are bound to the reconciler's lines
    about it; its new command carries the same trace id."""
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    created = await store.create_task(dataclasses.replace(new_task(), trace_id=trace))
    assert created.task is not None
    await claim(store, created.task, lease=10)
    await trio.sleep(10)
    with json_log("INFO") as lines:
        assert (await reconciler_for(store, storage, settings, metrics).reconcile_once())[
            "lease_recover"
        ] == 1
    [line] = [r for r in lines() if "lease expired" in r["message"]]
    assert line["traceId"] == trace and line["taskId"] == str(created.task.id)
    assert line["dispatchVersion"] == 1 and line["tenantId"] == "0"
    payloads = [r.payload_json for r in await store.list_outbox(created.task.id)]
    assert all(json.loads(p)["traceId"] == trace for p in payloads) and len(payloads) == 2
