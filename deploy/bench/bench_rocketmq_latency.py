"""Benchmark of the RocketMQ transport alone: publish→receive latency. Figures, no pass/fail.

Opens the service's own transport (``actors.transport.rocketmq``, the Remoting client the
service uses) against a running broker, sends one warm-up command, then N commands one
after another, each sent only once the previous one was received and acked, and prints
the latency of each round (the send call's round trip to the broker included) as median,
p90, min and max in milliseconds. Deliveries of messages this run did not send (another
developer's service on the same dev broker) are acked and skipped.

It needs a running NameServer and broker with the topic prefix provisioned:
``deploy/rocketmq/broker.sh start`` (or ``deploy/dev services start``) provisions the
prefix ``test-``, the default here.

Usage::

    .venv/bin/python deploy/bench/bench_rocketmq_latency.py                  # 20 messages
    .venv/bin/python deploy/bench/bench_rocketmq_latency.py --messages 200 \\
        --name-server 127.0.0.1:9876 --prefix test-
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actors.core.command_message import COMMAND_TAG, Command, message_key  # noqa: E402
from actors.core.ports.transport import OutgoingMessage  # noqa: E402
from actors.plumbing.config_loading import load_settings  # noqa: E402
from actors.transport.rocketmq import (  # noqa: E402
    RocketMQDelivery,
    RocketMQTransport,
    open_rocketmq_transport,
)

#: bound for one delivery to arrive, seconds (the first includes a consumer rebalance)
ARRIVAL_TIMEOUT = 30.0


def command(transport: RocketMQTransport, task_id: int = 190000000000000001) -> OutgoingMessage:
    """A command as the service builds it (``Command``: body and locating properties),
    with a fresh eventId, on the command topic."""
    cmd = Command.new(task_id, "CUSTOMER_LIST", 1, "2026-08-03T18:00:00+08:00", rand=os.urandom)
    return OutgoingMessage(
        transport.command_topic, COMMAND_TAG, message_key(task_id), cmd.to_json(), cmd.properties()
    )


async def received(transport: RocketMQTransport, event_id: str) -> RocketMQDelivery:
    """The delivery of ``event_id``; any other delivery is acked and skipped."""
    with trio.fail_after(ARRIVAL_TIMEOUT):
        while True:
            delivery = await transport.receive()
            if delivery.properties.get("eventId") == event_id:
                return delivery
            await delivery.ack()


async def measure(name_server: str, prefix: str, messages: int) -> list[float]:
    """Seconds from each send call to its delivery, ``messages`` rounds after a warm-up."""
    with tempfile.TemporaryDirectory(prefix="bench-rocketmq-") as data_dir:
        settings = load_settings(
            data_dir=Path(data_dir),
            transport="rocketmq",
            mq_topic_prefix=prefix,
            rocketmq_name_server=name_server,
            consumer_enabled=True,
            consumer_concurrency=2,
            instance_id="bench-rocketmq",
        )
        async with open_rocketmq_transport(settings) as transport:
            warm = command(transport)
            await transport.send(warm)
            await (await received(transport, warm.properties["eventId"])).ack()
            latencies = []
            for _ in range(messages):
                message = command(transport)
                started = trio.current_time()
                await transport.send(message)
                delivery = await received(transport, message.properties["eventId"])
                latencies.append(trio.current_time() - started)
                await delivery.ack()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=20, help="measured rounds (20)")
    parser.add_argument(
        "--name-server",
        default=f"127.0.0.1:{os.environ.get('ROCKETMQ_NAMESRV_PORT', '9876')}",
        help="NameServer host:port (127.0.0.1:$ROCKETMQ_NAMESRV_PORT, default 9876)",
    )
    parser.add_argument("--prefix", default="test-", help="provisioned MQ_TOPIC_PREFIX (test-)")
    args = parser.parse_args()
    if args.messages < 1:
        parser.error("--messages must be at least 1")
    latencies_ms = sorted(
        s * 1000 for s in trio.run(measure, args.name_server, args.prefix, args.messages)
    )
    p90 = latencies_ms[min(len(latencies_ms) - 1, int(len(latencies_ms) * 0.9))]
    print(
        f"publish→receive latency over {len(latencies_ms)} sequential messages "
        f"(send round trip included; {args.name_server}, prefix {args.prefix!r}): "
        f"median {statistics.median(latencies_ms):.1f} ms, p90 {p90:.1f} ms, "
        f"min {latencies_ms[0]:.1f} ms, max {latencies_ms[-1]:.1f} ms"
    )


if __name__ == "__main__":
    main()
