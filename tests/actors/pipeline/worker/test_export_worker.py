"""The export worker process (issue 9 items 1, 2, 4, 5): one real child per run, real pipes,
real files read back. No mocks: each test starts ``python -m actors.pipeline.worker.main``."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, BinaryIO

import httpx
import openpyxl
import pytest
import trio

from actors.core.data_warning import DataWarning, WarningKind
from actors.core.errors import (
    ExportWorkerDiedError,
    LimitExceededError,
    ProviderContractError,
)
from actors.core.provider.contract import MAX_RESPONSE_BYTES
from actors.pipeline.provider.decode import parse_batch_response
from actors.pipeline.provider.fetch import FetchSpec
from actors.pipeline.worker.handle import ExportWorker
from actors.pipeline.worker.pool import WorkerPool, open_export_worker
from tests.actors.pipeline.worker.helpers import answer, rows
from tests.provider_server import serve_provider

SERVICE = "customer-service"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@asynccontextmanager
async def worker_for(
    tmp_path: Path, *, max_rows: int = 1_000_000, max_bytes: int = 50 * 1024 * 1024
) -> AsyncIterator[tuple[ExportWorker, BinaryIO]]:
    with open(tmp_path / "out.xlsx", "xb") as out:
        async with open_export_worker(out, max_rows=max_rows, max_bytes=max_bytes) as worker:
            yield worker, out


async def decode(worker: ExportWorker, raw: bytes, limit: int = 1000) -> Any:
    """Have the worker fetch ``raw`` from a real HTTP server and decode it; its summary."""
    async with serve_provider(lambda request: httpx.Response(200, content=raw)) as url:
        spec = FetchSpec(SERVICE, url + "/batches", b"{}", (), 3.0, 15.0, 60.0, MAX_RESPONSE_BYTES)
        return (await worker.fetch(spec, limit=limit, max_columns=100)).summary


async def test_a_run_decodes_writes_and_closes_a_file_openpyxl_reads(tmp_path: Path) -> None:
    async with worker_for(tmp_path) as (worker, _):
        pid = worker.pid
        first = await decode(worker, answer(rows(0, 500)))
        assert first.columns is not None and first.row_count == 500
        assert (first.next_cursor, first.has_more, first.total_rows) == ("next", True, 500)
        second = await decode(worker, answer(rows(500, 300), first=False))
        assert second.columns is None
        assert worker.rows_written in (0, 500)  # batch 1, written behind its answer
        assert await worker.finish_writes() == 800
        size = await worker.close(
            DataWarning(WarningKind.FEWER_ROWS, "provider announced 900 rows")
        )
    assert size == (tmp_path / "out.xlsx").stat().st_size > 0
    assert DataWarning(WarningKind.FEWER_ROWS, "provider announced 900 rows") in worker.warnings
    assert not alive(pid)
    book = openpyxl.load_workbook(tmp_path / "out.xlsx", read_only=True)
    values = [tuple(c.value for c in r) for r in book.active.iter_rows()]
    book.close()
    assert values[0] == ("ID", "Name")
    assert values[1] == (0, "row 0 " + "x" * 10) and values[-1][0] == 799
    assert len(values) == 801


async def test_a_cancelled_run_kills_its_busy_worker_within_a_second(tmp_path: Path) -> None:
    """Issue 9 item 2: the run's cancel scope owns the worker: cancelling it while the
    worker is encoding kills the process (SIGKILL) and reaps it before the block exits."""
    with trio.CancelScope() as scope:
        async with worker_for(tmp_path) as (worker, _):
            pid = worker.pid
            # written behind the answer: a few hundred ms of encoding
            await decode(worker, answer(rows(0, 1000, width=3000)))
            scope.cancel()
            cancelled_at = trio.current_time()
            await trio.sleep_forever()  # cancelled at once: the block ends by the cancel
    with trio.fail_after(1):
        while alive(pid):
            await trio.sleep(0.01)
    assert trio.current_time() - cancelled_at < 1


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (answer([["@@"]], literal="[" * 100_000 + "]" * 100_000), "non-JSON"),
        (answer([{"id": 1, "name": "ab"}]).replace(b'"ab"', b'"\xff\xfe"'), "non-JSON"),
        (
            answer(rows(0, 1)).replace(b'"totalRows": 1', b'"totalRows": ' + b"9" * 5000),
            "5000 digits",
        ),
        (answer([{"id": "@@", "name": "big"}], literal="9" * 5000), None),
        (answer(rows(0, 1)).replace(b'"totalRows": 1', b'"totalRows": NaN'), "not a non-negative"),
        (answer(rows(0, 1)).replace(b'"next"', b'"\\ud800"'), "nextCursor is not valid"),
        (b"\xef\xbb\xbf" + answer(rows(0, 1)), None),
        (answer(rows(0, 3)), "batch-size limit is 2 rows"),
    ],
    ids=[
        "nesting-100000-deep",
        "bad-utf8",
        "total-5000-digits",
        "cell-5000-digits",
        "nan-total",
        "cursor-lone-surrogate",
        "utf8-bom",
        "more-rows-than-limit",
    ],
)
async def test_hostile_answers_decode_in_the_worker_exactly_as_in_process(
    tmp_path: Path, raw: bytes, message: str | None
) -> None:
    """Issue 9 item 5: the worker's msgspec decoder gives the same batch, or the same
    ProviderContractError message, as the in-process decoder of today; a hostile answer
    never crashes the worker."""
    try:
        expected: Any = parse_batch_response(raw, service=SERVICE, limit=2, max_columns=100)
    except ProviderContractError as exc:
        expected = exc
    async with worker_for(tmp_path) as (worker, _):
        if isinstance(expected, ProviderContractError):
            assert message is not None and message in str(expected)
            with pytest.raises(ProviderContractError) as info:
                await decode(worker, raw, limit=2)
            assert str(info.value) == str(expected)
        else:
            assert message is None
            assert await decode(worker, raw, limit=2) == expected.summary()
        assert alive(worker.pid)


async def test_a_write_failure_comes_back_as_its_export_error(tmp_path: Path) -> None:
    async with worker_for(tmp_path, max_rows=100) as (worker, _):
        await decode(worker, answer(rows(0, 150)), limit=1000)
        with pytest.raises(LimitExceededError, match="max-rows 100"):
            await worker.finish_writes()
    assert worker.rows_written == 100


@pytest.mark.parametrize(
    "second", [answer(rows(150, 10), first=False), b"not json"], ids=["good", "non-json"]
)
async def test_a_failed_write_is_the_answer_to_the_next_fetch(
    tmp_path: Path, second: bytes
) -> None:
    """Write-behind: batch 1's write fails after its answer went out, during the next
    fetch, which is answered with that failure — also when the next answer is itself bad:
    the earliest failure of the run is the one reported."""
    async with worker_for(tmp_path, max_rows=100) as (worker, _):
        await decode(worker, answer(rows(0, 150)), limit=1000)
        with pytest.raises(LimitExceededError, match="max-rows 100"):
            await decode(worker, second, limit=1000)
        with pytest.raises(LimitExceededError, match="max-rows 100"):  # and every request after
            await worker.finish_writes()


@pytest.mark.parametrize("fault", ["refused", "http-500", "read-timeout", "over-size"])
async def test_a_failed_write_outranks_the_next_requests_own_failure(
    tmp_path: Path, fault: str
) -> None:
    """Batch 1's write (max-rows) fails while batch 2's request fails too — before it is
    sent (refused), on its answer (500, over the body limit) or waiting for it (read
    timeout): the write happens between sending and reading, and its failure is the
    answer, so a permanent max-rows is never hidden by a transient Provider error."""

    async def provider(request: httpx.Request) -> httpx.Response:
        if fault == "read-timeout":
            await trio.sleep(5)
        return httpx.Response(500 if fault == "http-500" else 200, content=b"x" * 100)

    async with worker_for(tmp_path, max_rows=100) as (worker, _):
        await decode(worker, answer(rows(0, 150)), limit=1000)
        async with serve_provider(provider) as url:
            spec = FetchSpec(
                SERVICE,
                ("http://127.0.0.1:1" if fault == "refused" else url) + "/batches",
                b"{}",
                (),
                3.0,
                0.2 if fault == "read-timeout" else 15.0,
                60.0,
                10 if fault == "over-size" else MAX_RESPONSE_BYTES,
            )
            with pytest.raises(LimitExceededError, match="max-rows 100"):
                await worker.fetch(spec, limit=1000, max_columns=100)
        assert worker.last_request_seconds is None  # not the Provider's failure


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV])
async def test_a_worker_that_dies_fails_the_run_naming_the_signal_and_the_step(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """Issue 9 item 3: the OOM killer's SIGKILL, a segfault: a transient error that says
    how the worker died and what it was doing."""
    async with worker_for(tmp_path) as (worker, _):
        await decode(worker, answer(rows(0, 1000, width=3000)))  # written behind the answer
        os.kill(worker.pid, sig)
        with pytest.raises(ExportWorkerDiedError) as info:
            await worker.finish_writes()
    assert str(info.value) == f"export worker process died ({sig.name}) while writing batch 1"


async def test_without_sched_idle_the_worker_keeps_the_normal_policy(tmp_path: Path) -> None:
    """FILE_EXPORT_WORKER_SCHED_IDLE=false (the default, issue 22 item 8): nice only."""
    with open(tmp_path / "out.xlsx", "xb") as out:
        async with open_export_worker(
            out, max_rows=10, max_bytes=1 << 20, pool=WorkerPool(nice=3, sched_idle=False, spares=0)
        ) as worker:
            await decode(worker, answer(rows(0, 1)))  # the worker has applied its Start
            assert os.sched_getscheduler(worker.pid) == os.SCHED_OTHER
            assert os.getpriority(os.PRIO_PROCESS, worker.pid) == min(
                19, os.getpriority(os.PRIO_PROCESS, 0) + 3
            )


async def test_the_worker_runs_niced_and_ignores_the_drain_signals(tmp_path: Path) -> None:
    """Issue 9 item 4: a SIGTERM or SIGINT to the process group is the parent's to handle;
    the worker keeps writing at a lower priority until the parent ends it."""
    async with worker_for(tmp_path) as (worker, _):
        await decode(worker, answer(rows(0, 10)))  # the worker is up and has set itself up
        assert os.getpriority(os.PRIO_PROCESS, worker.pid) == min(
            19, os.getpriority(os.PRIO_PROCESS, 0) + 10
        )
        # Not SCHED_IDLE by default: beside other busy programs it would starve (issue 22).
        assert os.sched_getscheduler(worker.pid) == os.SCHED_OTHER
        os.kill(worker.pid, signal.SIGTERM)
        os.kill(worker.pid, signal.SIGINT)
        assert await worker.finish_writes() == 10
        assert await worker.close(None) > 0


async def test_with_sched_idle_every_thread_of_the_worker_takes_the_policy(
    tmp_path: Path,
) -> None:
    """FILE_EXPORT_WORKER_SCHED_IDLE=true (a host dedicated to the service): a waking event
    loop preempts the worker at once. Every thread takes the policy and the nice value
    (Linux keeps both per thread), should a library start one."""
    with open(tmp_path / "out.xlsx", "xb") as out:
        async with open_export_worker(
            out, max_rows=10, max_bytes=1 << 20, pool=WorkerPool(nice=10, sched_idle=True, spares=0)
        ) as worker:
            await decode(worker, answer(rows(0, 10)))  # the worker has applied its Start
            assert await worker.finish_writes() == 10
            threads = [int(t) for t in os.listdir(f"/proc/{worker.pid}/task")]
            for thread in threads:
                assert os.sched_getscheduler(thread) == os.SCHED_IDLE
                assert os.getpriority(os.PRIO_PROCESS, thread) == min(
                    19, os.getpriority(os.PRIO_PROCESS, 0) + 10
                )
            assert await worker.close(None) > 0


async def wait_for(condition: Any, seconds: float = 10.0) -> None:
    with trio.fail_after(seconds):
        while not condition():
            await trio.sleep(0.01)


async def test_a_run_takes_the_spare_worker_and_a_new_spare_starts(tmp_path: Path) -> None:
    """The pool keeps a started worker: a run takes it (its output file passed over the
    worker's socket) and another spare starts for the next run; closing the pool kills
    the spares."""
    pool = WorkerPool(nice=10, sched_idle=True)
    try:
        await pool.fill()
        (spare,) = pool.spare_pids
        # Waiting spares already run at the workers' priority (set before their imports).
        await wait_for(lambda: os.sched_getscheduler(spare) == os.SCHED_IDLE)
        with open(tmp_path / "out.xlsx", "xb") as out:
            async with open_export_worker(
                out, max_rows=100, max_bytes=1 << 20, pool=pool
            ) as worker:
                assert worker.pid == spare
                (next_spare,) = pool.spare_pids
                assert next_spare != spare and alive(next_spare)
                await decode(worker, answer(rows(0, 3)))
                assert await worker.finish_writes() == 3
                assert await worker.close(None) == (tmp_path / "out.xlsx").stat().st_size
        assert not alive(spare)
        book = openpyxl.load_workbook(tmp_path / "out.xlsx", read_only=True)
        assert [r[0] for r in book.active.values] == ["ID", 0, 1, 2]
        book.close()
    finally:
        await pool.aclose()
    assert not alive(next_spare) and pool.spare_pids == []


async def test_a_spare_that_died_while_waiting_is_replaced(tmp_path: Path) -> None:
    """The OOM killer may take a waiting spare: the next run starts a new worker instead
    of failing on the dead one."""
    pool = WorkerPool(nice=10, sched_idle=True)
    try:
        await pool.fill()
        (dead,) = pool.spare_pids
        os.kill(dead, signal.SIGKILL)
        await wait_for(lambda: Path(f"/proc/{dead}/stat").read_text().split()[2] in "ZX")
        with open(tmp_path / "out.xlsx", "xb") as out:
            async with open_export_worker(
                out, max_rows=100, max_bytes=1 << 20, pool=pool
            ) as worker:
                assert worker.pid != dead
                await decode(worker, answer(rows(0, 2)))
                assert await worker.finish_writes() == 2
                assert await worker.close(None) > 0
        assert len(pool.spare_pids) == 1
    finally:
        await pool.aclose()


async def test_a_run_cancelled_while_the_next_spare_starts_leaves_no_worker_behind() -> None:
    """A run cancelled inside :meth:`WorkerPool.take` (its lease lost as it starts) is
    cancelled while the replacement spare starts, after it took the waiting one: that
    worker belongs to no run and no pool then, so the pool must kill and reap it."""
    pool = WorkerPool(nice=10, sched_idle=True)
    try:
        await pool.fill()
        (spare,) = pool.spare_pids
        with trio.CancelScope() as scope:
            scope.cancel()
            await pool.take()
        assert scope.cancelled_caught
        assert not alive(spare)  # reaped, not left running or a zombie
    finally:
        await pool.aclose()


async def test_runs_that_start_together_leave_one_spare_not_one_each() -> None:
    """Consumer slots start runs at once: each take starts a replacement while the others
    do, and the pool must still keep one spare, not one per run started together."""
    pool = WorkerPool(nice=10, sched_idle=True)
    taken: list[int] = []
    try:
        await pool.fill()

        async def run() -> None:
            spawned = await pool.take()
            taken.append(spawned.process.pid)
            spawned.process.kill()
            await spawned.process.wait()
            spawned.fds.close()

        async with trio.open_nursery() as nursery:
            for _ in range(4):
                nursery.start_soon(run)
        assert len(taken) == 4
        assert len(pool.spare_pids) == 1
    finally:
        await pool.aclose()
