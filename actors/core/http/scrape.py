"""Who may read ``/metrics``: the scrape's bearer token, when one is configured.

Prometheus sends a bearer token with ``authorization: {credentials: …}`` in its scrape
config; ``FILE_EXPORT_METRICS_TOKEN`` is that token. Unset, ``/metrics`` is open, as most
exporters are, and is meant for a private network (the bind address of the service).
Pure: no IO.
"""

from __future__ import annotations

import hmac

#: The realm named in the ``WWW-Authenticate`` header of a refused scrape.
REALM = "metrics"


def scrape_allowed(token: str | None, authorization: str | None) -> bool:
    """Whether a request may read the metrics.

    Args:
        token: the configured scrape token; ``None``: no token, every scrape is allowed.
        authorization: the request's ``Authorization`` header, if any.

    Returns:
        True without a token, or when the header is ``Bearer <token>`` (the scheme in any
        case; compared in constant time).
    """
    if token is None:
        return True
    if authorization is None:
        return False
    scheme, _, given = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())
