"""The trace id is stored on the task at create and carried by every command of the task:
the first, an automatic retry's, a lease recovery's, a hand-back's, a manual retry's and a
reconciler re-dispatch's (issue 12 item 1: "traceId … travels in the command and the outbox
row"). Both dialects."""

from __future__ import annotations

import json
from dataclasses import replace

from actors.core.command_message import Command
from actors.core.outcomes import RetryOutcome
from actors.core.tracing import is_trace_id
from db.store import ExportStore
from tests.helpers import claim, exec_sql, new_task

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


async def created(store: ExportStore, trace_id: str | None = TRACE, **kw: object) -> int:
    result = await store.create_task(replace(new_task(**kw), trace_id=trace_id))  # type: ignore[arg-type]
    assert result.task is not None
    assert result.task.trace_id == trace_id
    return result.task.id


async def command_traces(store: ExportStore, task_id: int) -> dict[int, str]:
    """dispatch_version -> the traceId of that version's command, as stored."""
    return {
        r.dispatch_version: Command.from_json(r.payload_json).trace_id
        for r in await store.list_outbox(task_id)
    }


async def test_create_stores_the_trace_id_and_the_first_command_carries_it(
    store: ExportStore,
) -> None:
    task_id = await created(store)
    assert (await store.get_task(task_id)).trace_id == TRACE
    assert await command_traces(store, task_id) == {1: TRACE}
    [row] = await store.list_outbox(task_id)
    assert json.loads(row.payload_json)["traceId"] == TRACE


async def test_a_task_without_a_trace_id_still_gets_a_valid_one_in_its_command(
    store: ExportStore,
) -> None:
    task_id = await created(store, trace_id=None)
    assert (await store.get_task(task_id)).trace_id is None
    assert is_trace_id((await command_traces(store, task_id))[1])


async def test_automatic_retry_and_manual_retry_keep_the_trace_id(store: ExportStore) -> None:
    task_id = await created(store)
    running = await claim(store, await store.get_task(task_id))
    assert await store.schedule_retry(running, "owner-a", "503", 0) == RetryOutcome.SCHEDULED
    running = await claim(store, await store.get_task(task_id))
    assert await store.fail_task(running, "owner-a", "boom")
    _, retried = await store.manual_retry(await store.get_task(task_id))
    assert retried is not None and retried.trace_id == TRACE
    assert await command_traces(store, task_id) == {1: TRACE, 2: TRACE, 3: TRACE}


async def test_lease_recovery_and_hand_back_keep_the_trace_id(store: ExportStore) -> None:
    task_id = await created(store)
    running = await claim(store, await store.get_task(task_id))
    assert await store.release_lease(running, "owner-a")  # a drain's hand-back
    running = await claim(store, await store.get_task(task_id))
    await exec_sql(
        store, "UPDATE file_export_task SET lease_until = {now} WHERE id = :id", {"id": task_id}
    )
    [expired] = await store.expired_leases(10)
    assert expired.trace_id == TRACE
    outcome = await store.recover_expired_lease(expired, "lease lost", "lease lost, no more")
    assert outcome == RetryOutcome.SCHEDULED
    assert await command_traces(store, task_id) == {1: TRACE, 2: TRACE, 3: TRACE}


async def test_reconciler_redispatch_of_a_missing_command_keeps_the_trace_id(
    store: ExportStore,
) -> None:
    task_id = await created(store)
    await exec_sql(store, "DELETE FROM file_export_outbox WHERE task_id = :t", {"t": task_id})
    assert await store.redispatch_missing_outbox(0, 10) == 1
    assert await command_traces(store, task_id) == {1: TRACE}
