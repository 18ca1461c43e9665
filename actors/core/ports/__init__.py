"""Ports: the interfaces the actors and the web side depend on, implemented further out.

Modelled on httpx's ``_transports/base.py``: each port is a small ``Protocol`` that states
what a caller may rely on, and the outer layers plug in implementations —
``actors.transport.embedded`` / ``actors.transport.rocketmq`` for the command transport,
``actors.pipeline.storage`` for export files, ``actors.service.metrics``,
``actors.service.registry_source``
and ``actors.service.wakeup`` for what the web side uses, and ``db.store.ExportStore`` for the
store ports (one per caller, at the end). Nothing here does IO or imports an event
loop, so ``web`` can depend on these ports and on ``db`` alone.

Attributes a caller only reads are declared as read-only properties: a class with a plain
attribute or a property both satisfy them, so every implementation type-checks as its port
without casts.

Transport errors live in the error tree (:mod:`actors.core.errors`): a send that did not
reach the broker raises :class:`~actors.core.errors.TransportSendError`.

By capability: ``transport`` (the command transport), ``storage`` (export files),
``service`` (what the web side uses), ``store`` (one port per caller of the store).
"""
