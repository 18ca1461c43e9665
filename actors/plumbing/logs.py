"""Process logging: structured lines (JSON or text) that outside text cannot forge.

:func:`configure_logging` installs one handler on the root logger whose formatter is
structlog's :class:`structlog.stdlib.ProcessorFormatter`: every standard-library
``logging`` call in the code base (and in libraries) is rendered through the same
processor chain:

1. the context variables bound for the current request or run are merged in
   (:data:`CONTEXT_KEYS`: ``taskId``, ``eventId``, ``dispatchVersion``, ``exportType``,
   ``tenantId``, ``requestId``, ``traceId``; bound with
   :func:`actors.core.log_context.bind_context`), then the record's ``extra={...}``
   fields;
2. every string value is passed through :func:`actors.core.text.escape_control` (no CR/LF,
   other controls, bidi overrides or lone surrogates: a Provider message cannot start a
   line of its own) and :func:`actors.core.text.redact_credentials` (no
   ``user:password@`` in a URL), its credential-like query values masked
   (:func:`actors.core.tracing.redact_query_secrets`: no ``?token=…``), and cut at
   :data:`MAX_MESSAGE_CHARS`. Tracebacks keep their line breaks — they are ours — but
   still lose URL credentials;
3. the line is rendered as JSON (one object per line: ``timestamp`` in UTC, ``level``,
   ``logger``, ``message``, then the context and fields) or as text
   (``time LEVEL logger: message key=value …``).

``FILE_EXPORT_LOG_FORMAT`` picks the renderer; unset, a terminal gets text and anything
else (a file, a pipe, a container's log driver) gets JSON.

Context variables: structlog keeps them in :mod:`contextvars`. Each trio task runs in a
copy of the context of the task that started it, so a value bound inside a request or a
consumer slot's run is seen by the tasks it starts (the lease watchdog) and by nothing
outside it; ``bind_context`` restores the previous values when its block ends.
``trio.to_thread.run_sync`` runs its function in a copy of the caller's context, so lines
logged there carry it too; threads the RocketMQ client starts itself carry none. Export
worker processes do not log: they report to the run in this process, which logs.

Libraries that log a line per request or query (httpx, httpcore, hpack, asyncmy …) are
held at WARNING unless ``FILE_EXPORT_LOG_LEVEL=DEBUG``: httpx's INFO request line would
otherwise print every Provider URL, credentials included, at the default level.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Mapping, MutableMapping
from typing import Any, Literal, TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

from actors.core.log_context import CONTEXT_KEYS
from actors.core.text import escape_control, redact_credentials
from actors.core.tracing import redact_query_secrets

#: Longest message (and longest other string value), in characters; longer ones are cut
#: and say how much was left out.
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
#: The two renderings ``FILE_EXPORT_LOG_FORMAT`` names.
LogFormat = Literal["json", "text"]

# Fixed keys of every line; the rest are context and fields.
_FIXED = ("timestamp", "level", "logger", "message")


def _add_timestamp(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    record: logging.LogRecord | None = event_dict.get("_record")
    created = record.created if record is not None else time.time()
    event_dict["timestamp"] = created
    return event_dict


def _rename_event(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    event_dict["message"] = event_dict.pop("event", "")
    return event_dict


def _clip(text: str) -> str:
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    cut = MAX_MESSAGE_CHARS - 40
    return f"{text[:cut]}… [{len(text) - cut} more characters]"


def _make_safe(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    """Escape, redact and bound every value; the traceback keeps its lines."""
    for key, value in list(event_dict.items()):
        if key in ("exception", "stack"):
            event_dict[key] = redact_credentials(str(value))
        elif key != "timestamp":
            event_dict[key] = _safe(value)
    return event_dict


def _safe(value: object) -> object:
    """A value with every string in it escaped, redacted and clipped; containers keep
    their shape (JSON lines show them as JSON), other objects become their safe text."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, Mapping):
        return {str(_safe(str(k))): _safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_safe(v) for v in value]
    return _clip(escape_control(redact_query_secrets(redact_credentials(str(value)))))


def _render_json(_: WrappedLogger, __: str, event_dict: EventDict) -> str:
    created = float(event_dict.pop("timestamp"))
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created))
    line = {"timestamp": f"{stamp}.{int(created % 1 * 1000):03d}Z"}
    line.update(_ordered(event_dict))
    return json.dumps(line, ensure_ascii=False, default=str)


def _render_text(_: WrappedLogger, __: str, event_dict: EventDict) -> str:
    created = float(event_dict.pop("timestamp"))
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(created))
    ordered = _ordered(event_dict)
    exception = ordered.pop("exception", None)
    head = (
        f"{stamp},{int(created % 1 * 1000):03d} {str(ordered.pop('level')).upper():<8} "
        f"{ordered.pop('logger')}: {ordered.pop('message')}"
    )
    tail = " ".join(f"{k}={_text_value(v)}" for k, v in ordered.items())
    line = _clip(f"{head} {tail}" if tail else head)
    return f"{line}\n{exception}" if exception else line


def _text_value(value: object) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    text = str(value)
    if text == "" or any(c in text for c in ' "='):
        return json.dumps(text, ensure_ascii=False)
    return text


def _ordered(event_dict: MutableMapping[str, Any]) -> dict[str, Any]:
    """Fixed keys first, then the context keys in their order, then the rest by name."""
    keys = [k for k in _FIXED if k in event_dict]
    keys += [k for k in CONTEXT_KEYS if k in event_dict]
    keys += sorted(k for k in event_dict if k not in keys)
    return {k: event_dict[k] for k in keys}


def _formatter(fmt: LogFormat) -> structlog.stdlib.ProcessorFormatter:
    pre_chain: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.ExtraAdder(),
        _add_timestamp,
    ]
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=pre_chain,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            structlog.processors.StackInfoRenderer(),
            _rename_event,
            _make_safe,
            _render_json if fmt == "json" else _render_text,
        ],
    )


def resolve_format(fmt: str | None, stream: TextIO) -> LogFormat:
    """The rendering to use: ``fmt`` when given, else text for a terminal and JSON otherwise.

    Args:
        fmt: ``"json"``, ``"text"`` (case-insensitive) or ``None``.
        stream: where lines go.

    Raises:
        ValueError: ``fmt`` is something else.
    """
    if fmt is None:
        isatty = getattr(stream, "isatty", None)
        return "text" if callable(isatty) and isatty() else "json"
    lowered = fmt.lower()
    if lowered == "json":
        return "json"
    if lowered == "text":
        return "text"
    raise ValueError(f"log format must be json or text, not {fmt!r}")


def configure_logging(
    level: str, stream: TextIO | None = None, fmt: str | None = None
) -> logging.Handler:
    """Send log records to ``stream`` through structlog's processor chain (module docstring).

    Idempotent: a handler installed by an earlier call is replaced, not doubled.

    Args:
        level: ``DEBUG`` … ``CRITICAL`` (case-insensitive; anything else means INFO).
        stream: where lines go; standard error by default.
        fmt: ``"json"`` or ``"text"`` (``FILE_EXPORT_LOG_FORMAT``); ``None`` picks text
            for a terminal, JSON otherwise (:func:`resolve_format`).

    Returns:
        The installed handler (tests remove it again with ``removeHandler``).

    Raises:
        ValueError: ``fmt`` is neither ``json`` nor ``text``.
    """
    numeric = getattr(logging, level.upper(), logging.INFO)
    if not isinstance(numeric, int):
        numeric = logging.INFO
    out = stream if stream is not None else sys.stderr
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_export_center", False)]:
        root.removeHandler(old)
    handler = logging.StreamHandler(out)
    handler.setFormatter(_formatter(resolve_format(fmt, out)))
    handler._export_center = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(numeric)
    library_level = logging.DEBUG if numeric <= logging.DEBUG else max(logging.WARNING, numeric)
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(library_level)
    return handler
