"""ZipStream: entries with a patchable stored-block prefix, read back by zipfile with every
CRC checked, and crc32_combine against zlib."""

from __future__ import annotations

import io
import zipfile
import zlib
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.pipeline.writer.zip_stream import ZipStream, crc32_combine

WHEN = datetime(2026, 12, 2, 10, 20, 30)


@settings(max_examples=200, derandomize=True, database=None)
@given(first=st.binary(max_size=300), second=st.binary(max_size=300))
def test_crc32_combine_equals_the_crc_of_the_concatenation(first: bytes, second: bytes) -> None:
    combined = crc32_combine(zlib.crc32(first), zlib.crc32(second), len(second))
    assert combined == zlib.crc32(first + second)


def test_crc32_combine_handles_long_second_parts() -> None:
    second = bytes(range(256)) * 40_000  # ~10 MB: many squarings of the operator
    assert crc32_combine(zlib.crc32(b"head"), zlib.crc32(second), len(second)) == zlib.crc32(
        b"head" + second
    )


@pytest.mark.parametrize("level", [0, 1, 3, 6, 9])  # ISA-L 0-3, zlib above
def test_entries_with_a_patched_prefix_read_back_with_valid_crcs(level: int) -> None:
    out = io.BytesIO()
    out.write(b"junk before the zip")  # the zip may start anywhere in `out`
    zip_stream = ZipStream(out, level=level, modified=WHEN)
    entry = zip_stream.open("a/sheet.xml", b"<top n='0000'/>")
    body = b"".join(b"<row r='%d'/>" % n for n in range(50_000))
    entry.write(body[:1000])
    entry.write(body[1000:])
    entry.close(b"<top n='4242'/>")
    zip_stream.writestr("plain.xml", "<x>é</x>")
    untouched = zip_stream.open("kept.xml", b"PREFIX")
    untouched.write(b"-rest")
    untouched.close()
    zip_stream.close()

    book = zipfile.ZipFile(io.BytesIO(out.getvalue()[len(b"junk before the zip") :]))
    assert book.testzip() is None  # every CRC and size matches
    assert book.read("a/sheet.xml") == b"<top n='4242'/>" + body
    assert book.read("plain.xml") == "<x>é</x>".encode()
    assert book.read("kept.xml") == b"PREFIX-rest"
    assert book.getinfo("plain.xml").date_time == (2026, 12, 2, 10, 20, 30)


def test_a_prefix_must_fit_one_stored_block_and_keep_its_length() -> None:
    zip_stream = ZipStream(io.BytesIO(), level=1, modified=WHEN)
    with pytest.raises(ValueError, match="stored block"):
        zip_stream.open("x", b"x" * 65_536)
    entry = zip_stream.open("y", b"abc")
    with pytest.raises(RuntimeError, match="still open"):
        zip_stream.open("z")
    with pytest.raises(ValueError, match="length"):
        entry.close(b"abcd")
