"""Which stored objects no run will ever finish or serve: the orphan scan's rule. Pure.

The reconciler lists the storage every pass and asks, for each object it finds, what the
task its key names holds (:class:`FileHold`, read from the database). Then
(:func:`is_orphan`):

=========================  ==========================================================
object                     deleted when
=========================  ==========================================================
an incomplete upload       no live lease holds its key: its task is not RUNNING with
(S3, started, never        this key under a lease that has not expired. A run records
completed or aborted)      its key before its first byte and a new attempt writes a new
                           key, so an upload no lease holds is dead the moment it is
                           seen: aborted at once, whatever its age.
a complete file            older than :data:`ORPHAN_AGE_SECONDS` and no SUCCEEDED or
                           RUNNING task holds its key (a file being written, or a
                           result kept, is never touched).
a probe object             older than :data:`PROBE_AGE_SECONDS`: a storage probe puts,
(``.probe/…``)             reads and deletes one within a second, so an older one was
                           left by an instance killed in between.
anything else              never (a stranger's object in a shared bucket).
=========================  ==========================================================
"""

from __future__ import annotations

from dataclasses import dataclass

from actors.core.models import TaskStatus
from actors.core.object_keys import is_probe_key, task_id_of

__all__ = ["ORPHAN_AGE_SECONDS", "PROBE_AGE_SECONDS", "FileHold", "is_orphan"]

#: A complete file no task references is deleted once older than this, seconds: a day,
#: so a file of a task changed by hand meanwhile is not lost to a race.
ORPHAN_AGE_SECONDS = 24 * 3600
#: A probe object older than this was left by a probe that never finished, seconds.
PROBE_AGE_SECONDS = 3600


@dataclass(frozen=True, slots=True)
class FileHold:
    """What the task an object's key names holds now (``file_export_task``).

    Attributes:
        status: the task's status.
        object_key: the key of its current attempt's file, if one was named.
        lease_alive: it is RUNNING under a lease that has not expired (database clock).
    """

    status: TaskStatus
    object_key: str | None
    lease_alive: bool


def is_orphan(key: str, complete: bool, age_seconds: float, hold: FileHold | None) -> bool:
    """Whether the orphan scan deletes (or aborts) this object (module docstring's table).

    Args:
        key: the object's key.
        complete: False for an incomplete upload.
        age_seconds: how long ago it was written (an upload: started), by the instance
            clock that the listing's times use.
        hold: what the task its key names holds; ``None`` when there is no such task
            (or the key names none).
    """
    if is_probe_key(key):
        return age_seconds >= PROBE_AGE_SECONDS
    if task_id_of(key) is None:
        return False
    held = hold is not None and hold.object_key == key
    if not complete:
        return not (held and hold is not None and hold.lease_alive)
    if age_seconds < ORPHAN_AGE_SECONDS:
        return False
    return not (
        held and hold is not None and hold.status in (TaskStatus.SUCCEEDED, TaskStatus.RUNNING)
    )
