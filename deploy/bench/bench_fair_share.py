"""Benchmark of fair share (issue 13 item 7) on the real service: figures, no pass/fail.

Starts the embedded service (SQLite, in-process bus, demo Provider over real HTTP) in a
temporary directory with 3 consumer slots, once with fair share on (the defaults) and once
with both reserves off (``FILE_EXPORT_CONSUMER_RESERVED_SLOTS=0``,
``FILE_EXPORT_TYPE_RESERVED_PLACES=0``, first come, first served), and prints:

* slots: one heavy user creates three exports of ROWS rows; once they run, another user
  creates a 20-row export. How long did it wait between its create and its start
  (``startedAt - requestedAt``, DB clock), and how long until all four finished?
* admission: user A creates 3 exports, user B 2, then user C 1 (one export type, limit 5).
  Which creates were refused with 429?

Usage::

    .venv/bin/python deploy/bench/bench_fair_share.py [ROWS]   # default 60000
"""

from __future__ import annotations

import logging
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actors.core.principal import AppCode  # noqa: E402
from actors.plumbing.config_loading import load_settings  # noqa: E402
from actors.runtime import Runtime, serve  # noqa: E402
from web.auth import issue_token  # noqa: E402

API = "/api/platform/v1/files/export-tasks"


def client(rt: Runtime, user: int) -> httpx.AsyncClient:
    token = issue_token(
        rt.jwt_secret,
        user_id=user,
        tenant_id=0,
        app_code=AppCode.PLATFORM,
        perms=("platform:customer:export",),
    )
    return httpx.AsyncClient(
        base_url=rt.base_url, timeout=30, headers={"Authorization": f"Bearer {token}"}
    )


async def create(c: httpx.AsyncClient, rows: int, i: int) -> dict[str, Any]:
    body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": rows, "i": i}}
    result: dict[str, Any] = (await c.post(API, json=body)).json()
    return result


async def task(c: httpx.AsyncClient, task_id: str) -> dict[str, Any]:
    data: dict[str, Any] = (await c.get(f"{API}/{task_id}")).json()["data"]
    return data


async def wait_status(c: httpx.AsyncClient, task_id: str, *statuses: str) -> dict[str, Any]:
    with trio.fail_after(1800):
        while (t := await task(c, task_id))["status"] not in statuses:
            await trio.sleep(0.1)
    return t


def seconds(a: str, b: str) -> float:
    return (datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds()


async def scenario(reserved: int, rows: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(
            data_dir=Path(tmp),
            http_bind="127.0.0.1:0",
            jwt_secret="bench-secret-" + "x" * 32,
            consumer_concurrency=3,
            publisher_poll_ms=200,
            consumer_reserved_slots=reserved,
            type_reserved_places=reserved,
            log_level="WARNING",
            shutdown_grace_seconds=1,
        )
        async with trio.open_nursery() as n:
            rt: Runtime = await n.start(
                lambda task_status: serve(
                    settings, install_signal_handlers=False, task_status=task_status
                )
            )
            async with client(rt, 1) as heavy, client(rt, 2) as light:
                started = time.monotonic()
                heavy_ids = [(await create(heavy, rows, i))["data"]["id"] for i in range(3)]
                await wait_status(heavy, heavy_ids[0], "RUNNING", "SUCCEEDED")
                light_id = (await create(light, 20, 0))["data"]["id"]
                done = await wait_status(light, light_id, "SUCCEEDED", "FAILED")
                for tid in heavy_ids:
                    await wait_status(heavy, tid, "SUCCEEDED", "FAILED")
                total = time.monotonic() - started
            wait = seconds(done["requestedAt"], done["startedAt"])
            print(
                f"reserve {reserved}  slots: 3 heavy exports of {rows} rows, then a 20-row "
                f"export by another user: it waited {wait:6.2f} s to start; all four done "
                f"in {total:6.2f} s"
            )
            async with client(rt, 11) as a, client(rt, 12) as b, client(rt, 13) as c:
                codes = []
                for who, count in ((a, 3), (b, 2), (c, 1)):
                    for i in range(count):
                        # long exports, so every earlier one is still active
                        codes.append((await create(who, rows, 100 + i))["code"])
            print(f"reserve {reserved}  admission: A×3, B×2, C×1 answered {' '.join(codes)}")
            rt.request_stop()


async def main(rows: int) -> None:
    for reserved in (1, 0):
        await scenario(reserved, rows)


if __name__ == "__main__":
    logging.basicConfig(level=logging.ERROR)  # the demo data's truncation warnings are noise here
    trio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 60_000)
