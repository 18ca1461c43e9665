"""The authenticated caller (§12): who it is, its access domain and its permissions.

:class:`AppCode` is also the scope of an export type (the registry's ``app-scope``); who
may see, create, download and retry what is ``actors.core.access``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class AppCode(StrEnum):
    """Access domain of a caller and scope of an export type (§10.3 ``app-scope``)."""

    PLATFORM = "PLATFORM"
    MERCHANT = "MERCHANT"


@dataclass(frozen=True, slots=True)
class Principal:
    """The authenticated caller, from the JWT (§12).

    ``user_id`` and ``tenant_id`` are 64-bit ids; ``perms`` are permission codes such as
    ``platform:customer:export``; ``name`` what people call the user (the token's
    optional ``name`` claim), ``None`` when the token gives none: pages show the id then.
    """

    user_id: int
    tenant_id: int
    app_code: AppCode
    perms: frozenset[str] = frozenset()
    name: str | None = None

    def has(self, perm: str) -> bool:
        return perm in self.perms


#: Permission that lets a caller see and download every task of its tenant and app (§12).
DOWNLOAD_ALL_PERMISSION = "platform:download:all"
