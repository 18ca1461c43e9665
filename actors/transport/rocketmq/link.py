"""``TransportLink``: keeps the RocketMQ transport connected; never a start-up dependency.

The message bus only makes dispatch fast; the database is the truth (docs/design-rules.md §4.2).
So a NameServer that cannot be reached, a broker that is down or a topic that does not
exist yet never stops the service: the API, the download center, the publisher's outbox
and the consumer slots (which claim due tasks from the database) all run without it. This
actor, supervised beside the others, does the rest:

* **Connect.** Ask the NameServer for the routes of the command topic and of
  ``%DLQ%<worker group>``, decide with
  :func:`actors.core.rocketmq.topic_check.decide_transport_start`,
  and start the native clients once the command topic is routed read-write. A failed
  check or start is retried with back-off (1 s doubling up to
  ``FILE_EXPORT_TRANSPORT_CHECK_SECONDS``).
* **Watch.** While up, re-check the routes every ``FILE_EXPORT_TRANSPORT_CHECK_SECONDS``:
  a broker that went away loses its route at the NameServer, and a NameServer that went
  away answers nothing. The native clients reconnect by themselves; this actor only
  reports what it sees.
* **Report.** One WARNING when the transport goes down (with the reason, and one more if
  the reason changes), one INFO when it is back, never a line per attempt; the
  ``export_transport_up`` gauge and the transport component of ``/healthz/details``
  follow it (a worker consumer left off for want of its DLQ topic is noted there too,
  and started by the next check that finds the topic routed). While it is down the
  publisher holds its due rows instead of failing one send after another (their age shows
  in ``export_outbox_oldest_age_seconds``); when it is back the publisher is woken at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import trio

from actors.core.backoff import LoopBackoff
from actors.core.errors import TransportStartError
from actors.core.health import Component, HealthBoard
from actors.core.rocketmq.topic_check import decide_transport_start
from actors.transport.rocketmq.routes import TopicRouteError, fetch_topic_access
from actors.transport.rocketmq.transport import RocketMQTransport

log = logging.getLogger(__name__)

#: First delay after a failed check, seconds (doubling up to the check period).
FIRST_RETRY_SECONDS = 1.0


class TransportLink:
    """Connects and watches one ``RocketMQTransport`` (see the module docstring).

    Args:
        transport: the transport, built and not started.
        name_server: ``ROCKETMQ_NAME_SERVER``.
        consumer_enabled: ``FILE_EXPORT_CONSUMER_ENABLED`` (the worker consumer starts only
            if the dead-letter topic is routed read-write too).
        health: where the transport's health is reported.
        set_gauge: sets ``export_transport_up`` (1 up, 0 down).
        on_up: called each time the transport comes up (wakes the publisher).
        check_seconds: the period of checks while up, and the cap of the back-off while
            down, seconds.
    """

    def __init__(
        self,
        transport: RocketMQTransport,
        *,
        name_server: str,
        consumer_enabled: bool,
        health: HealthBoard,
        set_gauge: Callable[[int], None],
        on_up: Callable[[], None],
        check_seconds: float,
    ) -> None:
        self.transport = transport
        self.name_server = name_server
        self.consumer_enabled = consumer_enabled
        self.health = health
        self.set_gauge = set_gauge
        self.on_up = on_up
        self.check_seconds = check_seconds
        self.backoff = LoopBackoff(min(FIRST_RETRY_SECONDS, check_seconds), check_seconds)
        self._reported: bool | None = None  # None: nothing reported yet
        self._problem: str | None = None  # the reason last reported
        # down until the first check says otherwise
        health.report(Component.TRANSPORT, False, "not connected yet")
        set_gauge(0)
        self._told: set[str] = set()  # start-time warnings already logged
        self.checks = 0

    @property
    def up(self) -> bool:
        """Whether the last check found the transport usable."""
        return bool(self._reported)

    async def run(self) -> None:
        """Check forever: every ``check_seconds`` while up, with back-off while down."""
        failures = 0
        while True:
            problem = await self.check_once()
            if problem is None:
                failures = 0
                await trio.sleep(self.check_seconds)
            else:
                failures += 1
                await trio.sleep(self.backoff.delay(failures))

    async def check_once(self) -> str | None:
        """One check: the routes, then the native clients if not yet started.

        Returns:
            Why the transport is down, or ``None`` when it is up.
        """
        t = self.transport
        note = ""
        try:
            command = await fetch_topic_access(self.name_server, t.command_topic)
            dead_letter = await fetch_topic_access(self.name_server, t.dead_letter_topic)
        except TopicRouteError as exc:
            problem: str | None = str(exc)
        else:
            decision = decide_transport_start(command, dead_letter, self.consumer_enabled)
            problem = decision.refusal
            note = decision.consumer_refusal or ""
            if problem is None:
                self._tell_once(decision.consumer_refusal, logging.ERROR)
                for warning in decision.warnings:
                    self._tell_once(warning, logging.WARNING)
                problem = await self._start(decision.consume_commands)
        self._report(problem, note)
        self.checks += 1  # after the report: a reader seeing the count sees its result
        return problem

    async def _start(self, consume_commands: bool) -> str | None:
        """Start the native clients, or the worker consumer a start left off (its
        dead-letter topic is routed now); why that failed, or ``None``."""
        t = self.transport
        try:
            if not t.started:
                await t.start(consume_commands=consume_commands)
            elif consume_commands and not t.consume_commands:
                await t.start_command_consumer()
                log.info(
                    "the dead-letter topic %s is routed now: the worker consumer started",
                    t.dead_letter_topic,
                )
        except TransportStartError as exc:
            return f"the RocketMQ clients could not start: {exc}"
        return None

    def _tell_once(self, message: str | None, level: int) -> None:
        if message and message not in self._told:
            self._told.add(message)
            log.log(level, "%s", message)

    def _report(self, problem: str | None, note: str = "") -> None:
        up = problem is None
        self.health.report(Component.TRANSPORT, up, problem or note)
        self.set_gauge(1 if up else 0)
        if up == self._reported:
            if not up and problem != self._problem:
                # still down, for another reason (say the NameServer stopped after the
                # broker): one line per reason, never one per check
                log.warning("RocketMQ transport still down, now: %s", problem)
            self._problem = problem
            return
        first = self._reported is None
        self._reported = up
        self._problem = problem
        if up:
            if not first:
                log.info("RocketMQ transport is back: commands are sent and received again")
            self.on_up()
        else:
            log.warning(
                "RocketMQ transport is down (%s); tasks keep running from the database,"
                " commands wait in the outbox; checking again with back-off",
                problem,
            )
