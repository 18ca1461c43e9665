"""Topic routes from the NameServer: the start-up check of the RocketMQ transport.

The bundled client library (PyPI ``rocketmq`` 0.4.4) cannot tell whether a topic exists
and may be written: its pull consumer lists only readable queues, and its producer finds
out at the first send. The NameServer can: ``GET_ROUTEINFO_BY_TOPIC`` (request code 105)
answers a topic's route with each queue's permission bits, or "topic not exist" (code 17).
It is the request behind ``mqadmin topicRoute``, which ``deploy/rocketmq/init-topics.sh``
polls until the topics it creates are routed read-write — so the service checks at start
what the provisioning script checked when it ran.

The request goes over RocketMQ's Remoting protocol, one frame each way::

    total length (4 bytes, big endian)  = 4 + header length + body length
    header length (4 bytes)             high byte: 0 = JSON header; low 3 bytes: its length
    header (JSON)                       code, language, version, opaque, flag, extFields
    body                                the route as JSON (the answer only)

``acceptStandardJsonOnly`` asks a 4.9.4+ NameServer for standard JSON; older ones answer in
fastjson's dialect, whose map keys may be bare numbers (``{0:"host:port"}``), so those are
quoted before parsing.
"""

from __future__ import annotations

import itertools
import json
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import trio

from actors.core.errors import TransportStartError
from actors.core.rocketmq.topic_check import TopicAccess, topic_access

#: Remoting request code GET_ROUTEINFO_BY_TOPIC and the answers the check knows.
GET_ROUTEINFO_BY_TOPIC = 105
SUCCESS = 0
TOPIC_NOT_EXIST = 17
#: How long one NameServer may take to connect and answer, seconds.
ROUTE_TIMEOUT_SECONDS = 5.0
#: Larger answers are refused: a route of a few brokers is a few hundred bytes.
MAX_FRAME_BYTES = 4 * 1024 * 1024

_opaque = itertools.count(1)
_BARE_NUMBER_KEY = re.compile(r"([{,])\s*(-?\d+)\s*:")


class TopicRouteError(TransportStartError):
    """No NameServer of ``ROCKETMQ_NAME_SERVER`` answered the route request (unreachable,
    timed out, or an answer that is not a route)."""


@dataclass(frozen=True, slots=True)
class RemotingResponse:
    """One decoded Remoting answer: its code, remark and body."""

    code: int
    remark: str
    body: bytes


def encode_request(code: int, fields: Mapping[str, str], opaque: int) -> bytes:
    """One Remoting request frame with a JSON header and no body."""
    header = json.dumps(
        {
            "code": code,
            "language": "PYTHON",
            "version": 0,
            "opaque": opaque,
            "flag": 0,
            "extFields": dict(fields),
            "serializeTypeCurrentRPC": "JSON",
        }
    ).encode()
    return struct.pack(">II", 4 + len(header), len(header)) + header


def decode_response(frame: bytes) -> RemotingResponse:
    """Decode a frame without its leading total length.

    Raises:
        ValueError: not a JSON-header Remoting frame.
    """
    if len(frame) < 4:
        raise ValueError("truncated Remoting frame")
    (mark,) = struct.unpack(">I", frame[:4])
    serialize, length = mark >> 24, mark & 0xFFFFFF
    if serialize != 0 or 4 + length > len(frame):
        raise ValueError(f"unexpected Remoting header (type {serialize}, length {length})")
    header = json.loads(frame[4 : 4 + length])
    remark = str(header.get("remark") or "")
    return RemotingResponse(int(header["code"]), remark, frame[4 + length :])


def parse_route(body: bytes) -> dict[str, Any]:
    """A ``TopicRouteData`` body as a dict (fastjson's bare number keys quoted first)."""
    text = body.decode("utf-8")
    try:
        route = json.loads(text)
    except json.JSONDecodeError:
        route = json.loads(_BARE_NUMBER_KEY.sub(r'\1"\2":', text))
    if not isinstance(route, dict):
        raise ValueError("a topic route is a JSON object")
    return route


async def remoting_request(
    address: str, code: int, fields: Mapping[str, str], timeout: float = ROUTE_TIMEOUT_SECONDS
) -> RemotingResponse:
    """Send one Remoting request on a new connection and read its answer.

    Args:
        address: ``host:port`` of a NameServer or broker.
        code: the request code.
        fields: the request header's ``extFields`` (strings).
        timeout: for connecting, sending and reading, seconds.

    Raises:
        OSError: cannot connect, or the connection broke.
        trio.TooSlowError: no whole answer within ``timeout``.
        ValueError: the answer is not a Remoting frame with a JSON header.
    """
    host, _, port = address.strip().rpartition(":")
    with trio.fail_after(timeout):
        stream = await trio.open_tcp_stream(host, int(port))
        async with stream:
            await stream.send_all(encode_request(code, fields, next(_opaque)))
            buf = bytearray()
            need = 4
            while len(buf) < need:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    raise ValueError("the NameServer closed the connection mid-answer")
                buf += chunk
                if need == 4 and len(buf) >= 4:
                    (total,) = struct.unpack(">I", buf[:4])
                    if total > MAX_FRAME_BYTES:
                        raise ValueError(f"answer of {total} bytes is too large")
                    need = 4 + total
            return decode_response(bytes(buf[4:need]))


async def fetch_topic_access(
    name_server: str, topic: str, timeout: float = ROUTE_TIMEOUT_SECONDS
) -> TopicAccess:
    """Ask the NameServer(s) for ``topic``'s route.

    Args:
        name_server: ``ROCKETMQ_NAME_SERVER``: ``host:port``, several separated by ``;``;
            the first that answers decides (NameServers of one cluster hold the same
            routes).
        topic: the topic name.
        timeout: per NameServer, seconds.

    Returns:
        What the route allows; ``exists=False`` on "topic not exist".

    Raises:
        TopicRouteError: no NameServer answered with a route or "topic not exist".
    """
    failures = []
    for address in filter(None, (a.strip() for a in name_server.split(";"))):
        try:
            answer = await remoting_request(
                address,
                GET_ROUTEINFO_BY_TOPIC,
                {"topic": topic, "acceptStandardJsonOnly": "true"},
                timeout,
            )
            if answer.code == TOPIC_NOT_EXIST:
                return topic_access(topic, None)
            if answer.code != SUCCESS:
                raise ValueError(f"answer code {answer.code}: {answer.remark}")
            return topic_access(topic, parse_route(answer.body))
        except (OSError, ValueError, KeyError, trio.TooSlowError) as exc:
            reason = "no answer" if isinstance(exc, trio.TooSlowError) else str(exc)
            failures.append(f"{address}: {reason or type(exc).__name__}")
    raise TopicRouteError(
        f"ROCKETMQ_NAME_SERVER ({name_server}): no route answer for topic {topic}"
        f" ({'; '.join(failures) or 'no address'})"
    )
