"""hypercorn's configuration for the service's HTTP server (:mod:`web.server`): where it
listens, how many connections may wait to be accepted, and how long requests in flight
may finish after its shutdown trigger (:func:`actors.runtime.stop_in_order`)."""

from __future__ import annotations

import logging

from hypercorn.config import Config as HypercornConfig

from actors.plumbing.config import Settings

#: Seconds hypercorn lets in-flight requests finish after its shutdown trigger fired.
WEB_GRACEFUL_TIMEOUT_SECONDS = 5
#: The listen backlog of the HTTP server (``hypercorn_config``).
HTTP_BACKLOG = 4096


def hypercorn_config(settings: Settings) -> HypercornConfig:
    """hypercorn's configuration: ``FILE_EXPORT_HTTP_BIND``, our own logging, no access
    log, ``WEB_GRACEFUL_TIMEOUT_SECONDS`` to finish requests after the shutdown trigger."""
    hc = HypercornConfig()
    hc.bind = [settings.http_bind]
    hc.accesslog = None
    hc.errorlog = logging.getLogger("hypercorn.error")
    hc.graceful_timeout = WEB_GRACEFUL_TIMEOUT_SECONDS
    # Connections waiting to be accepted: hypercorn's 100 drops the SYNs of a burst (many
    # pages reconnecting their progress streams after a deploy), and each dropped one
    # waits 1, 3, 7 … s to retry. The kernel caps it at net.core.somaxconn.
    hc.backlog = HTTP_BACKLOG
    return hc
