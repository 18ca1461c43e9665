"""When an identity provider's key set (JWKS) is fetched, and who waits for it. Pure.

The service keeps the provider's published keys in memory and verifies tokens with them
(``web/identity.py``). A request must never wait behind a fetch it does not need: the
provider may be slow or down, and every authenticated request passes this point. So:

=================================  =================================================
the request's token names …        what happens
=================================  =================================================
a key the set holds, set fresh     nothing: verify now
a key the set holds, set older     verify now with the key held; one fetch starts in
than the maximum age               the background unless one runs or the last try
                                   was under the minimum interval ago
                                   (stale-while-revalidate)
a key the set does not hold        wait for the fetch in flight, if one runs (single
                                   flight); else start one and wait for it, unless the
                                   last try was under the minimum interval ago —
                                   then refuse at once (the unknown key)
=================================  =================================================

The minimum interval bounds what tokens with invented ``kid`` values can cost: at most
one fetch per interval, whatever their number, and none of them delays a request whose
key is known. A failed fetch counts as a try: the set held is kept, and the next try
waits its turn.
"""

from __future__ import annotations

import enum

__all__ = ["KeyFetch", "key_fetch"]


class KeyFetch(enum.Enum):
    """What a request does about the key set before verifying its token."""

    #: Verify with what is held.
    NONE = "none"
    #: Verify with what is held; start a fetch in the background.
    IN_BACKGROUND = "in-background"
    #: Wait for the fetch that is already running, then verify.
    JOIN = "join"
    #: Start a fetch and wait for it, then verify.
    START_AND_WAIT = "start-and-wait"


def key_fetch(
    *,
    holds_key: bool,
    since_last_try: float | None,
    in_flight: bool,
    max_age: float,
    min_interval: float,
) -> KeyFetch:
    """What a request does about the key set (the table of the module docstring).

    Args:
        holds_key: the set held now has the key the token names.
        since_last_try: seconds since the last fetch started (whatever came of it), or
            ``None`` before the first.
        in_flight: a fetch is running now.
        max_age: seconds after which a held set is fetched again (in the background).
        min_interval: the least seconds between two fetches started for unknown keys or
            stale sets.

    Returns:
        The :class:`KeyFetch` to carry out.
    """
    may_start = since_last_try is None or since_last_try >= min_interval
    if holds_key:
        stale = since_last_try is None or since_last_try >= max_age
        return KeyFetch.IN_BACKGROUND if stale and may_start and not in_flight else KeyFetch.NONE
    if in_flight:
        return KeyFetch.JOIN
    return KeyFetch.START_AND_WAIT if may_start else KeyFetch.NONE
