"""Where an export file is stored: the object-key rule and the file's content type.

A key is ``exports/{taskId}/{nonce}.xlsx``: the task's id, then 32 lowercase hex digits
drawn afresh for each execution attempt, so a new attempt never writes over an earlier
one's file and an attempt's file is known by its key alone (§11.1, §15). Keys
are made and checked by the service only: every storage adapter refuses a key that does
not match before it touches a file system or a bucket, so no caller can reach a path
outside the storage root.

A storage probe's short-lived object has a key of its own (:func:`probe_key`), under
``.probe/``: the orphan scan removes one a killed probe left behind.

Pure: the nonce is an argument (the storage room draws it, :mod:`actors.storage.keys`).
"""

from __future__ import annotations

import re

__all__ = [
    "OBJECT_KEY_PATTERN",
    "PROBE_PREFIX",
    "XLSX_CONTENT_TYPE",
    "is_probe_key",
    "object_key",
    "probe_key",
    "task_id_of",
    "validate_object_key",
    "validate_stored_key",
]

#: A service-generated key; always applied with ``fullmatch`` (``$`` with ``match`` would
#: also accept the key followed by a newline). Group 1 is the task id, group 2 the nonce.
OBJECT_KEY_PATTERN = re.compile(r"exports/(\d{1,20})/([0-9a-f]{32})\.xlsx")
#: Where storage probes put their short-lived objects (beside ``exports/``, never in it).
PROBE_PREFIX = ".probe/"
_PROBE_PATTERN = re.compile(r"\.probe/(\d{1,10})-([0-9a-f]{32})")
#: The media type of every stored export file.
XLSX_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def object_key(task_id: int, nonce: str) -> str:
    """The key of one attempt's file: ``exports/{task_id}/{nonce}.xlsx``.

    Args:
        task_id: the task's id (positive).
        nonce: 32 lowercase hex digits, new for each attempt (``uuid4().hex``).

    Raises:
        ValueError: the result would not be a valid key (a negative id, a bad nonce).
    """
    return validate_object_key(f"exports/{task_id}/{nonce}.xlsx")


def validate_object_key(key: str) -> str:
    """Return ``key`` if it is a service-generated key.

    Raises:
        ValueError: any other string (a path, a traversal, a key with a newline).
    """
    if not OBJECT_KEY_PATTERN.fullmatch(key):
        raise ValueError(f"invalid object key {key!r}")
    return key


def task_id_of(key: str) -> int | None:
    """The task id a service-generated key belongs to; ``None`` for any other string
    (a folder marker, a stranger's object in a shared bucket)."""
    match = OBJECT_KEY_PATTERN.fullmatch(key)
    return int(match.group(1)) if match else None


def probe_key(pid: int, nonce: str) -> str:
    """The key of one storage probe's object: ``.probe/{pid}-{nonce}``.

    Args:
        pid: the probing process's id (instances sharing a store never collide).
        nonce: 32 lowercase hex digits, new for each probe.

    Raises:
        ValueError: not a valid probe key.
    """
    key = f"{PROBE_PREFIX}{pid}-{nonce}"
    if not _PROBE_PATTERN.fullmatch(key):
        raise ValueError(f"invalid probe key {key!r}")
    return key


def is_probe_key(key: str) -> bool:
    """Whether ``key`` is a storage probe's object."""
    return _PROBE_PATTERN.fullmatch(key) is not None


def validate_stored_key(key: str) -> str:
    """Return ``key`` if it is a service-generated key or a probe's (what a delete may be
    asked to remove).

    Raises:
        ValueError: any other string.
    """
    if not (OBJECT_KEY_PATTERN.fullmatch(key) or is_probe_key(key)):
        raise ValueError(f"invalid object key {key!r}")
    return key
