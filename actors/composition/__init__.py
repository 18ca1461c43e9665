"""Composition: build every component from the settings, before anything runs.

settings → database → store → transport, storage, metrics, registry, Provider client →
the web app and server → the actors (publisher, consumer slots, reconciler, DLQ handler).
Everything is built and checked here, so a configuration error stops the start-up before
any actor or socket exists; :mod:`actors.runtime` then runs what was built as one nursery
tree and stops it in order.

This package, :mod:`actors.runtime` and the CLI (:mod:`actors.cli`) are the composition
root: the only code that knows the concrete classes behind the ports of
:mod:`actors.core.ports`, and the only code that imports ``db`` and wires ``web`` (imported
lazily, so ``export-center migrate`` does not load the web stack).
One module a subject, the operator's commands taking the pieces they need:

* ``components``   ``Components`` and ``build_components``: the whole service over an
                   open database, built and checked, nothing started.
* ``database``     ``open_database``: the database ``FILE_EXPORT_DATABASE_URL`` names,
                   SQLite, or MySQL inside its trio-asyncio loop.
* ``adapters``     the adapters behind two ports, as the settings name them: the export
                   file storage, and the command transport with its link.
* ``registry``     the registry file in force at start and the Provider allowlist fixed
                   with it (§10.3).
* ``http_server``  hypercorn's configuration: bind, backlog, the graceful timeout.
* ``tokens``       the API's token verifier, from ``FILE_EXPORT_JWT_*``.
"""
