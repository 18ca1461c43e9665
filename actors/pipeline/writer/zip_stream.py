"""A minimal streaming zip writer for the XLSX package, with one patchable prefix per entry.

Why not :mod:`zipfile`: a sheet's ``<dimension ref="A1:H200001"/>`` sits at the top of its
XML, but the last row is only known at the end. zipfile compresses everything it is given,
so the top cannot be changed afterwards. Here an entry may start with a *prefix* written
as a deflate stored block (raw bytes inside the compressed data, RFC 1951 section 3.2.4), which
:meth:`ZipEntry.close` overwrites in place with text of the same length; the entry's
CRC-32 is then the combination of the final prefix's CRC with the CRC of everything after
it (:func:`crc32_combine`, zlib's algorithm). The rest of an entry is raw deflate at the
level asked for: levels 0-3 by ISA-L (``isal``, Intel's storage acceleration library, whose
deflate is ~3.5 × zlib's level 1 at a slightly smaller size on sheet XML: the export's
single largest cost after typing), levels 4-9 by zlib (smaller files, several times
slower). Both write standard deflate; CRC-32 is ISA-L's (the same value, faster). The file
is plain zip 2.0 (no Zip64, no data descriptors): sizes and CRC are patched into each
local header, which needs a seekable ``out``; an ``out`` with ``hold(start, end)`` and
``release()`` is told which bytes are still to be patched (an upload in parts keeps those
parts in memory until then).

Limits: every offset and size must stay below 4 GiB (no Zip64); ``LimitExceededError``
otherwise. The XLSX writer rolls sheets over long before an entry gets there.
"""

from __future__ import annotations

import struct
import zlib
from datetime import datetime
from typing import Protocol

from isal import isal_zlib

from actors.core.errors import FileSizeLimitError

#: Highest deflate level written by ISA-L; higher levels use zlib.
ISAL_MAX_LEVEL = 3
_LOCAL = struct.Struct("<IHHHHHIIIHH")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_END = struct.Struct("<IHHHHIIH")
_SIZES = struct.Struct("<III")
_LOCAL_SIG = 0x04034B50
_CENTRAL_SIG = 0x02014B50
_END_SIG = 0x06054B50
_VERSION = 20  # zip 2.0: deflate
_DEFLATED = 8
_ZIP32_LIMIT = 0xFFFFFFFF
_MAX_STORED = 0xFFFF  # bytes in one stored block
#: Offset of the CRC-32 field in a local file header (APPNOTE 4.3.7: signature 4, version 2,
#: flags 2, method 2, time 2, date 2); compressed and uncompressed size follow it.
_LOCAL_CRC_AT = 14
#: Bytes before a stored block's data: one header byte (BFINAL, BTYPE padded), then LEN and
#: NLEN of two bytes each (RFC 1951 section 3.2.4).
_STORED_HEADER = 5


class _Output(Protocol):
    def write(self, data: bytes, /) -> int: ...
    def seek(self, offset: int, whence: int = 0, /) -> int: ...
    def tell(self) -> int: ...


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """CRC-32 of ``A + B`` from ``crc32(A)``, ``crc32(B)`` and ``len(B)`` (zlib's method:
    apply ``len2`` zero bytes to ``crc1`` by squaring a GF(2) operator matrix).

    Args:
        crc1: CRC-32 of the first part.
        crc2: CRC-32 of the second part.
        len2: length of the second part in bytes.
    """
    if len2 <= 0:
        return crc1
    odd = [0xEDB88320] + [1 << n for n in range(31)]  # the operator for one zero bit
    even = _gf2_square(odd)  # two zero bits
    odd = _gf2_square(even)  # four zero bits
    while True:
        even = _gf2_square(odd)
        if len2 & 1:
            crc1 = _gf2_times(even, crc1)
        len2 >>= 1
        if not len2:
            break
        odd = _gf2_square(even)
        if len2 & 1:
            crc1 = _gf2_times(odd, crc1)
        len2 >>= 1
        if not len2:
            break
    return crc1 ^ crc2


def _gf2_times(matrix: list[int], vector: int) -> int:
    total = 0
    row = 0
    while vector:
        if vector & 1:
            total ^= matrix[row]
        vector >>= 1
        row += 1
    return total


def _gf2_square(matrix: list[int]) -> list[int]:
    return [_gf2_times(matrix, matrix[n]) for n in range(32)]


def _hint(out: object, name: str, *args: int) -> None:
    """Tell ``out`` which bytes are still to be patched, if it wants to know
    (:class:`actors.storage.multipart_output.MultipartOutput`; a plain file does not)."""
    method = getattr(out, name, None)
    if method is not None:
        method(*args)


def _dos_time(moment: datetime) -> tuple[int, int]:
    moment = max(moment, datetime(1980, 1, 1))
    time = (moment.hour << 11) | (moment.minute << 5) | (moment.second // 2)
    date = ((moment.year - 1980) << 9) | (moment.month << 5) | moment.day
    return time, date


def _check32(value: int, what: str) -> int:
    if value > _ZIP32_LIMIT:
        raise FileSizeLimitError(f"xlsx {what} exceeds the 4 GiB a zip without Zip64 allows")
    return value


class ZipStream:
    """Writes zip entries one after another into ``out``; :meth:`close` adds the directory.

    Not thread-safe; one entry open at a time. Errors from ``out`` propagate unchanged.
    """

    def __init__(self, out: _Output, *, level: int, modified: datetime) -> None:
        """Args:
        out: seekable binary output positioned where the zip starts.
        level: deflate level of every entry: 0..3 ISA-L, 4..9 zlib (module docstring).
        modified: the entries' modification time (local wall time, as zip keeps it).
        """
        self._out = out
        self._level = level
        self._time, self._date = _dos_time(modified)
        self._start = out.tell()
        self._directory: list[bytes] = []
        self._entry: ZipEntry | None = None

    def open(self, name: str, prefix: bytes = b"") -> ZipEntry:
        """Start entry ``name``; ``prefix`` opens its data and may be patched once on close.

        Raises:
            RuntimeError: another entry is still open.
            ValueError: the prefix is longer than one stored block (65,535 bytes).
        """
        if self._entry is not None:
            raise RuntimeError("a zip entry is still open")
        self._entry = ZipEntry(self, name.encode("ascii"), prefix)
        return self._entry

    def writestr(self, name: str, text: str) -> None:
        """Write a whole small entry."""
        entry = self.open(name)
        entry.write(text.encode("utf-8"))
        entry.close()

    def close(self) -> None:
        """Write the central directory and its end record.

        Raises:
            RuntimeError: an entry is still open.
            LimitExceededError: the directory would start beyond 4 GiB.
        """
        if self._entry is not None:
            raise RuntimeError("a zip entry is still open")
        offset = _check32(self._out.tell() - self._start, "size")
        directory = b"".join(self._directory)
        count = len(self._directory)
        self._out.write(directory)
        self._out.write(_END.pack(_END_SIG, 0, 0, count, count, len(directory), offset, 0))


class ZipEntry:
    """One entry being written: an optional stored-block prefix, then deflated data."""

    def __init__(self, stream: ZipStream, name: bytes, prefix: bytes) -> None:
        if len(prefix) > _MAX_STORED:
            raise ValueError("a patchable prefix must fit one stored block (65535 bytes)")
        self._stream = stream
        self._out = out = stream._out
        self._name = name
        self._header_at = out.tell()
        self._offset = _check32(self._header_at - stream._start, "size")
        # An output that uploads while written keeps the bytes close patches (the local
        # header, the prefix) until then; told before the first of them is written.
        patched = _LOCAL.size + len(name) + (_STORED_HEADER + len(prefix) if prefix else 0)
        _hint(out, "hold", self._header_at, self._header_at + patched)
        out.write(
            _LOCAL.pack(
                _LOCAL_SIG,
                _VERSION,
                0,
                _DEFLATED,
                stream._time,
                stream._date,
                0,
                0,
                0,
                len(name),
                0,
            )
        )
        out.write(name)
        self._data_at = out.tell()
        self._prefix = prefix
        if prefix:
            # A stored block that is not the last one: header bits 0 (BFINAL) and 00
            # (BTYPE) padded to a byte, then LEN and its one's complement.
            out.write(b"\x00" + struct.pack("<HH", len(prefix), len(prefix) ^ 0xFFFF))
            out.write(prefix)
        level = stream._level
        # Raw deflate (negative window bits): the zip entry has no zlib header.
        self._compressor = (
            isal_zlib.compressobj(level, isal_zlib.DEFLATED, -15)
            if level <= ISAL_MAX_LEVEL
            else zlib.compressobj(level, zlib.DEFLATED, -15)
        )
        self._crc = 0  # of the data after the prefix
        self._size = 0  # bytes of data after the prefix

    def write(self, data: bytes) -> None:
        """Deflate ``data`` into the entry."""
        self._crc = isal_zlib.crc32(data, self._crc)
        self._size += len(data)
        compressed = self._compressor.compress(data)
        if compressed:
            self._out.write(compressed)

    def close(self, prefix: bytes | None = None) -> None:
        """End the data, patch the prefix (same length) and the local header's sizes.

        Args:
            prefix: the final prefix, or ``None`` to keep the one written first.

        Raises:
            ValueError: the final prefix has another length.
            LimitExceededError: the entry passed 4 GiB.
        """
        out = self._out
        tail = self._compressor.flush()
        if tail:
            out.write(tail)
        end = out.tell()
        if prefix is not None and prefix != self._prefix:
            if len(prefix) != len(self._prefix):
                raise ValueError("the final prefix must keep the length of the first")
            out.seek(self._data_at + _STORED_HEADER)
            out.write(prefix)
            self._prefix = prefix
        crc = crc32_combine(isal_zlib.crc32(self._prefix), self._crc, self._size)
        compressed = _check32(end - self._data_at, "entry")
        size = _check32(len(self._prefix) + self._size, "entry")
        out.seek(self._header_at + _LOCAL_CRC_AT)  # CRC-32, compressed and uncompressed size
        out.write(_SIZES.pack(crc, compressed, size))
        out.seek(end)
        _hint(out, "release")
        stream = self._stream
        stream._directory.append(
            _CENTRAL.pack(
                _CENTRAL_SIG,
                _VERSION,
                _VERSION,
                0,
                _DEFLATED,
                stream._time,
                stream._date,
                crc,
                compressed,
                size,
                len(self._name),
                0,
                0,
                0,
                0,
                0,
                self._offset,
            )
            + self._name
        )
        stream._entry = None

    @property
    def uncompressed_size(self) -> int:
        """Bytes of data written so far, the prefix included."""
        return len(self._prefix) + self._size
