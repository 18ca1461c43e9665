"""Consumer slots (§8.1, §8.2): receive a command, claim its task, ack, hand it on.

Each slot takes one delivery at a time, which is where backpressure comes from: with N
slots at most N exports run, and further commands wait in the transport.

Per delivery:

1. Decode. An undecodable body is the only thing that is *not* acked (§6.4): it is
   rejected, redelivered, and dead-lettered after ``maxReconsumeTimes``.
2. Claim with the full §8.2 update, through the instance's ``ClaimGate``, which first
   applies fair share: a task whose requester already holds its share of the slots is
   deferred (left PENDING). Whatever the outcome (claimed, deferred, any of the seven
   no-claim branches, even a database error) the command is acked right after: the queue
   never holds a message for the length of an export, and the reconciler is the only
   re-send path (docs/design-rules.md §3 principle 6). A no-claim whose task still waits
   PENDING at the command's version (deferred, storage unavailable, in back-off, a claimer
   a moment faster: ``actors.core.dispatch.marks_command_seen``) then marks the command
   *seen*, so the reconciler does not send it again (§8.5-1): the task waits for a slot,
   which pulls it from the database. Only after the ack: a slot that dies between the two
   leaves an unseen command, which the reconciler re-sends as it would a lost one.
3. Execute a claimed task: the slot's ``TaskExecutor`` (``actors/supervised/execution.py``) runs the
   export under its lease watchdog and deadline guard and settles the outcome; the slot
   is free again when it returns.

Before waiting for the next command, a slot that has become free *pulls*: it claims the
fairest due PENDING task from the database (``ClaimGate.claim_next``) and runs it, until
nothing may run here. That is how deferred tasks run as soon as a slot frees, and why a
deferral never leaves a slot idle while someone else's task waits.

An idle slot waits for a command *or* the next claim round (``actors.plumbing.wakeup.ClaimRounds``:
every ``FILE_EXPORT_CONSUMER_POLL_MS``, and at once after a create or retry on this
instance while the bus is down), and pulls in each round. So tasks run with no command at
all: while the message bus is down, before the transport has connected, or when a command
was lost — the bus only makes dispatch fast (docs/design-rules.md §4.2). A command that arrives
for a task a pull already claimed meets a RUNNING task and is acked as a no-claim.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import Any

import trio

from actors.core.command_message import Command
from actors.core.dispatch import NoClaim, marks_command_seen
from actors.core.errors import CommandDecodeError, TransientDatabaseError
from actors.core.log_context import bind_context, task_fields
from actors.core.ports.storage import ExportStorage
from actors.core.ports.store import ExecutionStore
from actors.core.ports.transport import CommandTransport, Delivery
from actors.pipeline.attempt import RunContext
from actors.plumbing.config import Settings
from actors.plumbing.metrics import Metrics
from actors.plumbing.wakeup import ClaimRounds
from actors.supervised.claim_gate import ClaimGate
from actors.supervised.execution import Pipeline, TaskExecutor
from actors.supervised.local_claims import LocalClaims

log = logging.getLogger(__name__)


class ConsumerSlot:
    """One of ``FILE_EXPORT_CONSUMER_CONCURRENCY`` slots.

    ``store``, ``storage``, ``settings``, ``metrics``, ``pipeline`` and ``rand`` also build
    the slot's ``TaskExecutor`` (``actors.supervised.execution``, where they are described).

    Args:
        stopping: set when the process stops taking commands (SIGTERM, §14).
        local: what this process's slots hold, shared by all of them and the reconciler
            (a slot given none keeps its own, which is enough for a single slot).
        gate: the claim gate shared by all slots of this instance (fair share); a slot
            built without one gets its own, which applies the rules without the shared
            lock (tests of a single slot).
        rounds: the instance's claim rounds, which wake the slot while idle to pull due
            tasks from the database; a slot built without them pulls only after a
            delivery.
    """

    def __init__(
        self,
        name: str,
        store: ExecutionStore,
        transport: CommandTransport,
        storage: ExportStorage,
        settings: Settings,
        metrics: Metrics,
        pipeline: Pipeline,
        stopping: trio.Event,
        rand: Callable[[], float] = random.random,
        local: LocalClaims | None = None,
        gate: ClaimGate | None = None,
        rounds: ClaimRounds | None = None,
    ) -> None:
        self.name = name
        self.transport = transport
        self.metrics = metrics
        self.stopping = stopping
        self.gate = gate or ClaimGate(store, settings)
        self.local = local if local is not None else LocalClaims()
        self.rounds = rounds if rounds is not None else ClaimRounds()
        self.store = store
        self.executor = TaskExecutor(
            store, storage, settings, metrics, pipeline, self.local, rand=rand
        )

    @property
    def current(self) -> RunContext | None:
        """The run this slot executes now, if any (the runtime aborts it at shutdown)."""
        return self.executor.current

    async def run(self) -> None:
        """Take deliveries, and pull due tasks in each claim round, until the process
        starts stopping."""
        while not self.stopping.is_set():
            delivery: Delivery | None = None
            round_number: int | None = None
            with trio.CancelScope() as receive_scope:
                self._receive_scope = receive_scope
                if self.stopping.is_set():  # stop arrived between the loop test and here
                    receive_scope.cancel()
                delivery, round_number = await self._delivery_or_round()
            if delivery is not None:
                await self.handle(delivery)
                await self.run_pulled()
            elif round_number is not None:
                await self.run_pulled(round_number)
            else:
                return  # stop requested while idle

    async def _delivery_or_round(self) -> tuple[Delivery | None, int | None]:
        """Wait for whichever comes first: a delivery or a claim round. Both may come at
        once; a delivery taken is never dropped (a cancelled ``receive`` takes nothing)."""
        got: list[Any] = [None, None]
        async with trio.open_nursery() as race:

            async def receive() -> None:
                got[0] = await self.transport.receive()
                race.cancel_scope.cancel()

            async def next_round() -> None:
                got[1] = await self.rounds.wait()
                race.cancel_scope.cancel()

            race.start_soon(receive)
            race.start_soon(next_round)
        return got[0], got[1]

    async def run_pulled(self, round_number: int | None = None) -> None:
        """While this slot is free, claim and run the fairest due task the gate allows.

        Args:
            round_number: the claim round that woke this idle slot; ``None`` when the
                slot has just become free (``ClaimGate.claim_next``).

        A database error ends the pulling (logged); the next round, command or freed slot
        tries again."""
        while not self.stopping.is_set():
            try:
                task = await self.gate.claim_next(self.local, round_number)
            except TransientDatabaseError as exc:
                log.warning("%s: claiming the next due task failed (%s)", self.name, exc)
                return
            except Exception:
                log.exception("%s: claiming the next due task failed", self.name)
                return
            if task is None:
                return
            round_number = None  # a slot just freed always looks again
            log.info(
                "task claimed from the database",
                extra=task_fields(task.id, task.dispatch_version, slot=self.name),
            )
            try:
                await self.executor.execute(task)
            finally:
                self.local.release(task.id)

    def stop_receiving(self) -> None:
        """Stop waiting for new commands; a running export continues (§14)."""
        scope = getattr(self, "_receive_scope", None)
        if scope is not None:
            scope.cancel()

    async def handle(self, delivery: Delivery) -> None:
        """Decode, claim, ack, then execute a claimed task (run and settle it)."""
        try:
            command = Command.from_json(delivery.body)
        except CommandDecodeError as exc:
            log.error(
                "undecodable command; rejected (it ends in the dead-letter queue)",
                extra={
                    "messageId": delivery.message_id,
                    "reconsumeTimes": delivery.reconsume_times,
                    "error": str(exc),
                },
            )
            await delivery.reject()  # the only unacked path: ends in the DLQ (§6.4)
            return
        with bind_context(
            eventId=command.event_id,
            taskId=str(command.task_id),
            dispatchVersion=command.dispatch_version,
            exportType=command.export_type,
            traceId=command.trace_id or None,
        ):
            await self._handle_command(command, delivery)

    async def _handle_command(self, command: Command, delivery: Delivery) -> None:
        if not self.local.take(command.task_id):
            # Another slot of this process is claiming or running this task: a duplicate.
            await delivery.ack()
            self.metrics.consumer_no_claim.labels(NoClaim.RUNNING_ELSEWHERE.value).inc()
            log.info(
                "task already held by another slot",
                extra=task_fields(command.task_id, command.dispatch_version),
            )
            return
        try:
            await self._claim_and_run(command, delivery)
        finally:
            self.local.release(command.task_id)

    async def _claim_and_run(self, command: Command, delivery: Delivery) -> None:
        try:
            claim = await self.gate.claim_commanded(command)
        except Exception as exc:
            # Not a poison message: never let it reach the DLQ. Ack; if the task stays
            # PENDING the reconciler re-sends the same version (§8.5-1 case B).
            if isinstance(exc, TransientDatabaseError):
                log.warning(
                    "claim failed; acking, the reconciler will redispatch",
                    extra=task_fields(command.task_id, command.dispatch_version, error=str(exc)),
                )
            else:
                log.exception(
                    "claim failed; acking, the reconciler will redispatch",
                    extra=task_fields(command.task_id, command.dispatch_version),
                )
            await delivery.ack()
            return
        await delivery.ack()  # ack early: right after the claim committed (§8.1)
        if claim.task is None:
            assert claim.no_claim is not None
            self.metrics.consumer_no_claim.labels(claim.no_claim.value).inc()
            level = logging.WARNING if claim.no_claim == "task_missing" else logging.INFO
            log.log(
                level,
                "task not claimed",
                extra=task_fields(
                    command.task_id, command.dispatch_version, reason=claim.no_claim.value
                ),
            )
            if marks_command_seen(claim.no_claim):
                await self._mark_seen(command)
            return
        await self.executor.execute(claim.task, command.trace_id)

    async def _mark_seen(self, command: Command) -> None:
        """Mark an acked command seen (its task waits for a slot); a failure is logged,
        never raised: the command then looks lost and may be re-sent, a harmless
        duplicate (§8.5-1)."""
        try:
            await self.store.mark_command_seen(command.task_id, command.dispatch_version)
        except TransientDatabaseError as exc:
            log.warning(
                "could not mark the command seen; the reconciler may send it again",
                extra=task_fields(command.task_id, command.dispatch_version, error=str(exc)),
            )
        except Exception:
            log.exception(
                "could not mark the command seen; the reconciler may send it again",
                extra=task_fields(command.task_id, command.dispatch_version),
            )
