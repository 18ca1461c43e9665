"""MultipartOutput: the XLSX uploaded in parts while it is written, with a fake uploader
(the real server: test_storage_contract.py and the export runs on S3).

The bytes assembled from the parts are exactly those a local file gets, for any part size;
memory stays at about two parts; a failed or discarded file leaves no parts behind.
"""

from __future__ import annotations

import io
import random
import zipfile
from datetime import datetime
from typing import Any

import openpyxl
import pytest

from actors.core.batch import ColumnDef, ColumnType
from actors.core.errors import LimitExceededError, StorageUnavailableError
from actors.pipeline.writer import xlsx_stream
from actors.pipeline.writer.xlsx_stream import XlsxStreamWriter
from actors.storage.multipart_output import MIN_PART_SIZE, MultipartOutput

COLUMNS = [
    ColumnDef("id", "ID", ColumnType.INTEGER),
    ColumnDef("name", "Name", ColumnType.STRING),
    ColumnDef("note", "Note", ColumnType.STRING),
]


class FakeUploader:
    """Keeps what a store would: parts by number, the assembled object, aborts."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.parts: dict[int, bytes] = {}
        self.object: bytes | None = None
        self.calls: list[str] = []
        self.aborted = False
        self._fail_on = fail_on

    def _step(self, name: str) -> None:
        self.calls.append(name)
        if name == self._fail_on:
            raise StorageUnavailableError(f"storage {name} failed: throttled")

    def put(self, data: bytes | bytearray) -> None:
        self._step("put")
        self.object = bytes(data)

    def upload(self, number: int, data: bytes | bytearray) -> None:
        self._step("upload")
        assert number not in self.parts, f"part {number} uploaded twice"
        self.parts[number] = bytes(data)

    def complete(self) -> None:
        self._step("complete")
        numbers = sorted(self.parts)
        assert numbers == list(range(1, len(numbers) + 1)), numbers
        sizes = [len(self.parts[n]) for n in numbers]
        assert len(set(sizes[:-1])) <= 1 and sizes[-1] <= sizes[0], "parts of one size, last ≤"
        self.object = b"".join(self.parts[n] for n in numbers)

    def abort(self) -> None:
        self.calls.append("abort")
        self.aborted = True
        self.parts.clear()


class _FixedNow(datetime):
    @classmethod
    def now(cls, tz: Any = None) -> _FixedNow:
        return cls(2026, 12, 5, 10, 0, 0)


@pytest.fixture(autouse=True)
def _same_zip_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # Both files of a comparison carry the same entry time.
    monkeypatch.setattr(xlsx_stream, "datetime", _FixedNow)


def rows(n: int, seed: int = 7) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return [
        {
            "id": i,
            "name": "".join(rnd.choice(letters) for _ in range(rnd.randint(1, 40))),
            "note": "".join(rnd.choice(letters + " ") for _ in range(rnd.randint(0, 200))),
        }
        for i in range(n)
    ]


def write_xlsx(out: Any, data: list[dict[str, Any]], **kwargs: Any) -> int:
    kwargs.setdefault("rows_per_sheet", 700)
    writer = XlsxStreamWriter(out, COLUMNS, max_rows=10**6, max_bytes=10**9, **kwargs)
    for start in range(0, len(data), 250):
        writer.write_rows(data[start : start + 250], batch=start // 250 + 1)
    return writer.close()


@pytest.mark.parametrize("part_size", [64, 1000, 4096, 65_536, 10**7])
def test_the_uploaded_object_is_byte_for_byte_the_local_file(part_size: int) -> None:
    data = rows(2_000)
    local = io.BytesIO()
    size = write_xlsx(local, data, compress_level=0)
    uploader = FakeUploader()
    out = MultipartOutput(uploader, part_size, small_parts=True)
    assert write_xlsx(out, data, compress_level=0) == size
    assert out.commit() == size
    assert uploader.object == local.getvalue()
    if size <= part_size:
        assert uploader.calls == ["put"]  # one request, no multipart upload
    else:
        assert uploader.calls[-1] == "complete" and "put" not in uploader.calls
    book = openpyxl.load_workbook(io.BytesIO(uploader.object), read_only=True)
    assert sum(sheet.max_row - 1 for sheet in book.worksheets) == 2_000


def test_memory_stays_at_about_two_parts_whatever_the_file_size() -> None:
    # compress level 0 (ISA-L's fastest) still compresses: use many rows for many parts
    uploader = FakeUploader()
    out = MultipartOutput(uploader, 4096, small_parts=True)
    write_xlsx(out, rows(6_000), compress_level=0, rows_per_sheet=2_500)
    out.commit()
    assert len(uploader.parts) > 20
    # the held part with the open entry's header, the part filling, and one more when
    # the held bytes straddle a part boundary
    assert out.peak_parts <= 3


def test_every_entry_of_the_uploaded_zip_passes_its_crc() -> None:
    uploader = FakeUploader()
    out = MultipartOutput(uploader, 777, small_parts=True)
    write_xlsx(out, rows(3_000), rows_per_sheet=1_000)
    out.commit()
    assert uploader.object is not None
    with zipfile.ZipFile(io.BytesIO(uploader.object)) as book:
        assert book.testzip() is None
        assert sum(name.startswith("xl/worksheets/sheet") for name in book.namelist()) == 3


def test_rewriting_bytes_already_uploaded_is_refused() -> None:
    out = MultipartOutput(FakeUploader(), 10, small_parts=True)
    out.write(b"x" * 25)  # parts 1 and 2 went up
    out.seek(5)
    with pytest.raises(RuntimeError, match="already uploaded in part 1"):
        out.write(b"y")


def test_held_bytes_stay_until_released_then_go_up_under_their_number() -> None:
    uploader = FakeUploader()
    out = MultipartOutput(uploader, 10, small_parts=True)
    out.write(b"h" * 4)
    out.hold(0, 4)
    out.write(b"d" * 30)
    assert sorted(uploader.parts) == [2, 3]  # part 1 waits
    out.seek(0)
    out.write(b"H" * 4)
    out.seek(0, 2)
    out.release()
    assert sorted(uploader.parts) == [1, 2, 3]
    out.commit()
    assert uploader.object == b"HHHH" + b"d" * 30


def test_the_size_limit_during_the_write_leaves_no_parts_behind() -> None:
    uploader = FakeUploader()
    out = MultipartOutput(uploader, 1000, small_parts=True)
    writer = XlsxStreamWriter(out, COLUMNS, max_rows=10**6, max_bytes=100_000)
    data = rows(10_000)
    with pytest.raises(LimitExceededError):
        for batch, start in enumerate(range(0, len(data), 200), 1):
            writer.write_rows(data[start : start + 200], batch=batch)
    assert uploader.parts  # it had uploaded while writing
    writer.discard()  # what the worker does with a failed file: truncate → abort
    assert uploader.aborted and not uploader.parts


def test_a_failed_upload_aborts_and_raises_the_transient_storage_error() -> None:
    uploader = FakeUploader(fail_on="complete")
    out = MultipartOutput(uploader, 100, small_parts=True)
    out.write(b"z" * 450)
    with pytest.raises(StorageUnavailableError, match="throttled"):
        out.commit()
    assert uploader.calls[-1] == "abort"


def test_truncate_elsewhere_than_the_start_is_not_supported() -> None:
    out = MultipartOutput(FakeUploader(), 100, small_parts=True)
    out.write(b"abc")
    with pytest.raises(io.UnsupportedOperation):
        out.truncate(2)


def test_parts_below_the_s3_minimum_are_refused() -> None:
    with pytest.raises(ValueError, match="at least"):
        MultipartOutput(FakeUploader(), MIN_PART_SIZE - 1)
    MultipartOutput(FakeUploader(), MIN_PART_SIZE)
