"""Export file storage: the adapters of the ``ExportStorage`` port
(:mod:`actors.core.ports.storage`): a local directory (``local``), an S3-compatible bucket
(``s3``, over ``s3_client``), and the multipart output that streams a file into a bucket
while it is written (``multipart_output``); with a fresh object key for each attempt
(``keys``) and how an adapter runs its blocking calls (``offload``)."""
