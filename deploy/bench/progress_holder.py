"""The progress streams of ``bench_progress_fanout.py``, held by a process of their own.

``python deploy/bench/progress_holder.py URL --streams N --admins SHARE`` opens the streams
:func:`plan` lays out over plain sockets (an HTTP/1.1 request each, the chunked answer read
as it comes: no HTTP client, so that reading thousands of streams costs the machine little
and the benchmark's probes do not share this event loop), says ``connected N SECONDS`` on
stdout once all are open, then answers each ``report`` line on stdin with what each stream
received since (one JSON line: events, bytes, and the last status of each task), until
``quit``. :class:`Holder` is the benchmark's side of it.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actors.core.principal import DOWNLOAD_ALL_PERMISSION, AppCode  # noqa: E402
from deploy.bench.bench_workers import SECRET  # noqa: E402
from web.auth import issue_token  # noqa: E402

PROGRESS = "/api/platform/v1/files/progress"
#: Streams per user: the default cap (``FILE_EXPORT_PROGRESS_STREAMS_PER_USER``).
PER_USER = 20
FIRST_USER = 80_000
FIRST_ADMIN = 90_000
#: The tenant of every stream but the foreign administrators'.
TENANT = 0
FOREIGN_TENANT = 1
#: Streams connecting at once while the holder opens them.
CONNECTING = 100
EVENT = re.compile(rb"\ndata: ([^\n]*)\n")
TASK_ID = re.compile(rb'"id":"(\d+)"')
STATUS = re.compile(rb'"status":"([A-Z]+)"')


@dataclass(frozen=True)
class Stream:
    """One stream to hold: its group (``user``, ``admin`` or ``foreign``), tenant and user."""

    group: str
    tenant: int
    user: int

    def token(self) -> str:
        perms = ["platform:customer:export"]
        if self.group != "user":
            perms.append(DOWNLOAD_ALL_PERMISSION)
        return issue_token(
            SECRET, user_id=self.user, tenant_id=self.tenant, app_code=AppCode.PLATFORM, perms=perms
        )


def plan(streams: int, admin_share: float) -> list[Stream]:
    """The streams to open, :data:`PER_USER` per user: ordinary users first (the first
    ones export), then administrators of :data:`TENANT`, then one administrator of
    another tenant (one tenth of the administrators' streams, at least one) whose streams
    must receive nothing."""
    admins = round(streams * admin_share)
    foreign = min(PER_USER, max(1, admins // 10)) if admins >= 2 else 0
    groups = [
        ("user", TENANT, FIRST_USER, streams - admins),
        ("admin", TENANT, FIRST_ADMIN, admins - foreign),
        ("foreign", FOREIGN_TENANT, FIRST_ADMIN, foreign),
    ]
    return [
        Stream(group, tenant, first + i // PER_USER)
        for group, tenant, first, count in groups
        for i in range(count)
    ]


async def hold(url: str, streams: list[Stream]) -> None:
    """Open every stream, say ``connected`` on stdout, then print what each stream received
    since (one JSON line) for each ``report`` line on stdin, until another line comes."""
    host, port = url.removeprefix("http://").split(":")
    received: list[dict[str, Any]] = [
        {"events": 0, "bytes": 0, "tasks": {}} for _ in range(len(streams))
    ]
    connecting = trio.CapacityLimiter(CONNECTING)
    connected = 0
    all_in = trio.Event()

    async def one(i: int, stream: Stream) -> None:
        nonlocal connected
        mine = received[i]
        async with connecting:
            sock = await trio.open_tcp_stream(host, int(port))
            await sock.send_all(
                f"GET {PROGRESS} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream"
                f"\r\nAuthorization: Bearer {stream.token()}\r\n\r\n".encode()
            )
            buffer = b""
            while b"\r\n\r\n" not in buffer or not buffer.split(b"\r\n\r\n", 1)[1]:
                chunk = await sock.receive_some(65536)
                assert chunk, "the service closed a stream while it connected"
                buffer += chunk
            head, buffer = buffer.split(b"\r\n\r\n", 1)
            assert head.startswith(b"HTTP/1.1 200 "), head.decode(errors="replace")
        connected += 1
        if connected == len(streams):
            all_in.set()
        tasks: dict[str, str] = mine["tasks"]
        async with sock:
            while True:
                end = buffer.rfind(b"\n\n")
                if end >= 0:
                    whole, buffer = b"\n" + buffer[: end + 2], buffer[end + 2 :]
                    for data in EVENT.findall(whole):
                        task_id, status = TASK_ID.search(data), STATUS.search(data)
                        assert task_id and status, data[:200]
                        tasks[task_id.group(1).decode()] = status.group(1).decode()
                        mine["events"] += 1
                chunk = await sock.receive_some(65536)
                if not chunk:
                    return
                mine["bytes"] += len(chunk)
                buffer += chunk

    async with trio.open_nursery() as nursery:
        started = time.perf_counter()
        for i, stream in enumerate(streams):
            nursery.start_soon(one, i, stream)
        await all_in.wait()
        print(f"connected {len(streams)} {time.perf_counter() - started:.1f}", flush=True)
        # Events received while connecting (the live tasks of the first read) are not the
        # window's: count from here.
        for mine in received:
            mine.update(events=0, bytes=0)
            mine["tasks"].clear()
        while (await trio.to_thread.run_sync(sys.stdin.readline)).strip() == "report":
            print(json.dumps(received), flush=True)
        nursery.cancel_scope.cancel()


class Holder:
    """The stream holder's process (:func:`hold`), run from the benchmark."""

    def __init__(self, url: str, streams: int, admin_share: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, url, f"--streams={streams}", f"--admins={admin_share}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    async def connected(self) -> float:
        """Seconds it took to open every stream, once all are open."""
        assert self.proc.stdout is not None
        line = await trio.to_thread.run_sync(self.proc.stdout.readline)
        assert line.startswith("connected "), f"the stream holder failed: {line!r}"
        return float(line.split()[2])

    async def report(self) -> list[dict[str, Any]]:
        """What each stream received since all were open (so far)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("report\n")
        self.proc.stdin.flush()
        line = await trio.to_thread.run_sync(self.proc.stdout.readline)
        return json.loads(line)  # type: ignore[no-any-return]

    def stop(self) -> None:
        """Close every stream and end the holder."""
        if self.proc.poll() is None and self.proc.stdin is not None:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
            try:
                self.proc.wait(30)
                return
            except subprocess.TimeoutExpired:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url")
    parser.add_argument("--streams", type=int, required=True)
    parser.add_argument("--admins", type=float, required=True)
    args = parser.parse_args()
    trio.run(hold, args.url, plan(args.streams, args.admins))
