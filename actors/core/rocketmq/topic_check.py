"""What the RocketMQ transport may start, given what the NameServer says of its topics.

The transport's link (``actors.transport.rocketmq.link``) asks the NameServer for the
route of the command topic and of the dead-letter topic ``%DLQ%<worker group>``
(``actors.transport.rocketmq.routes``) at start and then periodically, turns each answer
into a ``TopicAccess`` (``topic_access``) and lets ``decide_transport_start`` say what may
run. None of it stops the service: the bus only makes dispatch fast.

- the command topic missing, or not read-write: the RocketMQ transport is down (the
  publisher could send nothing, the consumer receive nothing), naming the topic; the link
  checks again with back-off, and tasks run from the database meanwhile;
- the dead-letter topic missing, or not read-write, on an instance whose consumer is
  switched on: the consumer stays off, with a message naming the topic. A poison command
  that cannot be moved to the DLQ is redelivered, and once the broker gives up on it, the
  reconciler sends the same command again every ``sentStaleSeconds``: the loop quarantine
  exists to stop. The publisher and the API still run: they only write the command topic,
  and the commands they send wait in the broker for a consumer (on this instance after a
  restart, or on another one) — refusing the whole service would also stop task creation
  for a fault that only concerns poison commands.
- the DLQ topic is read-write only (perm 6) when ``deploy/rocketmq/init-topics.sh``
  created it: one the broker creates by itself is write-only and the DLQ handler could not
  read it.

No IO here: the caller fetches the routes and carries the decision out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: RocketMQ's permission bits (``PermName``): a queue that may be read, written.
PERM_READ = 4
PERM_WRITE = 2

#: Where the operator creates the topics (the same script the tests run).
INIT_TOPICS = "deploy/rocketmq/init-topics.sh"


@dataclass(frozen=True, slots=True)
class TopicAccess:
    """What a topic's route allows.

    Attributes:
        topic: the topic name.
        exists: the NameServer has a route for it.
        readable: some broker with a master serves it with read queues and the read bit.
        writable: some broker with a master serves it with write queues and the write bit.
    """

    topic: str
    exists: bool
    readable: bool = False
    writable: bool = False

    @property
    def read_write(self) -> bool:
        """Both readable and writable."""
        return self.readable and self.writable

    def describe(self) -> str:
        """Why the topic is not usable as read-write, for a message; "" when it is."""
        if not self.exists:
            return (
                f"the NameServer has no route for topic {self.topic}: the broker serving"
                " it is down (or not registered), or the topic was never created"
            )
        if self.read_write:
            return ""
        can = [w for w, ok in (("readable", self.readable), ("writable", self.writable)) if ok]
        return (
            f"topic {self.topic} is not read-write"
            f" ({' and '.join(can) if can else 'neither readable nor writable'})"
        )


def topic_access(topic: str, route: Mapping[str, Any] | None) -> TopicAccess:
    """Read a NameServer route (``TopicRouteData`` as JSON) into a ``TopicAccess``.

    Args:
        topic: the topic asked for.
        route: the route's ``queueDatas`` and ``brokerDatas``; ``None`` when the NameServer
            answered "topic not exist" (response code 17).

    Returns:
        Readable (writable) when some queue entry has the read (write) bit and read (write)
        queues, on a broker name that has a master address (broker id 0): only a master
        takes writes, and a route without one is a broker that went away.
    """
    if route is None:
        return TopicAccess(topic, exists=False)
    masters = {
        b.get("brokerName")
        for b in route.get("brokerDatas") or ()
        if (b.get("brokerAddrs") or {}).get("0") or (b.get("brokerAddrs") or {}).get(0)
    }
    readable = writable = False
    for q in route.get("queueDatas") or ():
        if q.get("brokerName") not in masters:
            continue
        perm = int(q.get("perm", 0))
        readable |= bool(perm & PERM_READ) and int(q.get("readQueueNums", 0)) > 0
        writable |= bool(perm & PERM_WRITE) and int(q.get("writeQueueNums", 0)) > 0
    return TopicAccess(topic, exists=True, readable=readable, writable=writable)


@dataclass(frozen=True, slots=True)
class TransportStart:
    """The decision of ``decide_transport_start``.

    Attributes:
        refusal: why the RocketMQ transport cannot run now (it stays down, re-checked);
            ``None`` when it may.
        consume_commands: start the worker consumer (and the consumer slots).
        consumer_refusal: why the consumer stays off although it is switched on, naming
            the topic; ``None`` otherwise.
        warnings: what is wrong but stops nothing on this instance.
    """

    refusal: str | None
    consume_commands: bool
    consumer_refusal: str | None = None
    warnings: tuple[str, ...] = ()


def decide_transport_start(
    command: TopicAccess, dead_letter: TopicAccess, consumer_enabled: bool
) -> TransportStart:
    """Decide what the RocketMQ transport may start (rules in the module docstring).

    Args:
        command: the command topic's access.
        dead_letter: the access of ``%DLQ%<worker group>``.
        consumer_enabled: ``FILE_EXPORT_CONSUMER_ENABLED``.

    Returns:
        The decision; every message names the topic and says how to fix it.
    """
    if not command.read_write:
        return TransportStart(
            refusal=(
                f"{command.describe()}: no command can be sent or received. Check that"
                " the broker runs (mqadmin clusterList); if it does, create the topics"
                f" with {INIT_TOPICS} (MQ_TOPIC_PREFIX and ROCKETMQ_NAME_SERVER as this"
                " service has them). The service checks again by itself"
            ),
            consume_commands=False,
        )
    if dead_letter.read_write:
        return TransportStart(refusal=None, consume_commands=consumer_enabled)
    problem = dead_letter.describe()
    if not consumer_enabled:
        return TransportStart(
            refusal=None,
            consume_commands=False,
            warnings=(
                f"{problem}: a consumer switched on later would stay off; create it with"
                f" {INIT_TOPICS}",
            ),
        )
    return TransportStart(
        refusal=None,
        consume_commands=False,
        consumer_refusal=(
            f"{problem}: the consumer stays off (FILE_EXPORT_CONSUMER_ENABLED is ignored),"
            " because a poison command could not be dead-lettered and would be sent again"
            " and again; the publisher and the API run, and the slots claim due tasks from"
            f" the database. Create the topic with {INIT_TOPICS}: the consumer then starts"
            " by itself"
        ),
    )


#: A host name (RFC 1123 labels) or a dotted IPv4 address; what the RocketMQ client takes.
_HOST = re.compile(
    r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*"
)


def parse_name_server(value: str) -> tuple[tuple[str, int], ...]:
    """Check ``ROCKETMQ_NAME_SERVER``: ``host:port``, several separated by ``;``.

    A value that is simply wrong refuses the start (a configuration error); a NameServer
    that does not answer does not (the transport stays down and is checked again).

    Args:
        value: the setting.

    Returns:
        The ``(host, port)`` pairs, in order.

    Raises:
        ValueError: empty; an entry with a scheme (``http://``), a comma (several are
            separated by ``;``), a host that is not a host name or IPv4 address (RFC 1123
            labels; the bundled client takes no IPv6 literal), or a port that is not a
            number in 1..65535. The message names the entry.
    """
    pairs = []
    for entry in (e.strip() for e in value.split(";")):
        if not entry:
            continue
        if "://" in entry:
            raise ValueError(f"{entry!r}: no scheme, just host:port")
        if "," in entry:
            raise ValueError(f"{entry!r}: separate several NameServers with ';', not ','")
        host, sep, port = entry.rpartition(":")
        if not sep or not host or not (port.isascii() and port.isdigit()):
            raise ValueError(f"{entry!r} is not host:port")
        if not 1 <= int(port) <= 65535:
            raise ValueError(f"{entry!r}: port {port} is out of range")
        if not host.isascii() or not _HOST.fullmatch(host):
            raise ValueError(f"{entry!r}: {host!r} is not a host name or IPv4 address")
        pairs.append((host, int(port)))
    if not pairs:
        raise ValueError("no host:port given")
    return tuple(pairs)
