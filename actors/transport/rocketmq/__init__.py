"""The RocketMQ command transport (seed §6, §8.1, §9.4) on the Remoting protocol.

It implements ``actors.core.ports.transport.CommandTransport`` with PyPI ``rocketmq`` 0.4.4, whose
wheel bundles the 2018 C++ client core (``librocketmq.so``). Names follow §6.2 with
``MQ_TOPIC_PREFIX``:

============================  =============================================
topic                         ``${prefix}file-export-command-v1``, tag ``EXPORT_TASK``
producer group                ``${prefix}file-export-publisher-v1``
worker consumer group         ``${prefix}file-export-worker-v1`` (clustering)
dead-letter topic             ``%DLQ%${prefix}file-export-worker-v1``
DLQ handler consumer group    ``${prefix}file-export-dlq-handler-v1``
============================  =============================================

The package, from the library up (the hazards are in docs/rocketmq.md):

* ``native``    the native façade: every call into the client library, all blocking.
* ``delivery``  ``RocketMQDelivery`` and the dead-letter copy of a poison command.
* ``bridge``    the callback↔trio bridge: native consume callbacks hand deliveries to
                trio through unbuffered channels and block until a slot acks or rejects.
* ``names``     the group and topic names from the prefix (the table above).
* ``clients``   ``NativeClients``: one transport's producer and consumers, started and
                shut down within bounds (kept referenced, consumers first, abandoned
                after a timeout).
* ``transport`` ``RocketMQTransport``: start, send (on a worker thread, 3000 ms native
                timeout, below the outbox lease), receive, close.
* ``opening``   ``open_rocketmq_transport``: a started transport for one ``async with``.
* ``routes``    the NameServer's topic routes (what the link checks).
* ``link``      ``TransportLink``: connects the transport in the background and watches
                it; a broker outage never stops the service.

Poison messages are dead-lettered by the application, not the broker: the old core cannot
set ``maxReconsumeTimes`` and does not send ``originTopic`` in its send-back, which broker
5.x's own DLQ branch expects. Observed with broker 5.3.1: once ``retryMaxTimes`` is reached,
``consumerSendMsgBack`` fails with a NullPointerException (``TopicValidator.isSystemTopic``
on the missing topic), the core still advances the offset, and the message is lost, in
neither the retry nor the DLQ topic. When a delivery is rejected for the last time (the
rule of ``actors.core.dead_letter``; seed ``maxReconsumeTimes`` = 2, §8.1), the callback
sends its body and properties to ``%DLQ%<worker group>`` and returns ``CONSUME_SUCCESS``;
the broker's ``retryMaxTimes`` for the worker group is provisioned well above 2, so its
own branch is never reached first.
"""

from actors.transport.rocketmq.delivery import (
    PROP_EMPTY_BODY,
    PROP_ORIGIN_MESSAGE_ID,
    PROP_ORIGIN_TOPIC,
    PROP_RECONSUME_TIMES,
    RocketMQDelivery,
)
from actors.transport.rocketmq.names import dead_letter_topic, dlq_handler_group, producer_group
from actors.transport.rocketmq.native import ConsumeStatus, native_core_info
from actors.transport.rocketmq.opening import open_rocketmq_transport
from actors.transport.rocketmq.transport import (
    CLOSE_TIMEOUT_SECONDS,
    SEND_TIMEOUT_MS,
    RocketMQTransport,
    RocketMQTransportError,
)

__all__ = [
    "CLOSE_TIMEOUT_SECONDS",
    "PROP_EMPTY_BODY",
    "PROP_ORIGIN_MESSAGE_ID",
    "PROP_ORIGIN_TOPIC",
    "PROP_RECONSUME_TIMES",
    "SEND_TIMEOUT_MS",
    "ConsumeStatus",
    "RocketMQDelivery",
    "RocketMQTransport",
    "RocketMQTransportError",
    "dead_letter_topic",
    "dlq_handler_group",
    "native_core_info",
    "open_rocketmq_transport",
    "producer_group",
]
