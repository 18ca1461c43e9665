"""Export Center runtime.

Layers, each importing only from strictly lower ones:

    actors.cli.main, actors.composition, actors.runtime
                                    composition root: CLI, building the services, running
                                    the nursery tree
    actors.<actor modules>          publisher, consumer slots (and the execution of what they
                                    claim), reconciler, dlq, supervisor
    actors.transport, actors.pipeline  IO shells: command bus, Provider client, XLSX, storage
    db                              store interface, SQLite/MySQL stores, transitions
    actors.core                     pure values and decisions; no IO, no clock reads

``web`` sits beside the actors on top of ``db`` and ``actors.core``; nothing imports ``web``
except the composition root.
"""
