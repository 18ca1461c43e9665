"""The RocketMQ start-up topic check (actors/transport/rocketmq/routes.py with
actors/core/topic_check.py): the Remoting codec, then against the real broker — the
provisioned topics are read-write, a topic that does not exist has no route, a service
whose command topic is missing refuses to start, and one whose dead-letter topic is missing
runs its publisher but not its consumer.

Missing topics are unique names that never existed; the one topic created here (a command
topic without its DLQ) has a unique name and is deleted again. The shared topics are never
touched."""

from __future__ import annotations

import json
import logging
import struct
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.core.errors import ConfigError
from actors.core.models import OutboxStatus, TaskStatus
from actors.runtime import serve
from actors.transport.rocketmq import RocketMQTransport, dead_letter_topic
from actors.transport.rocketmq.routes import (
    GET_ROUTEINFO_BY_TOPIC,
    SUCCESS,
    TopicRouteError,
    decode_response,
    encode_request,
    fetch_topic_access,
    parse_route,
    remoting_request,
)
from tests.helpers import API, Broker, client_for, make_settings, running_service
from tests.own_mariadb import free_port

# -- the codec ------------------------------------------------------------------------------


def test_request_frame_carries_its_lengths_and_a_json_header() -> None:
    frame = encode_request(GET_ROUTEINFO_BY_TOPIC, {"topic": "t"}, opaque=7)
    total, mark = struct.unpack(">II", frame[:8])
    assert total == len(frame) - 4 and mark >> 24 == 0 and mark == len(frame) - 8
    header = json.loads(frame[8:])
    assert (header["code"], header["opaque"], header["flag"]) == (105, 7, 0)
    assert header["extFields"] == {"topic": "t"}


def test_response_frame_is_decoded_into_code_remark_and_body() -> None:
    header = json.dumps({"code": 17, "remark": "No topic route info", "flag": 1}).encode()
    answer = decode_response(struct.pack(">I", len(header)) + header + b"{}")
    assert (answer.code, answer.remark, answer.body) == (17, "No topic route info", b"{}")
    with pytest.raises(ValueError):
        decode_response(struct.pack(">I", (1 << 24) | 2) + b"..")  # binary header type


def test_route_in_fastjson_dialect_is_parsed() -> None:
    """A NameServer before 4.9.4 writes map keys as bare numbers."""
    body = b'{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911"},"brokerName":"b"}]}'
    assert parse_route(body)["brokerDatas"][0]["brokerAddrs"] == {"0": "10.0.0.1:10911"}


async def test_no_name_server_answering_is_an_error_naming_it() -> None:
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(TopicRouteError, match=f"ROCKETMQ_NAME_SERVER \\({address}\\)"):
        await fetch_topic_access(address, "any-topic", timeout=5)


# -- the real broker ------------------------------------------------------------------------


def unique_prefix() -> str:
    return f"h4chk{uuid.uuid4().hex[:10]}-"


@pytest.mark.rocketmq
async def test_provisioned_topics_are_read_write_and_an_unknown_one_has_no_route(
    rocketmq_broker: Broker,
) -> None:
    worker_group = f"{rocketmq_broker.topic_prefix}file-export-worker-v1"
    for topic in (
        f"{rocketmq_broker.topic_prefix}file-export-command-v1",
        dead_letter_topic(worker_group),
    ):
        access = await fetch_topic_access(rocketmq_broker.name_server, topic)
        assert access.exists and access.read_write, access
    missing = f"{unique_prefix()}file-export-command-v1"
    access = await fetch_topic_access(rocketmq_broker.name_server, missing)
    assert not access.exists and not access.read_write


def rmq_settings(broker: Broker, tmp_path: Path, prefix: str, **overrides: Any) -> Any:
    values: dict[str, Any] = {
        "transport": "rocketmq",
        "mq_topic_prefix": prefix,
        "rocketmq_name_server": broker.name_server,
        "publisher_enabled": True,
        "consumer_enabled": True,
        "consumer_concurrency": 2,
        "publisher_poll_ms": 200,
        "instance_id": f"topic-check-{uuid.uuid4().hex[:6]}",
    }
    values.update(overrides)
    return make_settings(tmp_path, **values)


@pytest.mark.rocketmq
async def test_service_without_its_command_topic_refuses_to_start_naming_it(
    rocketmq_broker: Broker, tmp_path: Path
) -> None:
    prefix = unique_prefix()
    settings = rmq_settings(rocketmq_broker, tmp_path, prefix)
    with pytest.raises(ConfigError, match=f"topic {prefix}file-export-command-v1 does not exist"):
        await serve(settings, install_signal_handlers=False)


async def broker_address(broker: Broker) -> str:
    """The master address of the broker serving the session's command topic."""
    answer = await remoting_request(
        broker.name_server,
        GET_ROUTEINFO_BY_TOPIC,
        {"topic": f"{broker.topic_prefix}file-export-command-v1"},
    )
    assert answer.code == SUCCESS, answer
    address: str = parse_route(answer.body)["brokerDatas"][0]["brokerAddrs"]["0"]
    return address


@pytest.fixture
async def topic_without_dlq(rocketmq_broker: Broker) -> AsyncIterator[str]:
    """A unique prefix whose command topic exists (read-write) and whose DLQ does not;
    the topic is deleted from the broker and the NameServer afterwards."""
    prefix = unique_prefix()
    topic = f"{prefix}file-export-command-v1"
    broker = await broker_address(rocketmq_broker)
    created = await remoting_request(
        broker,
        17,  # UPDATE_AND_CREATE_TOPIC, what mqadmin updateTopic sends
        {
            "topic": topic,
            "defaultTopic": "TBW102",
            "readQueueNums": "1",
            "writeQueueNums": "1",
            "perm": "6",
            "topicFilterType": "SINGLE_TAG",
            "topicSysFlag": "0",
            "order": "false",
        },
    )
    assert created.code == SUCCESS, created
    try:
        with trio.fail_after(30):  # the broker registers the route with the NameServer
            while not (await fetch_topic_access(rocketmq_broker.name_server, topic)).exists:
                await trio.sleep(0.2)
        yield prefix
    finally:
        with trio.CancelScope(shield=True):
            await remoting_request(broker, 215, {"topic": topic})  # DELETE_TOPIC_IN_BROKER
            await remoting_request(rocketmq_broker.name_server, 216, {"topic": topic})


@pytest.mark.rocketmq
async def test_service_without_its_dlq_topic_publishes_but_keeps_the_consumer_off(
    rocketmq_broker: Broker,
    topic_without_dlq: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    dlq = dead_letter_topic(f"{topic_without_dlq}file-export-worker-v1")
    settings = rmq_settings(rocketmq_broker, tmp_path, topic_without_dlq)
    with caplog.at_level(logging.ERROR, logger="actors.runtime"):
        async with running_service(settings) as rt:
            assert isinstance(rt.transport, RocketMQTransport)
            assert rt.slots == [] and not rt.transport.consume_commands
            refused = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
            assert any(
                f"topic {dlq} does not exist" in m and "consumer stays off" in m for m in refused
            ), refused

            async with client_for(rt) as c:
                body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 10}}
                created = (await c.post(API, json=body)).json()
            assert created["code"] == "200", created
            task_id = int(created["data"]["id"])
            with trio.fail_after(30):  # the publisher sends it to the existing command topic
                while (await rt.store.list_outbox(task_id))[0].status != OutboxStatus.SENT:
                    await trio.sleep(0.1)
            task = await rt.store.get_task(task_id)
            assert task is not None and task.status == TaskStatus.PENDING  # no consumer here
