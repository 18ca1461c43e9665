"""The export pipeline: one claimed attempt, from Provider batches to a stored file.

``runner`` is the export body the executor calls; ``attempt`` holds the attempt's context
and its file. Below them, one room each: ``provider`` (the Provider client: requests,
HTTP, decoding, the cursor loop), ``worker`` (the worker process that does a run's CPU
work, and the parent's handle on it) and ``writer`` (the streamed XLSX file: sheet, zip,
size cap). Storage is a room of its own (:mod:`actors.storage`).
"""
