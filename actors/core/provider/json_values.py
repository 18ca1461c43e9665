"""The other side's JSON values as the Provider contract reads them: an integer is an
``int`` and never a boolean (JSON ``true`` is not 1), and text the other side wrote is
escaped and clipped before a message quotes it (it ends up in ``failure_message``).

Both sides use them: the request's readers (``actors.core.provider.request``), the
answer's (``actors.core.provider.contract``, ``.columns``, ``.http_answer``), the rules
across batches and provider-check.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from actors.core.text import quote_outside

#: Longest Provider-supplied text copied into an error message (it ends up in
#: failure_message, shown in the download center).
QUOTE_CHARS = 200


def is_int(value: Any) -> TypeGuard[int]:
    """True for an ``int`` that is not a ``bool`` (JSON ``true`` is not a number)."""
    return isinstance(value, int) and not isinstance(value, bool)


def clip(text: str) -> str:
    """Provider text for a message: escaped and clipped to :data:`QUOTE_CHARS` characters."""
    return quote_outside(text, QUOTE_CHARS)
