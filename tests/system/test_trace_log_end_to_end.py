"""One export's JSON log, end to end through the real service over real HTTP: the trace id
created by the create request is on its access line, on every Provider batch line, on the
run's summary and on the download's access line; the demo Provider (served over HTTP by the
same process) received it as ``traceparent`` — its own access lines adopt the header's trace
id. Issue 12 "Done when": "a JSON log of one export shows the same traceId from the create
request through every batch to the download"."""

from __future__ import annotations

from collections.abc import Callable

import trio

from actors.core.tracing import is_trace_id
from actors.runtime import Runtime
from tests.helpers import API, client_for, wait_for_status
from tests.servers import json_log

ROWS = 1250  # three batches of the packaged registry's 500
BATCHES_PATH = "/internal/exports/v1/CUSTOMER_LIST/batches"


async def test_one_trace_id_from_create_through_every_batch_to_download(service: Runtime) -> None:
    with json_log("INFO", actors__pipeline__provider__client=True, web__access_log=True) as lines:
        async with client_for(service) as client:
            created = await client.post(
                API,
                # edgeCases: the demo's cell longer than Excel allows (a data warning)
                json={
                    "exportType": "CUSTOMER_LIST",
                    "parameters": {"rowCount": ROWS, "edgeCases": True},
                },
                headers={"X-Request-Id": "create-1"},
            )
            assert created.headers["x-request-id"] == "create-1"
            task_id = created.json()["data"]["id"]
            task = await wait_for_status(client, task_id, "SUCCEEDED", "FAILED")
            assert task["status"] == "SUCCEEDED", task["failureMessage"]
            download = await client.get(f"{API}/{task_id}/download")
            assert download.status_code == 200
            new_id = download.headers["x-request-id"]
        # The access line is written once the response is over, just after the client
        # has read its last byte.
        log = await until_logged(lines, f"{API}/{task_id}/download")

    access = [r for r in log if r["logger"] == "web.access_log"]
    [create] = [r for r in access if r["method"] == "POST" and r["path"] == API]
    trace_id = create["traceId"]
    assert is_trace_id(trace_id)  # created at the API (no traceparent was sent)
    assert create["requestId"] == "create-1" and create["status"] == 200
    assert create["taskId"] == task_id and create["userId"] == "1001"
    assert create["tenantId"] == "0" and create["method"] == "POST"

    batches = [r for r in log if r["logger"] == "actors.pipeline.provider.client"]
    assert len(batches) == 3
    assert sum(r["rows"] for r in batches) == ROWS
    for line in batches:
        assert line["level"] == "debug" and line["bytes"] > 0 and line["ms"] >= 0
        assert line["traceId"] == trace_id and line["taskId"] == task_id
        assert line["dispatchVersion"] == 1 and line["exportType"] == "CUSTOMER_LIST"
        assert line["tenantId"] == "0"

    [summary] = [r for r in log if r["logger"] == "actors.pipeline.runner" and "outcome" in r]
    assert summary["level"] == "info" and summary["outcome"] == "written"
    assert summary["traceId"] == trace_id and summary["taskId"] == task_id
    assert summary["rows"] == ROWS and summary["batches"] == 3
    assert summary["bytes"] == int(task["sizeBytes"]) and summary["seconds"] > 0
    assert summary["warnings"] >= 1  # the demo data has a cell longer than Excel allows

    [down] = [r for r in access if r["path"] == f"{API}/{task_id}/download"]
    assert down["traceId"] == trace_id and down["status"] == 200
    assert down["requestId"] == new_id and down["taskId"] == task_id

    # The Provider got the traceparent header on every batch request: its access lines
    # (same process, real HTTP) adopted that header's trace id.
    provider = [r for r in access if r["path"] == BATCHES_PATH]
    assert len(provider) == 3 and {r["traceId"] for r in provider} == {trace_id}

    # Every line of the run carries the trace id (the consumer's, the runner's, the
    # pipeline's), and no other export's trace id appears on them.
    run_lines = [r for r in log if r.get("taskId") == task_id and r["logger"] != "web.access_log"]
    assert run_lines and {r["traceId"] for r in run_lines} == {trace_id}


async def until_logged(lines: Callable[[], list[dict]], path: str) -> list[dict]:
    """The log once the access line of ``path`` is in it (a bounded condition wait)."""
    with trio.fail_after(10):
        while not any(r["logger"] == "web.access_log" and r["path"] == path for r in lines()):
            await trio.sleep(0.01)
    return lines()


async def test_a_caller_traceparent_is_adopted_for_the_whole_export(service: Runtime) -> None:
    caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    with json_log("INFO", web__access_log=True) as lines:
        async with client_for(service) as client:
            created = await client.post(
                API,
                json={"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 10}},
                headers={"traceparent": f"00-{caller_trace}-00f067aa0ba902b7-01"},
            )
            task_id = created.json()["data"]["id"]
            task = await wait_for_status(client, task_id, "SUCCEEDED", "FAILED")
            assert task["status"] == "SUCCEEDED", task["failureMessage"]
        log = lines()
    provider = [r for r in log if r["logger"] == "web.access_log" and r["path"] == BATCHES_PATH]
    assert provider and {r["traceId"] for r in provider} == {caller_trace}
    run_lines = [r for r in log if r.get("taskId") == task_id]
    assert {r["traceId"] for r in run_lines} == {caller_trace}
