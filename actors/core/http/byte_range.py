"""Which bytes of an export file a download answers with: resumable downloads (RFC 9110
section 14).

A large file over a flaky link should not start again from its first byte. A client that
has part of the file asks for the rest with ``Range: bytes=<first>-`` and, to be sure the
rest belongs to the same file, ``If-Range: <the ETag it got>``. The download answers:

* no ``Range`` (or one this service does not serve: several ranges, another unit, a
  malformed value, an ``If-Range`` that does not match the file): the whole file, 200 —
  RFC 9110 section 14.2 lets a server ignore a Range it will not serve;
* one satisfiable range: those bytes, 206, with ``Content-Range: bytes a-b/size``;
* one range that starts at or past the end: 416 with ``Content-Range: bytes */size``.

The ETag is the file's object key (a new attempt writes a new key, so a retried task's new
file never matches an old ETag). A dated ``If-Range`` is not compared (the files carry no
Last-Modified): it never matches, so the client gets the whole file, which is always
correct. Pure: the route (``web/api.py``) carries the answer out.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

#: ``bytes=first-last``, ``bytes=first-`` or ``bytes=-suffix``: one range, nothing else.
_ONE_RANGE = re.compile(r"bytes=(?:(\d{1,19})-(\d{0,19})|-(\d{1,19}))")


@dataclass(frozen=True, slots=True)
class ByteRange:
    """The answer to a download's ``Range``.

    Attributes:
        status: 200 (the whole file), 206 (a part) or 416 (nothing of it can be served).
        start: first byte sent, 0-based.
        length: bytes sent (0 for 416).
        content_range: the ``Content-Range`` header value, ``None`` for 200.
    """

    status: int
    start: int
    length: int
    content_range: str | None


def etag(object_key: str) -> str:
    """The strong ETag of the file stored under ``object_key`` (a quoted hex digest)."""
    return '"' + hashlib.sha256(object_key.encode()).hexdigest()[:32] + '"'


def byte_range(
    range_header: str | None, if_range: str | None, size: int, file_etag: str
) -> ByteRange:
    """Decide which bytes of a ``size``-byte file to answer with.

    Args:
        range_header: the request's ``Range`` header, or ``None``.
        if_range: the request's ``If-Range`` header, or ``None``.
        size: the file's size, bytes.
        file_etag: the file's ETag (:func:`etag`).

    Returns:
        The status, first byte, length and ``Content-Range`` to answer with (module rules).
    """
    whole = ByteRange(200, 0, size, None)
    if range_header is None:
        return whole
    if if_range is not None and if_range.strip() != file_etag:
        return whole  # another version of the file, or a date: the whole current file
    match = _ONE_RANGE.fullmatch(range_header.strip())
    if match is None:
        return whole  # several ranges, another unit, or malformed: ignored (RFC 9110 section 14.2)
    first, last, suffix = match.groups()
    if suffix is not None:
        length = min(int(suffix), size)
        if length == 0:
            return ByteRange(416, 0, 0, f"bytes */{size}")
        start, end = size - length, size - 1
    else:
        start = int(first)
        end = size - 1 if not last else min(int(last), size - 1)
        if last and int(last) < start:
            return whole  # "bytes=9-5" is invalid: ignored like any malformed range
        if start >= size:
            return ByteRange(416, 0, 0, f"bytes */{size}")
    return ByteRange(206, start, end - start + 1, f"bytes {start}-{end}/{size}")
