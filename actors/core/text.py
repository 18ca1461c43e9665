"""Outside text made safe to quote in a log line or a ``failure_message``. Pure.

Text that comes from outside — a Provider's error message, a cursor, a header value, an
exception text that quotes one of them, a task name — must never be able to start a new
log line (CR, LF, NEL, U+2028 …), reorder what a terminal shows (bidirectional
overrides), or break an encoder further down (lone UTF-16 surrogates, which UTF-8 cannot
encode). Nor may a URL we quote carry its credentials into a log.

:func:`escape_control` is **idempotent**: its output contains no character it escapes, and
it leaves backslashes alone, so applying it at a quote site *and* again in the log
formatter never doubles anything. The price: a Provider that sends the two characters
``\\n`` is shown the same as one that sent a newline; both stay on one line, which is what
matters.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import quote

#: Format characters that change the visual order of text (Unicode bidi controls and
#: marks). Other ``Cf`` characters (soft hyphen, joiners) are harmless and kept.
BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# What is escaped: the controls (C0, DEL, C1 — NEL is one: Unicode category Cc), the line
# and paragraph separators (Zl, Zp), the bidi controls above, and lone surrogates (Cs).
_ESCAPED = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff" + "".join(sorted(BIDI_CONTROLS)) + "]"
)
# scheme://userinfo@ — the userinfo (user, or user:password) is what we redact.
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/?#@\s]+)@")
#: What replaces the userinfo of a URL, or a credential-shaped value.
REDACTED = "***"
# A JWT (JWS compact serialisation): a base64url JSON header, which starts "eyJ" ('{"').
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*")
# A long run of base64 or base64url characters: a secret when it mixes upper-case letters,
# lower-case letters and digits (token_urlsafe, API keys). Hex ids (trace ids, object keys),
# numbers and CONSTANT_NAMES have no such mix and are kept.
_LONG_RUN = re.compile(r"[A-Za-z0-9_+\-]{32,}={0,2}")
_SECRET_MIX = (
    re.compile("[A-Z]").search,
    re.compile("[a-z]").search,
    re.compile("[0-9]").search,
)


def has_utf8_form(text: str) -> bool:
    """Whether ``text`` can be encoded as UTF-8: false exactly when it holds a lone UTF-16
    surrogate (a ``"\\ud800"`` escape in JSON decodes to one)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def escape_control(text: str) -> str:
    """Escape every character that could forge a line or break an encoder.

    Args:
        text: any text, possibly from outside.

    Returns:
        ``text`` with CR, LF and TAB as ``\\r``, ``\\n``, ``\\t``, other controls and
        separators as ``\\xNN`` / ``\\uNNNN``, bidirectional controls as ``\\uNNNN``, and
        lone surrogates as ``\\udNNN``. Everything else, backslashes included, is kept.
        The result is one line, encodable as UTF-8, and ``escape_control`` of it is
        itself.
    """
    if not _ESCAPED.search(text):
        return text
    return _ESCAPED.sub(_escape_match, text)


def _escape_match(match: re.Match[str]) -> str:
    char = match.group()
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def quote_outside(text: str, limit: int = 200) -> str:
    """Outside text ready to embed in one of our messages: escaped, redacted, clipped.

    Args:
        text: the text to quote (a Provider message, a cursor, an exception text …).
        limit: the most characters of ``text`` quoted; ≥ 1.

    Returns:
        ``text`` with URL credentials redacted, cut to ``limit`` characters (``…``
        appended when it was longer), then escaped. Cutting before escaping never leaves
        half an escape sequence; the result is at most ``6 * limit + 1`` characters.
    """
    safe = redact_credentials(text)
    if len(safe) <= limit:
        return escape_control(safe)
    return escape_control(safe[:limit]) + "…"


def redact_url(url: str) -> str:
    """A URL without its credentials: ``http://user:secret@host/p`` -> ``http://***@host/p``.

    Args:
        url: a URL, possibly with ``user:password@`` (or a bare token) before the host.

    Returns:
        The URL with the userinfo replaced by :data:`REDACTED`; unchanged if it has none.
    """
    return redact_credentials(url)


def redact_credentials(text: str) -> str:
    """Replace every credential inside ``text``: the userinfo of each
    ``scheme://userinfo@`` URL, and every credential-shaped value whatever it is called
    (a JWT; a run of 32 or more base64 characters mixing upper case, lower case and
    digits).

    Used on every formatted log line, on the access line's path and on every export
    error message, so a base URL with ``user:password@`` or a token in a query parameter
    of any name (``?jwt=…``) cannot leak through any message that quotes it (a library's
    own request line, an exception text, a configuration echo).

    Args:
        text: free text that may contain URLs and tokens.

    Returns:
        ``text`` with each of them replaced by :data:`REDACTED`.
    """
    if "@" in text and "://" in text:
        text = _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)
    if len(text) < 32:
        return text
    if "eyJ" in text:
        text = _JWT.sub(REDACTED, text)
    return _LONG_RUN.sub(_mask_secret_shaped, text)


def _mask_secret_shaped(match: re.Match[str]) -> str:
    run = match.group()
    return REDACTED if all(search(run) for search in _SECRET_MIX) else run


#: Unicode categories never allowed in a file name we hand out: controls (C0, DEL, C1),
#: format characters (bidi overrides, zero-width joiners …), surrogates, line and
#: paragraph separators, unassigned and private-use code points.
_NAME_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
#: Characters Windows, macOS or a shell refuse or misread in a file name.
_NAME_RESERVED = frozenset('\\/:*?"<>|')


def safe_file_name(name: str, default: str = "export.xlsx") -> str:
    """A file name without control, format or reserved characters.

    Each unsafe character becomes ``_`` (so a visible trace remains); leading and
    trailing spaces and dots are dropped (Windows ignores them; a leading dot hides the
    file). Used for the names the service creates and for ``Content-Disposition``.

    Args:
        name: any text (a task name, a stored file name).
        default: returned when nothing usable is left.

    Returns:
        The cleaned name, never empty.
    """
    cleaned = "".join(
        "_" if ch in _NAME_RESERVED or unicodedata.category(ch) in _NAME_UNSAFE_CATEGORIES else ch
        for ch in name
    ).strip(" .")
    return cleaned or default


def content_disposition(name: str) -> str:
    """The ``Content-Disposition`` value of a download (RFC 6266 with RFC 5987 ``filename*``).

    ``filename`` is the ASCII fallback for old clients: :func:`safe_file_name`, then every
    non-ASCII character as ``_``. ``filename*`` carries the full cleaned name, UTF-8 and
    percent-encoded. Neither can hold a control, format (bidi override) or quote
    character, so a task name cannot forge header syntax or disguise an extension.

    Args:
        name: the stored file name.

    Returns:
        ``attachment; filename="…"; filename*=UTF-8''…``
    """
    full = safe_file_name(name)
    fallback = safe_file_name("".join(ch if ch.isascii() else "_" for ch in full))
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(full, safe='')}"
