"""Process logging: one line per record that outside text cannot forge, no library chatter.

:func:`configure_logging` installs a :class:`SafeFormatter` on the root logger. Whatever a
call site forgot to escape, every formatted message is passed through
:func:`actors.core.text.escape_control` (no CR/LF, other controls, bidi overrides or lone
surrogates: a Provider message cannot start a line of its own) and
:func:`actors.core.text.redact_credentials` (no ``user:password@`` in a URL), and is cut
at :data:`MAX_MESSAGE_CHARS`. Tracebacks keep their line breaks — they are ours — but
still lose URL credentials.

Libraries that log a line per request or query (httpx, httpcore, hpack, asyncmy …) are
held at WARNING unless ``FILE_EXPORT_LOG_LEVEL=DEBUG``: httpx's INFO request line would
otherwise print every Provider URL, credentials included, at the default level.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

from actors.core.text import escape_control, redact_credentials

#: The line format: time, level, logger, message.
LOG_FORMAT = "%(asctime)s %(levelname)-8s %(name)s: %(message)s"
#: Longest formatted line before the traceback, in characters; longer ones are cut and
#: say how much was left out.
MAX_MESSAGE_CHARS = 4096
#: Loggers of libraries that are WARNING-only unless the level is DEBUG.
LIBRARY_LOGGERS = (
    "httpx",
    "httpcore",
    "hpack",
    "h11",
    "h2",
    "asyncmy",
    "asyncio",
    "trio_asyncio",
    "urllib3",
)


class SafeFormatter(logging.Formatter):
    """A :class:`logging.Formatter` whose message part is always one safe, bounded line.

    Args:
        fmt: the ``%``-style format; defaults to :data:`LOG_FORMAT`.
        max_chars: most characters of the formatted line (before any traceback).
    """

    def __init__(self, fmt: str = LOG_FORMAT, max_chars: int = MAX_MESSAGE_CHARS) -> None:
        super().__init__(fmt)
        self._max_chars = max_chars

    def format(self, record: logging.LogRecord) -> str:
        # Another handler may have cached its own, unredacted traceback text on the record:
        # format ours, then leave the record as it was.
        cached = record.exc_text
        record.exc_text = None
        try:
            return super().format(record)
        finally:
            record.exc_text = cached

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - stdlib name
        line = escape_control(redact_credentials(super().formatMessage(record)))
        if len(line) > self._max_chars:
            cut = self._max_chars - 40
            line = f"{line[:cut]}… [{len(line) - cut} more characters]"
        return line

    def formatException(self, ei: object) -> str:  # noqa: N802 - stdlib name
        return redact_credentials(super().formatException(ei))  # type: ignore[arg-type]

    def formatStack(self, stack_info: str) -> str:  # noqa: N802 - stdlib name
        return redact_credentials(super().formatStack(stack_info))


def configure_logging(level: str, stream: TextIO | None = None) -> logging.Handler:
    """Send log records to ``stream`` through a :class:`SafeFormatter`.

    Idempotent: a handler installed by an earlier call is replaced, not doubled.

    Args:
        level: ``DEBUG`` … ``CRITICAL`` (case-insensitive; anything else means INFO).
        stream: where lines go; standard error by default.

    Returns:
        The installed handler (tests remove it again with ``removeHandler``).
    """
    numeric = getattr(logging, level.upper(), logging.INFO)
    if not isinstance(numeric, int):
        numeric = logging.INFO
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_export_center", False)]:
        root.removeHandler(old)
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(SafeFormatter())
    handler._export_center = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(numeric)
    library_level = logging.DEBUG if numeric <= logging.DEBUG else max(logging.WARNING, numeric)
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(library_level)
    return handler
