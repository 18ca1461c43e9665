"""The query string of the task list, checked: filters, page and page size. Pure.

``GET /api/platform/v1/files/export-tasks`` takes (README, "API"):

* ``status``: repeatable, and each value may hold several statuses separated by commas
  (``status=PENDING&status=RUNNING`` or ``status=PENDING,RUNNING``); a task in any of them;
* ``exportType``: one export type;
* ``requestedFrom`` / ``requestedTo``: ISO-8601 times; tasks requested at or after
  ``requestedFrom`` and before ``requestedTo`` (a time without an offset is UTC);
* ``requestedBy``: one requester's tasks, for callers holding
  :data:`~actors.core.principal.DOWNLOAD_ALL_PERMISSION` only (any other caller sees its own
  tasks only, so the filter would be a lie: refused with 403);
* ``page`` (1-based) and ``pageSize``.

Every other parameter is single-valued: sent twice it is refused rather than resolved by
"first one wins", which would let a proxy and the service read different values.
Unknown parameters are ignored, as HTTP APIs commonly do. Refusals name the parameter
(:class:`~actors.core.errors.ParameterError`, envelope ``"400"``; the permission refusal
is :class:`~actors.core.errors.Refused`, ``"403"``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from actors.core.errors import ParameterError, Refusal, Refused
from actors.core.limits import MAX_PAGE, MAX_PAGE_SIZE
from actors.core.models import TaskStatus
from actors.core.principal import DOWNLOAD_ALL_PERMISSION

#: Page size when ``pageSize`` is absent.
DEFAULT_PAGE_SIZE = 20
#: Longest ``exportType`` the filter accepts, characters (the column's width).
MAX_EXPORT_TYPE_CHARS = 64
#: Digits of the largest ``requestedBy`` (a signed 64-bit id).
_MAX_ID = (1 << 63) - 1
#: The single-valued parameters, in the order their errors are reported.
SINGLE_VALUED = ("page", "pageSize", "exportType", "requestedFrom", "requestedTo", "requestedBy")
_STATUSES = ", ".join(TaskStatus.__members__)


@dataclass(frozen=True, slots=True)
class TaskFilter:
    """Which tasks a list page shows, beyond what the caller may see at all.

    Attributes:
        statuses: status names (sorted, distinct); empty for every status.
        export_type: one export type, or ``None`` for all.
        requested_from: tasks requested at or after this aware UTC time, or ``None``.
        requested_to: tasks requested before this aware UTC time, or ``None``.
        requested_by: one requester of the caller's tenant and app (callers holding
            ``DOWNLOAD_ALL_PERMISSION`` only), or ``None``.
    """

    statuses: tuple[str, ...] = ()
    export_type: str | None = None
    requested_from: datetime | None = None
    requested_to: datetime | None = None
    requested_by: int | None = None


@dataclass(frozen=True, slots=True)
class ListQuery:
    """The checked query of the task list (:func:`parse_list_query`).

    Attributes:
        filter: the :class:`TaskFilter`.
        page: 1-based page number.
        page_size: tasks per page.
    """

    filter: TaskFilter
    page: int
    page_size: int

    @property
    def offset(self) -> int:
        """Tasks before this page."""
        return (self.page - 1) * self.page_size


def parse_list_query(args: Mapping[str, Sequence[str]], *, sees_all: bool) -> ListQuery:
    """Check the query string of the task list.

    Args:
        args: every value of every parameter, in the order sent (a multi-dict's lists).
        sees_all: the caller holds ``DOWNLOAD_ALL_PERMISSION``
            (:func:`actors.core.access.sees_all_requesters`).

    Returns:
        The :class:`ListQuery`.

    Raises:
        ParameterError: a single-valued parameter sent more than once; an unknown status;
            an empty ``exportType`` or one longer than :data:`MAX_EXPORT_TYPE_CHARS`; a
            time that is not ISO-8601, or ``requestedFrom`` after ``requestedTo``; a
            ``requestedBy`` that is not a positive integer; a page or page size that is
            not an integer in 1..:data:`~actors.core.limits.MAX_PAGE` /
            1..:data:`~actors.core.limits.MAX_PAGE_SIZE`.
        Refused: ``requestedBy`` from a caller without ``DOWNLOAD_ALL_PERMISSION``
            (``MISSING_PERMISSION``).
    """
    single: dict[str, str | None] = {}
    for name in SINGLE_VALUED:
        values = args.get(name, ())
        if len(values) > 1:
            raise ParameterError(
                name, f"{name} may be given once (it was given {len(values)} times)"
            )
        single[name] = values[0] if values else None
    statuses = _statuses(args.get("status", ()))
    export_type = single["exportType"]
    if export_type is not None and not 1 <= len(export_type) <= MAX_EXPORT_TYPE_CHARS:
        raise ParameterError(
            "exportType", f"exportType must be 1..{MAX_EXPORT_TYPE_CHARS} characters"
        )
    requested_from = _time("requestedFrom", single["requestedFrom"])
    requested_to = _time("requestedTo", single["requestedTo"])
    if requested_from is not None and requested_to is not None and requested_from > requested_to:
        raise ParameterError("requestedFrom", "requestedFrom must not be after requestedTo")
    requested_by = _requester(single["requestedBy"], sees_all)
    page = _integer("page", single["page"], 1, MAX_PAGE)
    page_size = _integer("pageSize", single["pageSize"], DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    return ListQuery(
        TaskFilter(statuses, export_type, requested_from, requested_to, requested_by),
        page,
        page_size,
    )


def _statuses(values: Sequence[str]) -> tuple[str, ...]:
    found: set[str] = set()
    for value in values:
        for name in value.split(","):
            name = name.strip()
            if not name:
                continue  # "status=" or a trailing comma: no filter from this value
            if name not in TaskStatus.__members__:
                raise ParameterError(
                    "status", f"status must be one of {_STATUSES} (got {name[:40]!r})"
                )
            found.add(name)
    return tuple(sorted(found))


def _time(name: str, value: str | None) -> datetime | None:
    """An ISO-8601 time as aware UTC; ``None`` or ``""`` for no bound."""
    if not value:
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise ParameterError(
            name, f"{name} must be an ISO-8601 time such as 2026-12-01T08:00:00Z"
        ) from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    try:
        return at.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+01:00 has no UTC form
        raise ParameterError(name, f"{name} is out of range") from None


def _requester(value: str | None, sees_all: bool) -> int | None:
    if not value:
        return None
    if not sees_all:
        raise Refused(
            Refusal.MISSING_PERMISSION,
            f"requestedBy needs the {DOWNLOAD_ALL_PERMISSION} permission",
        )
    # ASCII digits only: int() would also take "+7", " 7" and fullwidth digits.
    if not _digits(value, 19) or not 0 < int(value) <= _MAX_ID:
        raise ParameterError("requestedBy", "requestedBy must be a user id (a positive integer)")
    return int(value)


def _integer(name: str, value: str | None, default: int, maximum: int) -> int:
    if value is None:
        return default
    if not _digits(value, len(str(maximum))) or not 1 <= int(value) <= maximum:
        raise ParameterError(name, f"{name} must be an integer in 1..{maximum}")
    return int(value)


def _digits(value: str, most: int) -> bool:
    """``value`` is 1..``most`` ASCII digits (checked before ``int()``, which refuses
    over 4,300 digits with an error of its own)."""
    return 0 < len(value) <= most and value.isascii() and value.isdigit()
