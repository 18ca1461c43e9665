"""Starting, keeping ready and stopping export worker processes: one per run.

Why a dedicated child per run rather than trio-parallel's worker pool
(``open_worker_context`` / ``run_sync(..., kill_on_cancel=True)``): both give cancellable,
crash-isolated processes, but

* a run's writer lives across all its batches, so a run must keep one process. A
  trio-parallel context hands each call any idle worker of its cache and silently starts a
  fresh one if the last died; the run would need a private context plus its own check that
  the state is still there, and the cache would then add nothing;
* the worker writes the XLSX straight into the storage file, whose descriptor the parent
  passes it over a Unix socket (``SCM_RIGHTS``). trio-parallel pickles arguments, so the
  file would have to be spooled elsewhere and copied;
* a frame protocol lets the worker answer a batch's summary as soon as it is decoded and
  write the batch behind that answer: the parent checks batch n and asks for n+1, and the
  worker sends n+1's request, encodes n while the Provider prepares n+1, then reads it
  (write-behind); ``run_sync`` is one call, one answer;
* ``spawn`` workers re-import the parent's ``__main__`` (the whole service: Quart,
  hypercorn, httpx) in every worker; ``python -m actors.pipeline.worker.main`` imports the
  HTTP client, the decoder and the writer only, so it starts in a fraction of the time
  and memory. Even so a start costs ~0.2 s, so :class:`WorkerPool` keeps one started
  ahead of the next run, as trio-parallel's cache keeps idle workers.

Structured cancellation: the process belongs to the ``async with`` block of
:func:`open_export_worker`, inside the run's cancel scope. Leaving the block by any
exception — a cancel from the lease watchdog, the deadline guard or the shutdown
hand-back included — sends SIGKILL and reaps the process before the block exits, so no
worker outlives its run. The parent deletes the partial file (the slot's executor, by object
key).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import subprocess
import sys
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import BinaryIO

import trio

from actors.core.errors import StorageUnavailableError
from actors.core.ports.storage import RemoteUpload
from actors.pipeline.worker.handle import ExportWorker

#: Seconds a worker may take to exit after its request pipe closed, before SIGKILL.
EXIT_TIMEOUT = 10.0

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Spawned:
    """A started worker process and the parent's end of its descriptor socket."""

    process: trio.Process
    fds: socket.socket


async def _spawn(nice: int, sched_idle: bool, object_store: bool = False) -> _Spawned:
    """Start a worker process (it lowers its priority, imports, then waits for Start).

    Raises:
        StorageUnavailableError: the process cannot be started.
    """
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        process = await trio.lowlevel.open_process(
            [
                *(sys.executable, "-m", "actors.pipeline.worker.main"),
                *(str(nice), "1" if sched_idle else "0", str(theirs.fileno())),
                *(("s3",) if object_store else ()),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            pass_fds=(theirs.fileno(),),
        )
    except OSError as exc:
        ours.close()
        raise StorageUnavailableError(f"cannot start an export worker process: {exc}") from exc
    except BaseException:
        ours.close()  # cancelled before the process started
        raise
    finally:
        theirs.close()
    return _Spawned(process, ours)


async def _reap(spawned: _Spawned) -> None:
    """Kill (SIGKILL) and reap a worker, close its pipes and socket; never cancelled."""
    process = spawned.process
    if process.returncode is None:
        process.kill()
    spawned.fds.close()
    with trio.CancelScope(shield=True):
        await process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                await stream.aclose()


class WorkerPool:
    """Worker processes started ahead of the runs that will use them.

    A new worker spends ~0.2 s starting Python and importing its modules — more than 5 %
    of a 200,000-row export, all of it before the first Provider request. A run takes a
    spare that is already waiting instead, and another spare starts for the next run (the
    worker cache of trio-parallel or a prefork pool, one run per worker). A spare waits
    blocked on its request pipe: no CPU, ~28 MB of memory, at the workers' low priority.
    A spare found dead when taken (the OOM killer) is reaped and replaced.

    Use it from one trio run: :meth:`fill` at start, :meth:`take` per run, :meth:`aclose`
    at the end (kills the spares).

    Args:
        nice: the workers' nice increment (``FILE_EXPORT_WORKER_NICE``, 0..19).
        sched_idle: the workers' ``SCHED_IDLE`` policy (``FILE_EXPORT_WORKER_SCHED_IDLE``;
            Linux only, ignored elsewhere). Off by default: beside other busy programs an
            idle-policy worker gets almost no CPU (``actors/plumbing/config.py``).
        spares: workers kept waiting; 0: each run starts its own.
        object_store: the runs upload to an object store: workers import its client
            while they wait.
    """

    def __init__(
        self,
        *,
        nice: int = 10,
        sched_idle: bool = False,
        spares: int = 1,
        object_store: bool = False,
    ) -> None:
        self.nice = nice
        self.sched_idle = sched_idle
        self.object_store = object_store
        self._size = spares
        self._spares: deque[_Spawned] = deque()
        self._closed = False
        self._starting = 0  # spares being started now (by concurrent takes)

    @property
    def spare_pids(self) -> list[int]:
        """Process ids of the spares waiting now."""
        return [spawned.process.pid for spawned in self._spares]

    async def fill(self) -> None:
        """Start spares up to the pool's size. A spare that cannot start is left out
        (logged): the next run starts its own worker and says why if it cannot."""
        # Spares still starting count: runs that start together would each start one
        # otherwise, and the pool would keep as many spares as runs started at once.
        while not self._closed and len(self._spares) + self._starting < self._size:
            self._starting += 1
            try:
                spawned = await _spawn(self.nice, self.sched_idle, self.object_store)
            except StorageUnavailableError as exc:
                log.warning("no spare export worker: %s", exc)
                return
            finally:
                self._starting -= 1
            if self._closed:  # closed while it started
                await _reap(spawned)
                return
            self._spares.append(spawned)

    async def take(self) -> _Spawned:
        """A started worker for one run: a spare, or a new one; then a new spare starts.

        Raises:
            StorageUnavailableError: no worker process can be started.
        """
        spawned: _Spawned | None = None
        while self._spares and spawned is None:
            spawned = self._spares.popleft()
            if spawned.process.poll() is not None:  # died while it waited
                await _reap(spawned)
                spawned = None
        if spawned is None:
            spawned = await _spawn(self.nice, self.sched_idle, self.object_store)
        try:
            await self.fill()
        except BaseException:
            # Cancelled while the next spare started (the run's lease lost, shutdown):
            # the worker taken belongs to no run and no pool now, so nothing else would
            # ever kill or reap it.
            await _reap(spawned)
            raise
        return spawned

    async def aclose(self) -> None:
        """Kill and reap the spares; :meth:`take` starts no more spares afterwards."""
        self._closed = True
        while self._spares:
            await _reap(self._spares.popleft())


@contextlib.asynccontextmanager
async def open_export_worker(
    out: BinaryIO | RemoteUpload,
    *,
    max_rows: int,
    max_bytes: int,
    pool: WorkerPool | None = None,
) -> AsyncIterator[ExportWorker]:
    """Take a worker process from ``pool`` for one run; stop it when the block ends.

    The worker writes the XLSX into ``out``'s descriptor (passed over its Unix socket),
    from its current position, or uploads it to the object store ``out`` names. Leaving
    the block normally closes the worker's request pipe and waits for it to exit (SIGKILL
    after :data:`EXIT_TIMEOUT` seconds); leaving it by an exception, cancellation
    included, kills it with SIGKILL at once. Either way the process is reaped before the
    block exits. ``out`` stays open (the caller closes it).

    Args:
        out: the storage file, opened for writing (a real file with a descriptor), or
            the upload the worker carries out.
        max_rows: registry ``max-rows`` of the export.
        max_bytes: largest file, bytes.
        pool: where the worker comes from (a spare, or one started now, at the pool's
            priority); ``None``: a worker started now at the default priority.

    Yields:
        The worker handle. Its ``Start`` request is already sent (its reply is read by
        the first call that waits), so a new process starts while the first Provider
        request is on its way.

    Raises:
        StorageUnavailableError: the process cannot be started.
    """
    spawned = await (pool or WorkerPool(spares=0)).take()
    process = spawned.process
    worker = ExportWorker(process)
    try:
        upload: RemoteUpload | None = None
        if isinstance(out, RemoteUpload):
            upload = out  # the worker uploads it itself: no descriptor to pass
        else:
            try:
                socket.send_fds(spawned.fds, [b"\0"], [out.fileno()])
            except OSError:
                pass  # the worker is gone: its reply pipe says how, at the first reply
        await worker.start(max_rows, max_bytes, upload)
        yield worker
        await _stop(process)
    finally:
        await _reap(spawned)  # SIGKILL if still running: no worker outlives its run


async def _stop(process: trio.Process) -> None:
    """End a worker that finished its run: close its requests, let it exit."""
    assert process.stdin is not None
    await process.stdin.aclose()
    with trio.move_on_after(EXIT_TIMEOUT):
        await process.wait()


__all__ = ["EXIT_TIMEOUT", "WorkerPool", "open_export_worker"]
