"""The Provider client: how a batch request is built, sent over HTTP and decoded, and the
cursor loop over a whole export; used by the export worker and ``provider-check``."""
