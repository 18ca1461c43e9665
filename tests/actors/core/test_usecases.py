"""The task use cases over a fake store: the order of their checks, their refusals and
the leftover file (``actors/core/usecases.py``). The real store's side is
``tests/db/test_store_contract.py``; the API's and the operator's, ``tests/web`` and
``tests/actors/cli``."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from actors.core.admission import CreateLimits, admission_refusal
from actors.core.errors import Refusal, Refused
from actors.core.models import Task, TaskStatus
from actors.core.outcomes import (
    CancelOutcome,
    CancelResult,
    CreateOutcome,
    CreateResult,
    ManualRetryOutcome,
    NewTask,
)
from actors.core.usecases import cancel_task, create_task, retry_task
from tests.helpers import task_value

LIMITS = CreateLimits(max_active_per_user=3, max_active_per_type=5)


@dataclass
class FakeStore:
    create: CreateOutcome = CreateOutcome.CREATED
    retry: ManualRetryOutcome = ManualRetryOutcome.RETRIED
    cancel: CancelResult | None = None
    calls: list[str] = field(default_factory=list)

    async def create_task(self, new: NewTask, limits: CreateLimits = LIMITS) -> CreateResult:
        self.calls.append("create")
        task = None if self.create.value.endswith(("limit", "reserved")) else task_value(id=1)
        return CreateResult(self.create, task)

    async def manual_retry(
        self, task: Task, limits: CreateLimits = LIMITS
    ) -> tuple[ManualRetryOutcome, Task | None]:
        self.calls.append("retry")
        if self.retry is ManualRetryOutcome.RETRIED:
            return self.retry, task_value(id=task.id, dispatch_version=task.dispatch_version + 1)
        return self.retry, None

    async def cancel_task(
        self, task_id: int, failure_message: str, *, by: int | None = None
    ) -> CancelResult | None:
        self.calls.append("cancel")
        return self.cancel


@pytest.mark.parametrize(
    ("outcome", "reason", "words"),
    [
        (ManualRetryOutcome.USER_LIMIT, Refusal.USER_LIMIT, "the requester already has 3"),
        (ManualRetryOutcome.TYPE_LIMIT, Refusal.TYPE_LIMIT, "already has 5 active tasks"),
        (ManualRetryOutcome.TYPE_RESERVED, Refusal.TYPE_RESERVED, "kept for users with no"),
        (ManualRetryOutcome.CHANGED, Refusal.CHANGED, "the task changed meanwhile"),
    ],
)
async def test_a_refused_retry_raises_its_reason_in_words(
    outcome: ManualRetryOutcome, reason: Refusal, words: str
) -> None:
    store = FakeStore(retry=outcome)
    failed = task_value(id=7, status=TaskStatus.FAILED)
    with pytest.raises(Refused) as refused:
        await retry_task(store, failed, LIMITS, check_type=lambda t: None, delete_leftover=_keep)
    assert refused.value.reason is reason
    assert words in refused.value.message


async def _keep(key: str) -> None:
    raise AssertionError(f"no leftover to delete, got {key}")


async def test_retry_checks_status_then_type_then_deletes_the_leftover_then_writes() -> None:
    store = FakeStore()
    order: list[str] = []

    async def delete(key: str) -> None:
        order.append(f"delete {key}")

    failed = task_value(id=7, status=TaskStatus.FAILED, object_key="exports/7.xlsx")
    retried = await retry_task(
        store, failed, LIMITS, check_type=lambda t: order.append("type"), delete_leftover=delete
    )
    assert order == ["type", "delete exports/7.xlsx"] and store.calls == ["retry"]
    assert retried.dispatch_version == failed.dispatch_version + 1

    running = task_value(id=8, status=TaskStatus.RUNNING, object_key="exports/8.xlsx")
    order.clear()
    with pytest.raises(Refused) as refused:
        await retry_task(
            store,
            running,
            LIMITS,
            check_type=lambda t: order.append("type"),
            delete_leftover=delete,
        )
    assert refused.value.reason is Refusal.NOT_RETRYABLE
    assert order == [] and store.calls == ["retry"]  # nothing checked, deleted or written


@pytest.mark.parametrize(
    ("outcome", "reason"),
    [
        (CreateOutcome.USER_LIMIT, Refusal.USER_LIMIT),
        (CreateOutcome.TYPE_LIMIT, Refusal.TYPE_LIMIT),
        (CreateOutcome.TYPE_RESERVED, Refusal.TYPE_RESERVED),
    ],
)
async def test_a_refused_create_raises_its_reason(outcome: CreateOutcome, reason: Refusal) -> None:
    new = NewTask("demo", None, "xlsx", {}, None, 3)  # type: ignore[arg-type]
    with pytest.raises(Refused) as refused:
        await create_task(FakeStore(create=outcome), new, LIMITS)
    assert refused.value.reason is reason


async def test_create_answers_created_and_duplicate() -> None:
    new = NewTask("demo", None, "xlsx", {}, None, 3)  # type: ignore[arg-type]
    for outcome in (CreateOutcome.CREATED, CreateOutcome.DUPLICATE):
        assert (await create_task(FakeStore(create=outcome), new, LIMITS)).outcome is outcome


async def test_cancel_of_a_missing_task_is_not_found_else_the_store_answers() -> None:
    with pytest.raises(Refused) as refused:
        await cancel_task(FakeStore(cancel=None), 9, "cancelled")
    assert refused.value.reason is Refusal.NOT_FOUND
    answer = CancelResult(CancelOutcome.NOT_CANCELLABLE, task_value(id=9))
    assert await cancel_task(FakeStore(cancel=answer), 9, "cancelled") is answer


@pytest.mark.parametrize(
    "outcome", [CreateOutcome.CREATED, CreateOutcome.DUPLICATE, ManualRetryOutcome.RETRIED]
)
def test_an_admitted_outcome_has_no_refusal_words(
    outcome: CreateOutcome | ManualRetryOutcome,
) -> None:
    with pytest.raises(ValueError, match="is not a refusal"):
        admission_refusal(outcome, "demo", LIMITS, retry=False)
