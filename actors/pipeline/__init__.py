"""The export pipeline: Provider client, XLSX writer, storage. IO shells around the core."""
