"""The XLSX writer's output with the file-size limit: the size is checked as bytes flow,
not after the file is complete (split from :mod:`actors.pipeline.writer.xlsx_stream`)."""

from __future__ import annotations

import os
from typing import Protocol

from actors.core.errors import ExportAbortedError, FileSizeLimitError

_MB = 1024 * 1024


def format_megabytes(limit_bytes: int) -> str:
    """``52428800`` -> ``"50 MB"``; a limit that is not whole MB also names the bytes."""
    if limit_bytes % _MB == 0:
        return f"{limit_bytes // _MB} MB"
    return f"{limit_bytes / _MB:.2f} MB ({limit_bytes} bytes)"


class Output(Protocol):
    """What the writer writes into: a seekable binary file, or an upload in parts
    (:class:`actors.storage.multipart_output.MultipartOutput`)."""

    def write(self, data: bytes, /) -> int: ...
    def seek(self, offset: int, whence: int = 0, /) -> int: ...
    def tell(self) -> int: ...
    def flush(self) -> None: ...
    def truncate(self, size: int | None = None, /) -> int: ...


class CappedOutput:
    """Write-side wrapper around ``out`` that enforces the file-size limit as bytes flow.

    The zip writer (:mod:`actors.pipeline.writer.zip_stream`) seeks back to patch each entry's
    local header and ``<dimension>`` prefix, so the size is the high-water mark of the
    position, not the sum of writes. A write that would pass the limit is refused before
    it reaches ``out``. After the first refusal or write error the stream is *dead*:
    further writes and seeks are accepted but go nowhere, so the zip writer's remaining
    calls cannot raise a second error over the first or touch ``out`` again.
    """

    def __init__(self, out: Output, max_bytes: int) -> None:
        self._out = out
        self._max_bytes = max_bytes
        self.start = out.tell()  # position of ``out`` where the XLSX begins
        self._pos = self._high = self.start
        self.failure: BaseException | None = None

    @property
    def size(self) -> int:
        """Bytes of output so far: the high-water mark relative to the start position."""
        return self._high - self.start

    def write(self, data: bytes) -> int:
        length = len(data)
        if self.failure is not None:
            self._pos += length
            return length
        if self._pos + length - self.start > self._max_bytes:
            self._fail(
                FileSizeLimitError(
                    f"file exceeds the maximum file size of {format_megabytes(self._max_bytes)}"
                )
            )
        try:
            self._pos += self._out.write(data)
        except BaseException as exc:  # e.g. disk full: go dead too, keep the first error
            self.failure = exc
            raise
        self._high = max(self._high, self._pos)
        return length

    def _fail(self, error: BaseException) -> None:
        self.failure = error
        raise error

    def kill(self) -> None:
        """Go dead without an error of our own (discard): later writes go nowhere."""
        if self.failure is None:
            self.failure = ExportAbortedError("xlsx writer discarded")

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if self.failure is not None:
            if whence == os.SEEK_SET:
                self._pos = offset
            elif whence == os.SEEK_CUR:
                self._pos += offset
            else:
                self._pos = self._high + offset
            return self._pos
        self._pos = self._out.seek(offset, whence)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def flush(self) -> None:
        if self.failure is None:
            self._out.flush()

    def hold(self, start: int, end: int) -> None:
        """Pass the zip writer's hint on (see :mod:`actors.storage.multipart_output`)."""
        if self.failure is None and (hold := getattr(self._out, "hold", None)) is not None:
            hold(start, end)

    def release(self) -> None:
        """Pass the zip writer's hint on."""
        if self.failure is None and (release := getattr(self._out, "release", None)) is not None:
            release()
