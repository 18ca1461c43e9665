"""A seekable output that uploads while it is written: the XLSX streamed to an object
store in parts, with about two parts in memory and never a local copy.

The zip writer (:mod:`actors.pipeline.writer.zip_stream`) writes forward, except that it goes
back to patch the entry that is open: its local header (CRC and sizes) and its
``<dimension>`` prefix, a few hundred bytes at the entry's start. Before it writes past
them it says so with :meth:`MultipartOutput.hold`, and :meth:`MultipartOutput.release`
once they are final. So the file is cut into fixed parts of ``part_size`` bytes: part
*n* holds bytes ``[(n-1)·size, n·size)``; a part is uploaded as soon as it is full and
outside the held range, and the part with the open entry's header waits in memory until
the entry closes, then goes up under its own number (S3 assembles parts by number, not by
arrival). The zip bytes are exactly those a local file gets.

A file that fits one part is stored with one PUT at :meth:`commit` (no multipart upload
at all). :meth:`abort` — or a ``truncate`` to the start, which is how the XLSX writer
discards a failed file — aborts the upload so no parts stay behind; a worker killed
before either leaves an incomplete upload, which the reconciler aborts by the run's key.

Rewriting a byte of a part already uploaded is a bug of the caller and raises
``RuntimeError``.
"""

from __future__ import annotations

import io
import os
from typing import Protocol

#: S3's smallest part but the last.
MIN_PART_SIZE = 5 * 1024 * 1024


class PartUploader(Protocol):
    """Carries the parts to the store (:class:`actors.storage.s3_client.S3PartUploader`)."""

    def put(self, data: bytes | bytearray) -> None:
        """The whole object, one request."""
        ...

    def upload(self, number: int, data: bytes | bytearray) -> None:
        """Part ``number`` (1-based), in any order."""
        ...

    def complete(self) -> None:
        """Assemble the parts uploaded."""
        ...

    def abort(self) -> None:
        """Drop the parts uploaded (nothing if none was)."""
        ...


class MultipartOutput:
    """The file-like object the XLSX writer writes into (``write``, ``seek``, ``tell``,
    ``flush``, ``truncate``), plus :meth:`hold`, :meth:`release`, :meth:`commit` and
    :meth:`abort`.

    Args:
        uploader: where parts go.
        part_size: bytes per part; at least :data:`MIN_PART_SIZE` unless ``small_parts``
            (tests with a fake uploader).

    Raises:
        ValueError: ``part_size`` below S3's minimum.
    """

    def __init__(
        self, uploader: PartUploader, part_size: int, *, small_parts: bool = False
    ) -> None:
        if part_size < (1 if small_parts else MIN_PART_SIZE):
            raise ValueError(f"a part must be at least {MIN_PART_SIZE} bytes, not {part_size}")
        self._uploader = uploader
        self._size = part_size
        self._parts: dict[int, bytearray] = {}  # 0-based index -> bytes not yet uploaded
        self._uploaded: set[int] = set()
        self._pos = 0
        self._high = 0  # bytes in the file: the highest position written
        self._held: tuple[int, int] | None = None
        self._finished = False
        #: Parts in memory at once, at most (the figure the issue bounds: about two).
        self.peak_parts = 0

    # -- the file interface -------------------------------------------------------------

    def write(self, data: bytes, /) -> int:
        """Write ``data`` at the position; upload the parts it fills that are not held."""
        if self._finished:
            raise ValueError("write to a finished upload")
        view = memoryview(data).cast("B")
        pos = self._pos
        size = self._size
        while view:
            index, offset = divmod(pos, size)
            if index in self._uploaded:
                raise RuntimeError(
                    f"rewrite of bytes at {pos}, already uploaded in part {index + 1}"
                )
            buffer = self._parts.get(index)
            if buffer is None:
                buffer = self._parts[index] = bytearray()
            if offset > len(buffer):  # a hole (never made by the zip writer)
                buffer.extend(bytes(offset - len(buffer)))
            n = min(len(view), size - offset)
            buffer[offset : offset + n] = view[:n]
            pos += n
            view = view[n:]
            self.peak_parts = max(self.peak_parts, len(self._parts))
            if offset + n == size and pos > self._high:  # a part filled: send it now
                self._high = pos
                self._upload_ready()
        self._pos = pos
        self._high = max(self._high, pos)
        self._upload_ready()
        return len(data)

    def seek(self, offset: int, whence: int = os.SEEK_SET, /) -> int:
        if whence == os.SEEK_SET:
            pos = offset
        elif whence == os.SEEK_CUR:
            pos = self._pos + offset
        elif whence == os.SEEK_END:
            pos = self._high + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if pos < 0:
            raise ValueError("negative seek position")
        self._pos = pos
        return pos

    def tell(self) -> int:
        return self._pos

    def flush(self) -> None:
        """Nothing to do: parts go up when full, the rest at :meth:`commit`."""

    def truncate(self, size: int | None = None, /) -> int:
        """Only to nothing (the XLSX writer discarding its file): abort the upload.

        Raises:
            io.UnsupportedOperation: any other size.
        """
        size = self._pos if size is None else size
        if size != 0:
            raise io.UnsupportedOperation("an upload can only be truncated to nothing")
        self.abort()
        return 0

    # -- the zip writer's hints ---------------------------------------------------------

    def hold(self, start: int, end: int) -> None:
        """Bytes ``[start, end)`` will be written again: keep their parts in memory."""
        self._held = (start, end)

    def release(self) -> None:
        """The held bytes are final: upload their parts once full."""
        self._held = None
        self._upload_ready()

    # -- the end ------------------------------------------------------------------------

    def commit(self) -> int:
        """Upload what is left and make the object exist; return its size in bytes.

        Raises:
            StorageUnavailableError: from the uploader (the upload is aborted first, best
                effort).
        """
        if self._finished:
            raise ValueError("the upload is finished already")
        self._held = None
        try:
            if not self._uploaded and len(self._parts) <= 1:
                self._uploader.put(self._parts.get(0, bytearray()))
            else:
                for index in sorted(self._parts):
                    self._upload(index)
                self._uploader.complete()
        except BaseException:
            self.abort()
            raise
        self._finished = True
        return self._high

    def abort(self) -> None:
        """Drop everything: the parts in memory and those uploaded. Idempotent; raises
        only when the store refuses the abort (the reconciler retries by key)."""
        self._finished = True
        self._parts.clear()
        self._uploader.abort()

    # -- inside -------------------------------------------------------------------------

    def _upload_ready(self) -> None:
        size = self._size
        full = self._high // size  # parts before this index are full
        for index in [i for i in self._parts if i < full]:
            if not self._is_held(index):
                self._upload(index)

    def _is_held(self, index: int) -> bool:
        if self._held is None:
            return False
        start, end = self._held
        return start < (index + 1) * self._size and index * self._size < end

    def _upload(self, index: int) -> None:
        data = self._parts.pop(index)
        self._uploader.upload(index + 1, data)
        self._uploaded.add(index)
