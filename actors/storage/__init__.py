"""Export file storage: the adapters of the ``ExportStorage`` port
(:mod:`actors.core.ports.storage`): a local directory, an S3-compatible bucket, and the
multipart output that streams a file into a bucket while it is written."""
