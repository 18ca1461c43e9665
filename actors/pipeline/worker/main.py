"""The export worker process: one run's Provider batches fetched, decoded and written.

Started by :mod:`actors.pipeline.worker.handle` as ``python -m actors.pipeline.worker.main
NICE SCHED_IDLE FD_SOCKET`` — ahead of the run that will use it (a spare) or for it — and
spoken to with the frames of :mod:`actors.pipeline.worker.protocol` over its stdin/stdout;
:mod:`actors.pipeline.worker.session` does the run's work.

At start, before it imports anything heavy, it

* ignores SIGINT and SIGTERM: a Ctrl-C or a service manager's SIGTERM to the process
  group is meant for the parent, whose drain decides when this run ends (it hands the task
  back, then kills the worker). The parent ends the worker by closing its stdin (clean) or
  with SIGKILL (cancel);
* lowers its own scheduling priority (``nice`` +NICE, ``FILE_EXPORT_WORKER_NICE``, and on
  Linux the ``SCHED_IDLE`` policy when SCHED_IDLE is 1, ``FILE_EXPORT_WORKER_SCHED_IDLE``),
  so when every core is busy encoding the parent's event loop — the API, lease renewals —
  still gets the CPU first, at once; its imports already run at that priority, and any
  thread a library might start inherits it (Linux keeps both per thread);
* moves the frame pipe off file descriptor 1 and points 1 at stderr, so a stray print from
  a library cannot corrupt a frame.

It imports only urllib3, the decoder, the writer and the pure core (not trio, httpx or the
web stack), which keeps its start fast and its memory small.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from typing import BinaryIO


def _lower_priority(increment: int, *, idle: bool) -> None:
    """``nice`` +``increment`` and, when ``idle``, the ``SCHED_IDLE`` policy."""
    if idle and hasattr(os, "SCHED_IDLE"):  # Linux; elsewhere nice is all there is
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except OSError:  # refused (a seccomp profile): nice alone, rather than not at all
            pass
    if increment <= 0:
        return
    try:
        os.nice(increment)
    except OSError:  # not permitted here: run at the parent's priority rather than not at all
        pass


def _prepare_process() -> tuple[BinaryIO, BinaryIO]:
    """Signals and the frame pipes (module docstring); returns (requests, replies)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return requests, replies


def main(argv: list[str]) -> int:
    """Serve one run until the parent closes the request pipe; exit status 0.

    Args:
        argv: ``[NICE, SCHED_IDLE, FD_SOCKET]``: the nice increment (0..19), ``1`` for
            the ``SCHED_IDLE`` policy, the descriptor of the Unix socket the run's output
            file arrives on; then ``s3`` when the run will upload to an object store
            (its client is imported now, while the worker waits as a spare).
    """
    nice, idle, fd_socket = (int(arg) for arg in argv[:3])
    _lower_priority(nice, idle=idle == 1)
    requests, replies = _prepare_process()
    from actors.pipeline.worker.session import serve  # the heavy imports, at low priority

    if "s3" in argv[3:]:
        import actors.storage.s3_client  # noqa: F401  (~0.15 s, before the run needs it)

    with socket.socket(fileno=fd_socket) as fds:
        serve(requests, replies, fds)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
