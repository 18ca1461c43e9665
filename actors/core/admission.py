"""Admission of a new active task (create or manual retry), as one pure function.

The rules, checked in this order under the create guard lock (the store gathers the
counts in the same transaction, so concurrent creates cannot overshoot):

1. **Duplicate**: the same requester, export type and normalised parameters within the
   duplicate window return the existing active task (creates only).
2. **User limit**: a requester has at most ``max_active_per_user`` PENDING/RUNNING tasks
   (seed default 3).
3. **Type limit**: an export type has at most ``max_active_per_type`` PENDING/RUNNING tasks
   (seed default 5), which protects its Provider.
4. **Kept places** (fair share): the last ``type_reserved_places`` free places of a type
   are kept for requesters with no active task of that type. Without it two heavy users
   (3 + 2 tasks) could fill a type and lock every other user out until one of their
   exports finished. A lone user loses nothing: with the defaults the user limit (3) binds
   before the kept place (the 5th) does. ``0`` restores first come, first served.

A "requester" is the triple (tenant, app, user) that owns a task.
"""

from __future__ import annotations

from dataclasses import dataclass

from actors.core.errors import Refusal, Refused
from actors.core.outcomes import CreateOutcome, ManualRetryOutcome


@dataclass(frozen=True, slots=True)
class CreateLimits:
    """Admission settings.

    Attributes:
        duplicate_window_seconds: seconds in which an identical create returns the
            existing active task (seed: 60).
        max_active_per_user: PENDING/RUNNING tasks per requester
            (``FILE_EXPORT_MAX_ACTIVE_TASKS_PER_USER``, seed: 3).
        max_active_per_type: PENDING/RUNNING tasks per export type
            (``FILE_EXPORT_MAX_ACTIVE_TASKS_PER_TYPE``, seed: 5).
        type_reserved_places: free places of a type only a requester with no active task
            of that type may take (``FILE_EXPORT_TYPE_RESERVED_PLACES``, default 1). A
            requester with nothing of the type may always take the last place; from
            ``max_active_per_type - 1`` up, each requester gets one active task per type.
    """

    duplicate_window_seconds: float = 60
    max_active_per_user: int = 3
    max_active_per_type: int = 5
    type_reserved_places: int = 1


@dataclass(frozen=True, slots=True)
class ActiveCounts:
    """PENDING/RUNNING tasks counted under the guard lock, before the new one.

    Attributes:
        by_user: the requester's active tasks, all types.
        by_type: the export type's active tasks, all requesters.
        by_user_in_type: the requester's active tasks of this export type.
    """

    by_user: int
    by_type: int
    by_user_in_type: int


def admit(counts: ActiveCounts, limits: CreateLimits, *, duplicate: bool = False) -> CreateOutcome:
    """Decide whether one more active task may be added for a requester and type.

    Args:
        counts: the active counts before the new task.
        limits: the admission settings.
        duplicate: an identical active task exists within the duplicate window (only a
            create asks; a manual retry passes ``False``).

    Returns:
        ``CREATED`` to admit, else the first rule (in the module's order) that refuses.
    """
    if duplicate:
        return CreateOutcome.DUPLICATE
    if counts.by_user >= limits.max_active_per_user:
        return CreateOutcome.USER_LIMIT
    if counts.by_type >= limits.max_active_per_type:
        return CreateOutcome.TYPE_LIMIT
    free = limits.max_active_per_type - counts.by_type
    if counts.by_user_in_type > 0 and free <= limits.type_reserved_places:
        return CreateOutcome.TYPE_RESERVED
    return CreateOutcome.CREATED


def admission_refusal(
    outcome: CreateOutcome | ManualRetryOutcome,
    export_type: str,
    limits: CreateLimits,
    *,
    retry: bool,
) -> Refused:
    """Admission's refusal of a create or a manual retry, in words, as one error.

    The words name the limit and what to do; a create speaks to its requester ("you"), a
    manual retry to whoever retries someone's task ("the requester"): the API's and the
    operator's command alike. The envelope code of each reason is ``web/errors.py``'s.

    Args:
        outcome: a refusal of :func:`admit` (``USER_LIMIT``, ``TYPE_LIMIT``,
            ``TYPE_RESERVED``), or of a manual retry (those and ``CHANGED``).
        export_type: the export type of the task.
        limits: the admission settings in force (their numbers are quoted).
        retry: the refusal of a manual retry rather than of a create.

    Returns:
        The :class:`Refused` to raise, its reason the outcome's.

    Raises:
        ValueError: ``outcome`` admits (``CREATED``, ``RETRIED``) or is a duplicate.
    """
    try:
        reason = Refusal(outcome.value)  # the refusals share their values with Refusal's
    except ValueError:
        raise ValueError(f"{outcome!r} is not a refusal") from None
    words = {
        Refusal.USER_LIMIT: (
            f"the requester already has {limits.max_active_per_user}"
            " active export tasks; retry when one finishes"
            if retry
            else f"you already have {limits.max_active_per_user} "
            "active export tasks; wait until one finishes"
        ),
        Refusal.TYPE_LIMIT: (
            f"export type {export_type} already has {limits.max_active_per_type} active tasks; "
            "try again later"
        ),
        Refusal.TYPE_RESERVED: (
            f"export type {export_type} has only places left that are kept for users with no "
            f"active {export_type} export; try again when one of yours finishes"
        ),
        Refusal.CHANGED: "the task changed meanwhile; reload and try again",
    }
    if reason not in words:
        raise ValueError(f"{outcome!r} is not a refusal")
    return Refused(reason, words[reason])
