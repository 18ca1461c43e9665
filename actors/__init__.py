"""Export Center's runtime: the rooms of ``actors/``, each importing only from the rooms
listed after it (docs/architecture.md, "Layers"; ``lint-imports`` checks it):

    actors/cli/              export-center …: the service's entry point, the operator's
                             commands, provider-check, accept
    actors/runtime.py        runs the nursery tree and stops it in order
    actors/composition/      builds every component from the settings
    actors/credentials.py    the JWT secret, the token verifier, the Provider token
    actors/supervised/       the actors of one instance: publisher, consumer slots and
                             execution, claim gate, reconciler, DLQ handler, sampler
    actors/pipeline/         one claimed attempt: runner, attempt; provider/, worker/, writer/
    actors/storage/          the export-file storage adapters (local directory, S3)
    actors/transport/        the command transports (embedded bus, RocketMQ)
    actors/plumbing/         settings, metrics, logs, supervisor, wake-ups, watched files
    actors/core/             the pure core: values and decisions, no IO

``web`` sits beside the actors, over ``actors.core``; ``db`` sits under every actor room;
only the composition root (cli, runtime, composition) imports ``db`` and ``web``.
"""
