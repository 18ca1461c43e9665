"""The DLQ handler (§9.4): quarantine poison commands so the reconciler never re-sends them.

It reads the locating properties (``eventId``, ``taskId``, ``dispatchVersion``,
``schemaVersion``), never the body, which is what is broken. One transaction quarantines
the outbox row and fails the task, asserting one row each. A stale version or a foreign
event id changes nothing. A message without usable properties is logged CRITICAL with its
message id and properties, and acked: the handler never produces a second-level dead
letter (§9.4.3). Database failures are retried without limit before acking.
"""

from __future__ import annotations

import logging

import trio

from actors.core.backoff import DLQ_RETRY_BACKOFF
from actors.core.command_message import Locator, read_locator
from actors.core.errors import TransientDatabaseError
from actors.core.log_context import bind_context, task_fields
from actors.core.outcomes import QuarantineOutcome
from actors.core.ports.store import QuarantineStore
from actors.core.ports.transport import CommandTransport, Delivery
from actors.plumbing.metrics import Metrics

log = logging.getLogger(__name__)


class DlqHandler:
    def __init__(
        self, store: QuarantineStore, transport: CommandTransport, metrics: Metrics
    ) -> None:
        self.store = store
        self.transport = transport
        self.metrics = metrics

    async def run(self) -> None:
        while True:
            delivery = await self.transport.receive_dead_letter()
            await self.handle(delivery)

    async def handle(self, delivery: Delivery) -> QuarantineOutcome | None:
        """Handle one dead-lettered message; returns the outcome, ``None`` if the message
        could not be located."""
        self.metrics.dlq_messages.inc()
        props = dict(delivery.properties)
        try:
            locator = read_locator(props)
        except (KeyError, ValueError) as exc:
            log.critical(
                "DLQ message lacks locating properties; acked without action",
                extra={"messageId": delivery.message_id, "error": str(exc), "properties": props},
            )
            await delivery.ack()
            return None
        with bind_context(
            eventId=locator.event_id,
            taskId=str(locator.task_id),
            dispatchVersion=locator.dispatch_version,
        ):
            return await self._quarantine(delivery, locator)

    async def _quarantine(self, delivery: Delivery, locator: Locator) -> QuarantineOutcome:
        event_id, task_id, version = locator.event_id, locator.task_id, locator.dispatch_version
        reason = (
            f"undecodable command after {delivery.reconsume_times + 1} deliveries "
            f"(message {delivery.message_id})"
        )
        failures = 0
        while True:
            failures += 1
            delay = DLQ_RETRY_BACKOFF.delay(failures)
            try:
                outcome = await self.store.quarantine(event_id, task_id, version, reason)
                break
            except TransientDatabaseError as exc:
                log.warning(
                    "DLQ quarantine failed; retrying",
                    extra=task_fields(task_id, error=str(exc), retryInSeconds=round(delay, 1)),
                )
            except Exception:
                log.exception(
                    "DLQ quarantine failed; retrying",
                    extra=task_fields(task_id, retryInSeconds=round(delay, 1)),
                )
            # both branches wait: a transient error retried at once would hammer a
            # database that is already struggling
            await trio.sleep(delay)
        if outcome == QuarantineOutcome.QUARANTINED:
            log.error(
                "poison command quarantined; task FAILED",
                extra=task_fields(task_id, version, eventId=event_id),
            )
            await self._count_failed(task_id)
        else:
            log.warning(
                "DLQ message matches no current attempt (stale version or foreign event "
                "id); acked, nothing changed",
                extra=task_fields(task_id, version, eventId=event_id),
            )
        await delivery.ack()
        return outcome

    async def _count_failed(self, task_id: int) -> None:
        """A quarantined task is FAILED like any other: count it in
        ``export_task_completed_total{status="FAILED"}``, so the failure-rate alert sees
        poison too. Metrics only: a read that fails is logged and skipped."""
        try:
            task = await self.store.get_task(task_id)
        except TransientDatabaseError as exc:
            log.warning(
                "quarantined task not counted as FAILED", extra=task_fields(task_id, error=str(exc))
            )
            return
        if task is not None:
            self.metrics.task_completed.labels(task.export_type, "FAILED").inc()
