"""The orphan scan's rule (actors/core/orphans.py), case by case (issue 35 item 4): an
incomplete upload no live lease holds is aborted at once, whatever its age; a complete
file waits a day; a probe's leftover an hour; a stranger's object never."""

from __future__ import annotations

import pytest

from actors.core.models import TaskStatus
from actors.core.object_keys import object_key, probe_key
from actors.core.orphans import ORPHAN_AGE_SECONDS, PROBE_AGE_SECONDS, FileHold, is_orphan

KEY = object_key(7, "a" * 32)
NEWER = object_key(7, "b" * 32)
DAY = ORPHAN_AGE_SECONDS

RUNNING = FileHold(TaskStatus.RUNNING, KEY, lease_alive=True)
RUNNING_LEASE_GONE = FileHold(TaskStatus.RUNNING, KEY, lease_alive=False)
RETRIED = FileHold(TaskStatus.PENDING, None, lease_alive=False)  # its next attempt waits
RUNNING_AGAIN = FileHold(TaskStatus.RUNNING, NEWER, lease_alive=True)  # a new key
SUCCEEDED = FileHold(TaskStatus.SUCCEEDED, KEY, lease_alive=False)
FAILED = FileHold(TaskStatus.FAILED, KEY, lease_alive=False)


@pytest.mark.parametrize(
    ("key", "complete", "age", "hold", "orphan"),
    [
        # incomplete uploads: at once, unless a live lease holds the key
        (KEY, False, 1.0, RUNNING, False),
        (KEY, False, 1.0, RUNNING_LEASE_GONE, True),
        (KEY, False, 1.0, RETRIED, True),
        (KEY, False, 1.0, RUNNING_AGAIN, True),
        (KEY, False, 1.0, FAILED, True),
        (KEY, False, 1.0, None, True),  # no such task
        (KEY, False, 3 * DAY, RUNNING, False),  # a long run keeps its upload
        # complete files: after a day, unless a result or a run holds them
        (KEY, True, DAY - 1, None, False),
        (KEY, True, DAY, None, True),
        (KEY, True, DAY, SUCCEEDED, False),
        (KEY, True, DAY, RUNNING, False),
        (KEY, True, DAY, RUNNING_LEASE_GONE, False),  # lease recovery deletes it
        (KEY, True, DAY, FAILED, True),
        (KEY, True, DAY, RUNNING_AGAIN, True),
        # a probe's leftover after an hour; anything else never
        (probe_key(42, "c" * 32), True, PROBE_AGE_SECONDS - 1, None, False),
        (probe_key(42, "c" * 32), True, PROBE_AGE_SECONDS, None, True),
        ("exports/7/notours.xlsx", True, 10 * DAY, None, False),
        ("someone-else/file.txt", False, 10 * DAY, None, False),
    ],
)
def test_is_orphan(
    key: str, complete: bool, age: float, hold: FileHold | None, orphan: bool
) -> None:
    assert is_orphan(key, complete, age, hold) is orphan
