"""The RocketMQ start-up topic check (actors/transport/rocketmq/routes.py with
actors/core/rocketmq/topic_check.py): the Remoting codec, then against the real broker — the
provisioned topics are read-write, a topic that does not exist has no route, a service
whose command topic is missing (or whose NameServer does not answer) starts anyway and runs
tasks from the database, and one whose dead-letter topic is missing keeps its worker
consumer off.

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

import httpx
import pytest
import trio

from actors.core.errors import ConfigError
from actors.core.models import OutboxStatus
from actors.runtime import Runtime, serve
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
from tests.helpers import API, client_for, make_settings, running_service, wait_for_status
from tests.own_mariadb import free_port
from tests.servers import Broker

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


async def transport_component(rt: Runtime, c: httpx.AsyncClient, status: str) -> dict[str, str]:
    """Wait until the link has checked once and ``/healthz/details`` reports the transport
    ``status``; its entry."""
    assert rt.link is not None
    with trio.fail_after(30):
        while rt.link.checks < 1:
            await trio.sleep(0.05)
        while True:
            answer = await c.get("/healthz/details")
            assert answer.status_code == 200, answer.text
            component: dict[str, str] = answer.json()["components"]["transport"]
            if component["status"] == status:
                return component
            await trio.sleep(0.05)


@pytest.mark.rocketmq
async def test_service_without_its_command_topic_starts_and_runs_tasks_from_the_database(
    rocketmq_broker: Broker, tmp_path: Path
) -> None:
    """A topic not created yet never stops the service (the bus is only a fast path):
    it serves, reports the transport down naming the topic, and runs a created task by
    claiming it from the database; the task's command is never sent."""
    prefix = unique_prefix()
    settings = rmq_settings(rocketmq_broker, tmp_path, prefix, transport_check_seconds=0.5)
    async with running_service(settings) as rt, client_for(rt) as c:
        down = await transport_component(rt, c, "down")
        assert f"no route for topic {prefix}file-export-command-v1" in down["detail"]
        assert (await c.get("/healthz")).status_code == 200
        assert "export_transport_up 0.0" in (await c.get("/metrics")).text
        body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 10}}
        created = (await c.post(API, json=body)).json()
        assert created["code"] == "200", created
        await wait_for_status(c, created["data"]["id"], "SUCCEEDED")
        (row,) = await rt.store.list_outbox(int(created["data"]["id"]))
        assert row.status == OutboxStatus.SENT and row.attempt_count == 0
        assert row.last_error is not None and "claimed from the database" in row.last_error


async def test_service_starts_and_exports_while_no_name_server_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """ROCKETMQ_NAME_SERVER unreachable at start and after: the service starts, answers
    /healthz 200, reports the transport down (gauge 0, /healthz/details) with one WARNING
    however many checks fail, and runs a created task from the database."""
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    settings = make_settings(
        tmp_path,
        transport="rocketmq",
        mq_topic_prefix=unique_prefix(),
        rocketmq_name_server=address,
        publisher_enabled=True,
        consumer_enabled=True,
        reconciler_enabled=True,
        transport_check_seconds=0.2,
    )
    with caplog.at_level(logging.INFO, logger="actors.transport.rocketmq.link"):
        async with running_service(settings) as rt, client_for(rt) as c:
            down = await transport_component(rt, c, "down")
            assert f"ROCKETMQ_NAME_SERVER ({address})" in down["detail"]
            assert (await c.get("/healthz")).json() == {"status": "ok"}
            assert "export_transport_up 0.0" in (await c.get("/metrics")).text
            body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 10}}
            created = (await c.post(API, json=body)).json()
            assert created["code"] == "200", created
            await wait_for_status(c, created["data"]["id"], "SUCCEEDED")
            assert rt.link is not None
            with trio.fail_after(30):
                while rt.link.checks < 5:  # several failed checks, with back-off
                    await trio.sleep(0.05)
    warnings = [r for r in caplog.records if r.name == "actors.transport.rocketmq.link"]
    assert [r.levelno for r in warnings] == [logging.WARNING], warnings


async def test_a_malformed_name_server_still_refuses_to_start(tmp_path: Path) -> None:
    """A setting that is simply wrong is a configuration error, unlike an outage."""
    settings = make_settings(
        tmp_path, transport="rocketmq", mq_topic_prefix="t-", rocketmq_name_server="namesrv"
    )
    with pytest.raises(ConfigError, match="ROCKETMQ_NAME_SERVER: 'namesrv' is not host:port"):
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
    try:
        await create_topic(rocketmq_broker, topic)
        yield prefix
    finally:
        with trio.CancelScope(shield=True):
            await delete_topic(rocketmq_broker, topic)
            await delete_topic(rocketmq_broker, dead_letter_topic(f"{prefix}file-export-worker-v1"))


async def create_topic(rocketmq_broker: Broker, topic: str) -> None:
    """Create ``topic`` read-write on the broker and wait until the NameServer routes it."""
    created = await remoting_request(
        await broker_address(rocketmq_broker),
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
    with trio.fail_after(30):  # the broker registers the route with the NameServer
        while not (await fetch_topic_access(rocketmq_broker.name_server, topic)).exists:
            await trio.sleep(0.2)


async def delete_topic(rocketmq_broker: Broker, topic: str) -> None:
    """Delete ``topic`` from the broker and the NameServer (no error if it is missing)."""
    await remoting_request(await broker_address(rocketmq_broker), 215, {"topic": topic})
    await remoting_request(rocketmq_broker.name_server, 216, {"topic": topic})


@pytest.mark.rocketmq
async def test_service_without_its_dlq_topic_keeps_the_worker_consumer_off(
    rocketmq_broker: Broker,
    topic_without_dlq: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The worker consumer stays off (a poison command could not be dead-lettered), with
    an ERROR naming the topic and a note on /healthz/details; the transport is up for
    sending, and the slots still run tasks by claiming them from the database. Once the
    topic is created the worker consumer starts by itself, with no restart."""
    dlq = dead_letter_topic(f"{topic_without_dlq}file-export-worker-v1")
    settings = rmq_settings(
        rocketmq_broker, tmp_path, topic_without_dlq, transport_check_seconds=0.5
    )
    with caplog.at_level(logging.ERROR, logger="actors.transport.rocketmq.link"):
        async with running_service(settings) as rt, client_for(rt) as c:
            up = await transport_component(rt, c, "up")
            assert f"no route for topic {dlq}" in up["detail"], up
            assert isinstance(rt.transport, RocketMQTransport)
            assert rt.transport.started and not rt.transport.consume_commands
            refused = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
            assert any(
                f"no route for topic {dlq}" in m and "consumer stays off" in m for m in refused
            ), refused
            body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 10}}
            created = (await c.post(API, json=body)).json()
            assert created["code"] == "200", created
            await wait_for_status(c, created["data"]["id"], "SUCCEEDED")

            await create_topic(rocketmq_broker, dlq)
            with trio.fail_after(30):
                while not rt.transport.consume_commands:
                    await trio.sleep(0.05)
            assert (await transport_component(rt, c, "up"))["detail"] == ""
