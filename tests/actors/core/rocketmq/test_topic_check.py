"""The RocketMQ start-up decision (actors/core/rocketmq/topic_check.py): the command topic must be
read-write or the transport does not start; a missing or not read-write dead-letter topic
keeps the consumer off, naming the topic, and lets the publisher run."""

from __future__ import annotations

from typing import Any

import pytest

from actors.core.rocketmq.topic_check import (
    TopicAccess,
    decide_transport_start,
    parse_name_server,
    topic_access,
)

CMD = "p-file-export-command-v1"
DLQ = "%DLQ%p-file-export-worker-v1"


def route(perm: int = 6, read: int = 4, write: int = 4, master: bool = True) -> dict[str, Any]:
    addrs = {"0": "127.0.0.1:10911"} if master else {"1": "127.0.0.1:10921"}
    return {
        "brokerDatas": [{"brokerName": "b", "brokerAddrs": addrs, "cluster": "c"}],
        "queueDatas": [
            {"brokerName": "b", "perm": perm, "readQueueNums": read, "writeQueueNums": write}
        ],
    }


@pytest.mark.parametrize(
    ("answer", "exists", "readable", "writable"),
    [
        (None, False, False, False),  # "topic not exist"
        (route(), True, True, True),
        (route(perm=2), True, False, True),  # a DLQ the broker created by itself
        (route(perm=4), True, True, False),
        (route(perm=7), True, True, True),  # with the inherit bit
        (route(perm=6, write=0), True, True, False),
        (route(perm=6, read=0), True, False, True),
        (route(master=False), True, False, False),  # only a slave left
        ({"brokerDatas": [], "queueDatas": []}, True, False, False),
    ],
)
def test_topic_access_reads_the_permission_bits_of_master_queues(
    answer: dict[str, Any] | None, exists: bool, readable: bool, writable: bool
) -> None:
    assert topic_access(CMD, answer) == TopicAccess(CMD, exists, readable, writable)


RW = True, True
MISSING = None


def access(topic: str, state: tuple[bool, bool] | None) -> TopicAccess:
    if state is None:
        return TopicAccess(topic, exists=False)
    return TopicAccess(topic, True, *state)


@pytest.mark.parametrize(
    ("command", "dlq", "consumer", "starts", "consumes", "consumer_refused", "warned"),
    [
        (RW, RW, True, True, True, False, False),
        (RW, RW, False, True, False, False, False),
        # the DLQ is missing: the consumer stays off, the publisher runs
        (RW, MISSING, True, True, False, True, False),
        (RW, (False, True), True, True, False, True, False),  # write-only DLQ
        (RW, MISSING, False, True, False, False, True),
        # the command topic is missing or not read-write: no transport at all
        (MISSING, RW, True, False, False, False, False),
        (MISSING, MISSING, False, False, False, False, False),
        ((True, False), RW, False, False, False, False, False),
        ((False, True), RW, True, False, False, False, False),
    ],
)
def test_transport_start_decision(
    command: tuple[bool, bool] | None,
    dlq: tuple[bool, bool] | None,
    consumer: bool,
    starts: bool,
    consumes: bool,
    consumer_refused: bool,
    warned: bool,
) -> None:
    d = decide_transport_start(access(CMD, command), access(DLQ, dlq), consumer)
    assert (d.refusal is None, d.consume_commands) == (starts, consumes)
    assert (d.consumer_refusal is not None, bool(d.warnings)) == (consumer_refused, warned)
    if not starts:
        assert d.refusal is not None and CMD in d.refusal and "init-topics.sh" in d.refusal
    if consumer_refused:
        assert d.consumer_refusal is not None and DLQ in d.consumer_refusal
        assert "publisher" in d.consumer_refusal


def test_messages_say_what_is_wrong_with_the_topic() -> None:
    missing = access(DLQ, MISSING).describe()
    assert (
        f"no route for topic {DLQ}" in missing
        and "broker" in missing
        and "never created" in missing
    )
    assert "(writable)" in access(DLQ, (False, True)).describe()
    assert access(DLQ, RW).describe() == ""


@pytest.mark.parametrize(
    ("value", "pairs"),
    [
        ("127.0.0.1:9876", (("127.0.0.1", 9876),)),
        ("ns-a:9876;ns-b:9877", (("ns-a", 9876), ("ns-b", 9877))),
        (" ns-a:9876 ; ", (("ns-a", 9876),)),
        (
            "namesrv-0.namesrv.rocketmq.svc.cluster.local:9876",
            (("namesrv-0.namesrv.rocketmq.svc.cluster.local", 9876),),
        ),
    ],
)
def test_a_well_formed_name_server_setting_is_read(
    value: str, pairs: tuple[tuple[str, int], ...]
) -> None:
    assert parse_name_server(value) == pairs


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("", "no host:port"),
        (";", "no host:port"),
        ("namesrv", "'namesrv' is not host:port"),
        (":9876", "':9876' is not host:port"),
        ("namesrv:port", "'namesrv:port' is not host:port"),
        ("namesrv:0", "port 0 is out of range"),
        ("namesrv:65536", "port 65536 is out of range"),
        ("namesrv:٩٨٧٦", "is not host:port"),
        ("name srv:9876", "'name srv' is not a host name"),
        ("http://127.0.0.1:9876", "no scheme"),
        ("127.0.0.1:9876,127.0.0.1:9877", "separate several NameServers with ';'"),
        ("[::1]:9876", "is not a host name or IPv4 address"),
        ("-ns:9876", "is not a host name"),
        ("nämesrv:9876", "is not a host name"),
    ],
)
def test_a_malformed_name_server_setting_is_refused_naming_the_entry(value: str, says: str) -> None:
    """Simply wrong: a configuration error at start (unlike a NameServer that does not
    answer, which only keeps the transport down)."""
    with pytest.raises(ValueError, match=says):
        parse_name_server(value)
