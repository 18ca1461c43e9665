"""Executing a claimed task: lease watchdog, deadline guard and settling (§8.3, §8.4).

All timing runs on pytest-trio's autojump mock clock with the DB clock following it; the
"slow" parts of a run are trio sleeps inside an injected pipeline.
"""

from __future__ import annotations

import pytest
import trio

from actors.core.errors import LimitExceededError, ProviderUnavailableError
from actors.core.models import TaskStatus
from actors.core.outcomes import ExportResult
from actors.pipeline.attempt import RunContext
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.storage.local import LocalDirectoryStorage
from actors.supervised.reconciler import Reconciler
from db.store import ExportStore
from tests.helpers import claimed, exec_sql, make_executor, start_file


async def test_watchdog_keeps_a_slow_final_write_alive(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """§19.1 watchdog 续租覆盖写盘阶段: the last batch is in and the final write takes 3.5×
    the lease with no batch progress; the lease is renewed throughout, the reconciler
    never takes the task, and it ends SUCCEEDED."""
    task = await claimed(store, settings)
    reconciler = Reconciler(store, storage, settings, metrics)
    renewals_seen: list[object] = []

    async def pipeline(ctx: RunContext) -> ExportResult:
        key = await start_file(ctx)
        for _ in range(7):  # 35 s "final write" against a 10 s lease
            await trio.sleep(5)
            assert (await reconciler.reconcile_once())["lease_recover"] == 0
            renewals_seen.append((await store.get_task(task.id)).last_heartbeat_at)
        return ExportResult(key, "customers.xlsx", "application/x", 18, 1)

    await make_executor(store, storage, settings, metrics, pipeline).execute(task)
    done = await store.get_task(task.id)
    assert done.status == TaskStatus.SUCCEEDED and done.dispatch_version == 1
    assert len(set(renewals_seen)) == len(renewals_seen)  # the heartbeat kept moving
    assert await storage.size(done.object_key) == 18


async def test_lost_lease_aborts_the_run_and_leaves_no_file(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """§19.1 watchdog：租约被剥夺时置中止标志，执行中止、删除半成品文件、不写任务表。"""
    task = await claimed(store, settings)
    keys: list[str] = []

    async def pipeline(ctx: RunContext) -> ExportResult:
        keys.append(await start_file(ctx))
        # Someone else takes the task over (as lease recovery would): version + owner change.
        await exec_sql(
            store,
            "UPDATE file_export_task SET dispatch_version = 2, "
            "lease_owner = 'other' WHERE id = :id",
            {"id": task.id},
        )
        await trio.sleep(10_000)  # only the abort can end this
        raise AssertionError("not reached")

    started = trio.current_time()
    await make_executor(store, storage, settings, metrics, pipeline).execute(task)
    assert trio.current_time() - started <= settings.task_heartbeat_seconds + 0.1
    assert await storage.size(keys[0]) is None
    after = await store.get_task(task.id)
    assert (after.status, after.dispatch_version, after.lease_owner) == (
        TaskStatus.RUNNING,
        2,
        "other",
    )  # untouched by the aborted executor
    assert after.failure_message is None and len(await store.list_outbox(task.id)) == 1


async def test_a_failing_watchdog_aborts_the_run(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """§19.1 watchdog 自身异常也置中止标志: renewals that keep raising abort the run before
    the lease could run out, and the file is deleted."""
    task = await claimed(store, settings)
    keys: list[str] = []

    async def broken_renew(*args: object, **kwargs: object) -> bool:
        raise OSError("database unreachable")

    async def pipeline(ctx: RunContext) -> ExportResult:
        keys.append(await start_file(ctx))
        monkeypatch.setattr(store, "renew_lease", broken_renew)
        await trio.sleep(10_000)
        raise AssertionError("not reached")

    started = trio.current_time()
    await make_executor(store, storage, settings, metrics, pipeline).execute(task)
    assert trio.current_time() - started < settings.task_lease_seconds
    assert await storage.size(keys[0]) is None


async def test_deadline_aborts_the_run_and_schedules_a_retry_naming_the_limit(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """§19.1 deadline：超过 deadline 后触发中止 (transient: retried, message names the limit)."""
    task = await claimed(store, settings)

    async def pipeline(ctx: RunContext) -> ExportResult:
        await start_file(ctx)
        await trio.sleep(10_000)
        raise AssertionError("not reached")

    started = trio.current_time()
    await make_executor(store, storage, settings, metrics, pipeline).execute(task)
    assert trio.current_time() - started == pytest.approx(60, abs=0.1)
    after = await store.get_task(task.id)
    assert after.status == TaskStatus.PENDING and after.dispatch_version == 2
    assert after.failure_message == "execution exceeded the maximum duration of 1 minute"
    assert await storage.list_objects() == []


async def test_commit_racing_past_the_deadline_deletes_the_file_and_retries(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """§19.1 deadline：预检查通过但最终提交 SQL 执行时已超时的竞态必须提交失败、
    删除文件并进入超时重试。"""
    task = await claimed(store, settings)
    real_complete = store.complete_task

    async def late_complete(*args: object, **kwargs: object) -> bool:
        await trio.sleep(61)  # the commit reaches the DB after the deadline
        return await real_complete(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "complete_task", late_complete)
    keys: list[str] = []

    async def pipeline(ctx: RunContext) -> ExportResult:
        keys.append(await start_file(ctx))
        return ExportResult(keys[0], "f.xlsx", "x", 18, 1)

    executor = make_executor(store, storage, settings, metrics, pipeline)
    executor.lease.deadline_guard = _never  # type: ignore[method-assign]  # isolate the SQL check
    await executor.execute(task)
    assert await storage.size(keys[0]) is None
    after = await store.get_task(task.id)
    assert after.status == TaskStatus.PENDING and after.dispatch_version == 2
    assert "maximum duration" in (after.failure_message or "")


async def _never(ctx: RunContext) -> None:
    await trio.sleep_forever()


async def test_permanent_error_fails_the_task_and_deletes_the_file(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    task = await claimed(store, settings)

    async def pipeline(ctx: RunContext) -> ExportResult:
        await start_file(ctx)
        raise LimitExceededError("export exceeds max-rows 10")

    await make_executor(store, storage, settings, metrics, pipeline).execute(task)
    after = await store.get_task(task.id)
    assert after.status == TaskStatus.FAILED and after.failure_message == (
        "export exceeds max-rows 10"
    )
    assert after.object_key is None and await storage.list_objects() == []


async def test_transient_error_schedules_a_retry_with_backoff(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    task = await claimed(store, settings)

    async def pipeline(ctx: RunContext) -> ExportResult:
        await start_file(ctx)
        raise ProviderUnavailableError("provider answered HTTP 503")

    await make_executor(store, storage, settings, metrics, pipeline).execute(task)
    after = await store.get_task(task.id)
    assert after.status == TaskStatus.PENDING and after.dispatch_version == 2
    # rand 0.5 -> no jitter: exactly the first backoff step (60 s) by DB time
    assert (after.next_retry_at - after.updated_at).total_seconds() == 60
    assert after.failure_message == "provider answered HTTP 503"
    assert await storage.list_objects() == []


async def test_commit_lost_to_a_new_version_deletes_the_file_and_writes_nothing(
    autojump_clock: trio.testing.MockClock,
    store: ExportStore,
    storage: LocalDirectoryStorage,
    settings: Settings,
    metrics: Metrics,
) -> None:
    """§19.1 结果提交：版本已变时提交失败并删除孤立文件."""
    task = await claimed(store, settings)
    keys: list[str] = []

    async def pipeline(ctx: RunContext) -> ExportResult:
        keys.append(await start_file(ctx))
        # Between the last write and the commit the task moves on to version 2.
        await exec_sql(
            store,
            "UPDATE file_export_task SET dispatch_version = 2, "
            "status = 'PENDING', lease_owner = NULL WHERE id = :id",
            {"id": task.id},
        )
        return ExportResult(keys[0], "f.xlsx", "x", 18, 1)

    await make_executor(store, storage, settings, metrics, pipeline).execute(task)
    assert await storage.size(keys[0]) is None
    after = await store.get_task(task.id)
    assert (after.status, after.dispatch_version, after.failure_message) == (
        TaskStatus.PENDING,
        2,
        None,
    )
    assert after.file_name is None and len(await store.list_outbox(task.id)) == 1
