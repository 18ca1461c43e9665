"""The task stores a stable ``failure_code`` beside ``failure_message`` at every
transition that writes one, and clears it with the message: what people read of a failure
(``actors/core/messages.py``) comes from the code, never from the message's wording."""

from __future__ import annotations

from actors.core.models import TaskStatus
from actors.core.outcomes import ManualRetryOutcome, RetryOutcome
from db.store import ExportStore
from tests.helpers import claim, create


async def test_a_permanent_failure_stores_its_class_code(store: ExportStore) -> None:
    running = await claim(store, await create(store))
    assert await store.fail_task(running, "owner-a", "export exceeds max-rows 10", "RowLimitError")
    task = await store.get_task(running.id)
    assert task is not None and task.status == TaskStatus.FAILED
    assert task.failure_code == "row-limit"


async def test_a_retry_keeps_the_code_and_a_manual_retry_clears_it(store: ExportStore) -> None:
    running = await claim(store, await create(store))
    outcome = await store.schedule_retry(
        running, "owner-a", "provider x answered HTTP 503", 60, "ProviderUnavailableError"
    )
    assert outcome == RetryOutcome.SCHEDULED
    waiting = await store.get_task(running.id)
    assert waiting is not None and waiting.failure_code == "provider-unavailable"
    assert await store.cancel_task(running.id, "cancelled by user 7")
    cancelled = await store.get_task(running.id)
    assert cancelled is not None and cancelled.failure_code == "cancelled"
    outcome, again = await store.manual_retry(cancelled)
    assert outcome == ManualRetryOutcome.RETRIED and again is not None
    assert (again.failure_code, again.failure_message) == (None, None)


async def test_an_error_outside_the_tree_stores_the_fallback_code(store: ExportStore) -> None:
    running = await claim(store, await create(store))
    assert await store.fail_task(running, "owner-a", "boom")
    task = await store.get_task(running.id)
    assert task is not None and task.failure_code == "export-failed"
