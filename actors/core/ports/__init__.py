"""Ports: the interfaces the actors and the web side depend on, implemented further out.

Modelled on httpx's ``_transports/base.py``: each port is a small ``Protocol`` that states
what a caller may rely on, and the outer layers plug in implementations —
``actors.transport.embedded`` / ``actors.transport.rocketmq`` for the command transport,
``actors.storage`` for export files, ``actors.plumbing.registry_source`` for the registry,
``actors.plumbing.wakeup`` and ``actors.supervised.local_claims`` for the wake-ups,
``actors.plumbing.metrics`` for the API's metrics, and ``db.store.ExportStore`` for the
store ports (one per caller). Nothing here does IO or imports an event loop, so ``web``
depends on these ports and never on an actor.

Attributes a caller only reads are declared as read-only properties: a class with a plain
attribute or a property both satisfy them, so every implementation type-checks as its port
without casts.

Transport errors live in the error tree (:mod:`actors.core.errors`): a send that did not
reach the broker raises :class:`~actors.core.errors.TransportSendError`.

By capability: ``transport`` (the command transport), ``storage`` (export files),
``registry`` (the registry in force), ``wakeups`` (after a commit), ``metrics`` (the
API's), ``store`` (one port per caller of the store).
"""
