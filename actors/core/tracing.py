"""Trace and request ids, and what of a request may be logged. Pure.

A **trace id** follows one export from the API request that created it, through the
command and its outbox row, every Provider batch request and the run's log lines, to the
download (issue 12, "Logs"). It is a W3C Trace Context trace id: 32 lowercase hex digits,
not all zero. The API adopts the trace id of a valid incoming ``traceparent`` header, so a
caller's own tracing joins ours; otherwise it draws a new one. Each Provider batch request
carries ``traceparent: 00-<trace id>-<new span id>-01``.

A **request id** names one HTTP request in the access log. A caller's ``X-Request-Id`` is
kept when it is short and made of safe characters; otherwise a new one is drawn.

Randomness comes in as an argument (``rand(n) -> n bytes``): the shells pass ``os.urandom``,
tests a fixed one.

Reference: W3C Trace Context, "traceparent Header" (https://www.w3.org/TR/trace-context/).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import parse_qsl, quote

from actors.core.text import escape_control, redact_credentials

#: A source of random bytes: ``rand(n)`` returns ``n`` bytes.
RandomBytes = Callable[[int], bytes]

#: The W3C header that carries a trace across services.
TRACEPARENT_HEADER = "traceparent"
#: The ``traceparent`` version this service writes.
TRACEPARENT_VERSION = "00"
#: Trace flags this service writes: sampled (``01``), so a collector keeps the spans.
TRACE_FLAGS_SAMPLED = "01"
#: Longest ``X-Request-Id`` adopted, characters.
MAX_REQUEST_ID_CHARS = 64
#: Longest path (with its query) written to an access line, characters.
MAX_LOGGED_PATH_CHARS = 512
#: What replaces a masked value in a log line.
MASK = "***"

_HEX32 = re.compile(r"[0-9a-f]{32}")
_TRACEPARENT = re.compile(
    r"(?P<version>[0-9a-f]{2})-(?P<trace_id>[0-9a-f]{32})-(?P<parent_id>[0-9a-f]{16})"
    r"-(?P<flags>[0-9a-f]{2})(?P<rest>.*)",
    re.DOTALL,
)
_REQUEST_ID = re.compile(rf"[A-Za-z0-9._:\-]{{1,{MAX_REQUEST_ID_CHARS}}}")
# Query parameter names whose values are never logged (credentials a client may put in a
# URL). Matched anywhere in the lower-cased name: "access_token", "X-Api-Key", "sig" …
_SECRET_NAME = re.compile(
    r"token|secret|passw|pwd|key|sig|auth|session|csrf|cookie|code|cred|jwt|bearer"
)


def is_trace_id(value: object) -> bool:
    """Whether ``value`` is a valid W3C trace id: 32 lowercase hex digits, not all zero.

    Args:
        value: anything (a column value, a JSON field).

    Returns:
        ``True`` for a valid trace id.
    """
    return isinstance(value, str) and bool(_HEX32.fullmatch(value)) and value != "0" * 32


def new_trace_id(rand: RandomBytes) -> str:
    """A new random trace id (16 random bytes as 32 lowercase hex digits).

    Args:
        rand: the source of random bytes.

    Returns:
        A valid trace id; all-zero draws (invalid in W3C) are drawn again.
    """
    while True:
        value = rand(16).hex()
        if is_trace_id(value):
            return value


def new_span_id(rand: RandomBytes) -> str:
    """A new random span (parent) id: 8 random bytes as 16 lowercase hex digits, not all zero.

    Args:
        rand: the source of random bytes.
    """
    while True:
        value = rand(8).hex()
        if value != "0" * 16:
            return value


def uuid4_text(random16: bytes) -> str:
    """16 random bytes as a version-4 UUID in its usual text form
    (``xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx``), as ``str(uuid.uuid4())`` writes it.

    Args:
        random16: exactly 16 random bytes.

    Raises:
        ValueError: not 16 bytes.
    """
    if len(random16) != 16:
        raise ValueError("a UUID takes 16 bytes")
    b = bytearray(random16)
    b[6] = (b[6] & 0x0F) | 0x40  # version 4
    b[8] = (b[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def parse_traceparent(header: str | None) -> str | None:
    """The trace id of a W3C ``traceparent`` header, if the header is valid.

    Rules (W3C Trace Context): ``version-traceid-parentid-flags``, lowercase hex;
    version ``ff`` is invalid; trace id and parent id must not be all zero; version
    ``00`` has exactly these four fields; a later version may append ``-…`` fields, which
    are ignored.

    Args:
        header: the header value, or ``None`` when absent. Surrounding spaces and tabs
            are ignored (HTTP optional whitespace).

    Returns:
        The 32-digit trace id, or ``None`` when the header is absent or invalid (the
        caller then draws a new trace id).
    """
    if header is None:
        return None
    match = _TRACEPARENT.fullmatch(header.strip(" \t"))
    if match is None:
        return None
    version, trace_id, parent_id, rest = match.group("version", "trace_id", "parent_id", "rest")
    if version == "ff" or parent_id == "0" * 16 or not is_trace_id(trace_id):
        return None
    if version == TRACEPARENT_VERSION and rest:
        return None
    if rest and not rest.startswith("-"):
        return None
    return trace_id


def format_traceparent(trace_id: str, span_id: str) -> str:
    """A ``traceparent`` header value for a request this service sends.

    Args:
        trace_id: a valid trace id (:func:`is_trace_id`).
        span_id: 16 lowercase hex digits (:func:`new_span_id`).

    Returns:
        ``00-<trace_id>-<span_id>-01``.

    Raises:
        ValueError: ``trace_id`` or ``span_id`` is malformed.
    """
    if not is_trace_id(trace_id):
        raise ValueError("trace_id must be 32 lowercase hex digits, not all zero")
    if not re.fullmatch(r"[0-9a-f]{16}", span_id) or span_id == "0" * 16:
        raise ValueError("span_id must be 16 lowercase hex digits, not all zero")
    return f"{TRACEPARENT_VERSION}-{trace_id}-{span_id}-{TRACE_FLAGS_SAMPLED}"


def request_trace_id(traceparent: str | None, rand: RandomBytes) -> str:
    """The trace id of a request: the incoming ``traceparent``'s when valid, else new.

    Args:
        traceparent: the request's ``traceparent`` header, or ``None``.
        rand: the source of random bytes for a new trace id.
    """
    return parse_traceparent(traceparent) or new_trace_id(rand)


def run_trace_id(task_trace_id: str | None, command_trace_id: str | None, rand: RandomBytes) -> str:
    """The trace id a run logs and sends to the Provider.

    The task row's, stored at create and kept by every retry and re-dispatch, is the
    source of truth; a task created before the column existed has none, and then the
    command's is used (its ``traceId`` is optional and may be malformed); failing both, a
    new one, so the run's own lines still share one.

    Args:
        task_trace_id: ``file_export_task.trace_id``.
        command_trace_id: the command's ``traceId`` (``None`` for a task claimed without a
            command).
        rand: the source of random bytes for a new trace id.
    """
    for candidate in (task_trace_id, command_trace_id):
        if is_trace_id(candidate):
            return str(candidate)
    return new_trace_id(rand)


def request_id(header: str | None, rand: RandomBytes) -> str:
    """The request id of an HTTP request: the caller's ``X-Request-Id`` when sane, else new.

    Sane: 1 to :data:`MAX_REQUEST_ID_CHARS` characters of ``A-Z a-z 0-9 . _ : -`` (a UUID,
    a ULID, a load balancer's id). Anything else — too long, spaces, control characters —
    is replaced, never escaped into the log: the id is also echoed in a response header.

    Args:
        header: the ``X-Request-Id`` value, or ``None``.
        rand: the source of random bytes for a new id.

    Returns:
        The id to log and echo; a new one is 32 lowercase hex digits.
    """
    if header is not None and _REQUEST_ID.fullmatch(header):
        return header
    return rand(16).hex()


def is_secret_name(name: str) -> bool:
    """Whether a query parameter (or header) name may carry a credential, so its value
    is never logged: the name contains ``token``, ``secret``, ``passw``, ``pwd``, ``key``,
    ``sig``, ``auth``, ``session``, ``csrf``, ``cookie``, ``code`` or ``cred``
    (case-insensitive)."""
    return bool(_SECRET_NAME.search(name.lower()))


# name=value in a URL's query inside free text (a library's request line, an error text).
_QUERY_PAIR = re.compile(r"(?P<lead>[?&;])(?P<name>[^=&#\s\"']{1,100})=(?P<value>[^&#\s\"']*)")


def redact_query_secrets(text: str) -> str:
    """Mask the value of every ``name=value`` query pair inside ``text`` whose name may
    carry a credential (:func:`is_secret_name`), wherever a URL appears in free text.

    Used on every log line, so a library's own request line (httpx at DEBUG) cannot print
    a ``?token=…`` either.

    Args:
        text: free text that may contain URLs.

    Returns:
        ``text`` with those values replaced by :data:`MASK`.
    """
    if "=" not in text:
        return text
    return _QUERY_PAIR.sub(
        lambda m: (
            f"{m.group('lead')}{m.group('name')}={MASK}"
            if is_secret_name(m.group("name"))
            else m.group()
        ),
        text,
    )


def loggable_path(path: str, query_string: str = "") -> str:
    """A request's path and query as an access line shows it.

    The value of every query parameter whose name may carry a credential
    (:func:`is_secret_name`) is replaced by :data:`MASK`, and so is every credential-shaped
    value whatever its name (:func:`actors.core.text.redact_credentials`: ``?jwt=…``,
    a token in the path); others are kept. The result is escaped
    (:func:`actors.core.text.escape_control`) and cut to :data:`MAX_LOGGED_PATH_CHARS`.

    Args:
        path: the decoded request path.
        query_string: the raw query string without ``?`` (``""`` when none).

    Returns:
        ``path`` or ``path?name=value&…`` with secrets masked, one safe line.
    """
    line = path
    if query_string:
        pairs = parse_qsl(query_string, keep_blank_values=True)
        line += "?" + "&".join(
            f"{quote(name, safe='')}={MASK if is_secret_name(name) else quote(value, safe='')}"
            for name, value in pairs
        )
    line = escape_control(redact_credentials(line))
    if len(line) > MAX_LOGGED_PATH_CHARS:
        line = line[: MAX_LOGGED_PATH_CHARS - 1] + "…"
    return line


def masked_parameters(parameters: object) -> dict[str, str] | str:
    """Business parameters as a log line may show them: names kept, values masked.

    Parameters are the user's query (names, phone numbers, ids …): a log shows which
    parameters were set and their JSON type, never their values.

    Args:
        parameters: the normalised parameter object of a task.

    Returns:
        ``{name: "***<type>"}`` for an object (names escaped), else ``"***<type>"``.
    """
    if isinstance(parameters, dict):
        return {escape_control(str(k)[:100]): _masked(v) for k, v in parameters.items()}
    return _masked(parameters)


def _masked(value: object) -> str:
    kind = {
        bool: "bool",
        int: "number",
        float: "number",
        str: "string",
        list: "list",
        dict: "object",
        type(None): "null",
    }.get(type(value), "value")
    return f"{MASK}{kind}"
