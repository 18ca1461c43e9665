"""Many people at once (issue 24 item 1): 2,000 open progress streams on one embedded
instance. ``/healthz`` stays 200 and the API answers while they are open, the database is
read for progress once per interval (not once per stream), each stream gets the changes of
its own caller's tasks and no one else's, and one stream over a user's cap is refused with
an envelope 429.

Before the progress feed, every stream read the database once per interval: a few
thousand open pages made ``/healthz`` answer 503 ("database unavailable") and the API take
seconds. The figures of the benchmark (``deploy/bench/bench_progress.py``) go further.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import trio

from actors.core.principal import AppCode
from tests.helpers import API, make_settings, running_service, wait_for_status
from web.auth import issue_token

PROGRESS = "/api/platform/v1/files/progress"
USERS = 100
STREAMS_PER_USER = 20  # the default cap: 2,000 streams in all
WATCHED = (3, 42, 77)  # users who create a task while every stream is open


async def test_two_thousand_open_streams_leave_the_instance_healthy(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, progress_poll_seconds=0.5)
    async with running_service(settings) as rt:
        tokens = {
            user: issue_token(
                rt.jwt_secret,
                user_id=5000 + user,
                tenant_id=0,
                app_code=AppCode.PLATFORM,
                perms=("platform:customer:export",),
            )
            for user in range(USERS)
        }
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
        received: dict[tuple[int, int], list[str]] = {}
        connected = 0
        all_connected = trio.Event()

        async def one_stream(client: httpx.AsyncClient, user: int, n: int) -> None:
            nonlocal connected
            headers = {"Authorization": f"Bearer {tokens[user]}"}
            async with client.stream("GET", PROGRESS, headers=headers) as response:
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/event-stream")
                seen = received.setdefault((user, n), [])
                first = True
                async for line in response.aiter_lines():
                    if first:
                        first = False
                        connected += 1
                        if connected == USERS * STREAMS_PER_USER:
                            all_connected.set()
                    if line.startswith("data: "):
                        seen.append(json.loads(line[6:])["taskName"])

        async with (
            httpx.AsyncClient(base_url=rt.base_url, timeout=60, limits=limits) as streams,
            httpx.AsyncClient(base_url=rt.base_url, timeout=10) as probe,
            trio.open_nursery() as nursery,
        ):
            for user in range(USERS):
                for n in range(STREAMS_PER_USER):
                    nursery.start_soon(one_stream, streams, user, n)
            started_at = time.perf_counter()
            with trio.fail_after(300):
                while not all_connected.is_set():
                    with trio.move_on_after(5):
                        await all_connected.wait()
                    print(f"{time.perf_counter() - started_at:.0f} s: {connected} connected")
            feed = rt.progress_feed
            assert feed is not None
            assert feed.open_streams == USERS * STREAMS_PER_USER

            # Over the cap: refused with the envelope, counted, the others untouched.
            over = await probe.get(PROGRESS, headers={"Authorization": f"Bearer {tokens[0]}"})
            assert over.json()["code"] == "429", over.text
            assert "FILE_EXPORT_PROGRESS_STREAMS_PER_USER" in over.json()["message"]

            # The instance stays ready and the API answers, every time.
            reads_before, started = feed.reads, trio.current_time()
            healthz_ms = []
            for _ in range(20):
                t0 = time.perf_counter()
                health = await probe.get("/healthz")
                healthz_ms.append((time.perf_counter() - t0) * 1000)
                assert health.status_code == 200, health.text
                await trio.sleep(0.1)
            listed = await probe.get(API, headers={"Authorization": f"Bearer {tokens[1]}"})
            assert listed.json()["code"] == "200"
            seconds = trio.current_time() - started
            reads_per_second = (feed.reads - reads_before) / seconds
            # One feed read per 0.5 s interval: about 2 a second, whatever the 2,000 streams.
            assert reads_per_second < 5, reads_per_second

            # A change reaches exactly the streams of its requester.
            for user in WATCHED:
                headers = {"Authorization": f"Bearer {tokens[user]}"}
                body = {"exportType": "CUSTOMER_LIST", "taskName": f"of user {user}"}
                answer = await probe.post(API, json=body, headers=headers)
                task_id = answer.json()["data"]["id"]
                probe.headers["Authorization"] = headers["Authorization"]
                await wait_for_status(probe, task_id, "SUCCEEDED", timeout=120)
            with trio.fail_after(60):
                while not all(
                    f"of user {user}" in received[(user, n)]
                    for user in WATCHED
                    for n in range(STREAMS_PER_USER)
                ):
                    await trio.sleep(0.1)
            strangers = [key for key, names in received.items() if key[0] not in WATCHED and names]
            assert strangers == []
            print(
                f"progress streams: {feed.open_streams} open; /healthz max "
                f"{max(healthz_ms):.1f} ms; feed reads {reads_per_second:.2f}/s"
            )
            nursery.cancel_scope.cancel()
