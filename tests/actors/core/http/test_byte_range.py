"""Resumable downloads: which bytes a download answers with (actors/core/http/byte_range.py)."""

from __future__ import annotations

import pytest

from actors.core.http.byte_range import ByteRange, byte_range, etag

TAG = etag("exports/1/a.xlsx")
WHOLE = ByteRange(200, 0, 1000, None)


@pytest.mark.parametrize(
    ("range_header", "if_range", "answer"),
    [
        (None, None, WHOLE),
        ("bytes=0-99", None, ByteRange(206, 0, 100, "bytes 0-99/1000")),
        ("bytes=500-", None, ByteRange(206, 500, 500, "bytes 500-999/1000")),
        ("bytes=900-5000", None, ByteRange(206, 900, 100, "bytes 900-999/1000")),  # clipped
        ("bytes=-100", None, ByteRange(206, 900, 100, "bytes 900-999/1000")),  # the last 100
        ("bytes=-5000", None, ByteRange(206, 0, 1000, "bytes 0-999/1000")),
        ("bytes=999-999", None, ByteRange(206, 999, 1, "bytes 999-999/1000")),
        (" bytes=0-0 ", None, ByteRange(206, 0, 1, "bytes 0-0/1000")),
        # nothing of the file can be served
        ("bytes=1000-", None, ByteRange(416, 0, 0, "bytes */1000")),
        ("bytes=99999999-100000000", None, ByteRange(416, 0, 0, "bytes */1000")),
        ("bytes=-0", None, ByteRange(416, 0, 0, "bytes */1000")),
        # ranges not served are ignored: the whole file (RFC 9110 section 14.2)
        ("bytes=0-1,5-9", None, WHOLE),
        ("bytes=abc", None, WHOLE),
        ("bytes=9-5", None, WHOLE),
        ("items=0-5", None, WHOLE),
        ("bytes=" + "9" * 40 + "-", None, WHOLE),
        # If-Range: the same file resumes; another file, or a date, gets the whole file
        ("bytes=500-", TAG, ByteRange(206, 500, 500, "bytes 500-999/1000")),
        ("bytes=500-", etag("exports/1/b.xlsx"), WHOLE),
        ("bytes=500-", "Wed, 21 Oct 2026 07:28:00 GMT", WHOLE),
    ],
)
def test_the_answer_to_a_range(
    range_header: str | None, if_range: str | None, answer: ByteRange
) -> None:
    assert byte_range(range_header, if_range, 1000, TAG) == answer


def test_an_empty_file_has_no_range_to_serve() -> None:
    assert byte_range("bytes=0-", None, 0, TAG) == ByteRange(416, 0, 0, "bytes */0")
    assert byte_range(None, None, 0, TAG) == ByteRange(200, 0, 0, None)


def test_the_etag_is_strong_and_names_the_stored_file() -> None:
    assert TAG.startswith('"') and TAG.endswith('"') and len(TAG) == 34
    assert etag("exports/1/a.xlsx") == TAG  # the same file: the same tag
    assert etag("exports/1/b.xlsx") != TAG  # a retried task's new file: another tag
