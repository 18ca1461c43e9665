"""The outbox publisher (§7.4): claim due rows with a lease, send, record the outcome.

Woken at once by the API after a create or retry commits; polls every
``FILE_EXPORT_PUBLISHER_POLL_MS`` as the fallback. A send failure puts the row back to
PENDING with backoff computed from the claim-time ``attempt_count``; there is no terminal
state for sending (docs/design-rules.md §7.4).

While the transport is down (``TransportLink``) the publisher claims nothing: due rows
stay due, counted by the backlog gauge, and are sent as soon as it is back.

A database blip ends the current round, not the publisher: it logs one WARNING (then at
most one per ``DB_WARNING_INTERVAL_SECONDS``) and tries again after a short pause. Rows it
had claimed but not yet marked stay CLAIMED until their publisher lease expires; the
reconciler then releases them and they are sent again — a harmless duplicate.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import trio

from actors.core.backoff import LoopBackoff, publish_backoff
from actors.core.command_message import (
    locating_properties,
    payload_schema_version,
    payload_trace_id,
)
from actors.core.errors import TransientDatabaseError
from actors.core.log_context import bind_context, task_fields
from actors.core.models import OutboxRow
from actors.core.ports.store import OutboxStore
from actors.core.ports.transport import CommandTransport, OutgoingMessage
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.plumbing.wakeup import Wakeup

log = logging.getLogger(__name__)

#: Far below the 60 s outbox lease, so a send never outlives its claim (§7.4).
SEND_TIMEOUT_SECONDS = 3.0
#: Pause after a round that hit a database fault, seconds (the store already retried).
DB_PAUSE_SECONDS = 1.0
#: At most one WARNING about database faults per this many seconds.
DB_WARNING_INTERVAL_SECONDS = 30.0


def outgoing_message(row: OutboxRow) -> OutgoingMessage:
    """The message for an outbox row: body = stored payload; the four locating fields as
    properties, taken from the outbox columns, which equal the payload's (§6.4; built by
    ``actors/core/command_message.py``)."""
    return OutgoingMessage(
        topic=row.topic,
        tag=row.tag,
        key=row.message_key,
        body=row.payload_json,
        properties=locating_properties(
            row.event_id,
            row.task_id,
            row.dispatch_version,
            payload_schema_version(row.payload_json),
        ),
    )


class Publisher:
    def __init__(
        self,
        store: OutboxStore,
        transport: CommandTransport,
        settings: Settings,
        metrics: Metrics,
        wakeup: Wakeup,
        transport_up: Callable[[], bool] = lambda: True,
    ) -> None:
        self.store = store
        self.transport = transport
        self.settings = settings
        self.metrics = metrics
        self.wakeup = wakeup
        self.transport_up = transport_up
        self.owner = settings.instance_id
        self._warned_at: float | None = None

    async def run(self) -> None:
        """Publish forever: drain due rows, then wait for a wake-up or the poll interval.
        A database fault pauses the loop briefly instead of ending it."""
        poll = self.settings.publisher_poll_ms / 1000
        # A constant pause: the store already retried with its own budget, so the loop
        # only has to avoid spinning; it never backs off further than one poll.
        pause = LoopBackoff.constant(min(poll, DB_PAUSE_SECONDS))
        faults = 0
        while True:
            if not self.transport_up():
                # Sending would only fail and back every due row off (up to 15 min after
                # the transport is back): hold them, due, until the transport is up. Their
                # age shows in export_outbox_oldest_age_seconds; the link wakes us.
                await self.wakeup.wait(poll)
                continue
            try:
                claimed = await self.publish_due()
            except TransientDatabaseError as exc:
                faults += 1
                self._database_fault(exc)
                await trio.sleep(pause.delay(faults))
                continue
            faults = 0
            if claimed < self.settings.publisher_batch_size:
                await self.wakeup.wait(poll)

    def _database_fault(self, exc: TransientDatabaseError) -> None:
        now = trio.current_time()
        if self._warned_at is None or now - self._warned_at >= DB_WARNING_INTERVAL_SECONDS:
            self._warned_at = now
            log.warning("publisher round ended by a database fault; retrying: %s", exc)

    async def publish_due(self) -> int:
        """One round: claim up to ``publisher_batch_size`` due rows and send each.
        Returns how many rows were claimed."""
        rows = await self.store.claim_due_outbox(
            self.owner, self.settings.publisher_lease_seconds, self.settings.publisher_batch_size
        )
        for row in rows:
            with bind_context(
                taskId=str(row.task_id),
                eventId=row.event_id,
                dispatchVersion=row.dispatch_version,
                traceId=payload_trace_id(row.payload_json),
            ):
                await self._send_one(row)
        return len(rows)

    async def _send_one(self, row: OutboxRow) -> None:
        error: str | None = None
        with trio.move_on_after(SEND_TIMEOUT_SECONDS) as scope:
            try:
                await self.transport.send(outgoing_message(row))
            except Exception as exc:  # any send failure backs off; none is terminal
                error = f"{type(exc).__name__}: {exc}"
        if scope.cancelled_caught:
            error = f"send timed out after {SEND_TIMEOUT_SECONDS:g}s"
        if error is None:
            self.metrics.outbox_send.labels("sent").inc()
            # A database fault here ends the round; the row stays CLAIMED and is sent
            # again after its lease (see the module docstring).
            if not await self.store.mark_outbox_sent(row.id, self.owner):
                log.warning(
                    "command sent but its outbox claim was lost (a duplicate is harmless)",
                    extra=task_fields(row.task_id, row.dispatch_version, outboxId=str(row.id)),
                )
            return
        delay = publish_backoff(row.attempt_count, self.settings.publish_backoff_seconds)
        self.metrics.outbox_send.labels("failed").inc()
        log.warning(
            "command send failed; trying again later",
            extra=task_fields(
                row.task_id,
                row.dispatch_version,
                outboxId=str(row.id),
                attempt=row.attempt_count,
                error=str(error),
                retryInSeconds=delay,
            ),
        )
        await self.store.mark_outbox_send_failed(row.id, self.owner, delay, error)
