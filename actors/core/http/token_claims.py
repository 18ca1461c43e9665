"""Who a verified token names: its claims parsed strictly, in one place (design-rules §12).

The signature, ``exp`` in the future and the issuer and audience are the token library's
checks (``web/auth.py``); what the claims *mean* is decided here, for every key a token may
be signed with. The rule is that a claim reads one way only:

* a user or tenant id is a JSON string of ASCII digits in canonical form (``"0"``, or no
  leading zero) or a JSON integer (not ``true``, not ``1.9``), and fits a signed 64-bit
  id. ``"٣٠٠"``, ``"３００"``, ``"3_0_0"``, ``" 300"``, ``"0300"`` are refused: Python's
  ``int()`` reads them all as 300 and would make one caller of several spellings;
* the app code is one of :class:`~actors.core.principal.AppCode`'s values, as a string;
* the permissions are a list of strings (absent: none);
* ``exp`` is a number no later than :data:`MAX_EXP` (9999-12-31 23:59:59 UTC), the last
  second a date can show: a later one made the session routes fail with HTTP 500;
* no claim appears twice in the payload (:func:`duplicated_claims`): JSON parsers keep the
  last of two ``tenant_id`` members and some keep the first, so a token read one way here
  could be read another way by a gateway in front.

The claim names are the defaults of :class:`ClaimNames` (what ``export-center token``
issues) unless an identity provider names them otherwise (``FILE_EXPORT_JWT_CLAIM_*``).
Pure: no IO.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from actors.core.principal import AppCode, Principal
from actors.core.text import escape_control

#: 9999-12-31T23:59:59Z in epoch seconds: the latest ``exp`` accepted.
MAX_EXP = 253_402_300_799
#: The largest id: a signed 64-bit column holds it.
MAX_ID = 2**63 - 1
_CANONICAL_ID = re.compile(r"0|[1-9][0-9]{0,18}")
_APP_CODES = frozenset(a.value for a in AppCode)


class ClaimError(ValueError):
    """A claim is missing or does not read one way only; the message names it."""


@dataclass(frozen=True)
class ClaimNames:
    """Which claim carries what (identity providers name them differently)."""

    user: str = "sub"
    tenant: str = "tenant_id"
    app: str = "app_code"
    perms: str = "perms"
    #: Optional: what people call the user (OpenID Connect's standard claim).
    name: str = "name"


def parse_id(value: Any, claim: str) -> int:
    """A 64-bit id from a claim value.

    Args:
        value: a JSON string of canonical ASCII digits, or a JSON integer.
        claim: the claim's name, for the message.

    Returns:
        The id, 0 ≤ id ≤ :data:`MAX_ID`.

    Raises:
        ClaimError: anything else (booleans, floats, other digits, signs, spaces,
            underscores, leading zeros, out of range).
    """
    if type(value) is int:
        number = value
    elif type(value) is str and _CANONICAL_ID.fullmatch(value):
        number = int(value)
    else:
        raise ClaimError(f"{claim} must be an id: ASCII digits without a leading zero")
    if not 0 <= number <= MAX_ID:
        raise ClaimError(f"{claim} must be a 64-bit id")
    return number


#: Longest display name kept, characters (the column's size).
MAX_NAME_CHARS = 64


def parse_name(value: Any, claim: str) -> str | None:
    """A display name from the optional ``name`` claim.

    Args:
        value: a JSON string, or absent/null.
        claim: the claim's name, for the message.

    Returns:
        The name on one line (control characters escaped, spaces trimmed), cut to
        :data:`MAX_NAME_CHARS`; ``None`` when absent, null or blank.

    Raises:
        ClaimError: a value that is not a string.
    """
    if value is None:
        return None
    if type(value) is not str:
        raise ClaimError(f"{claim} must be a string")
    name = escape_control(value).strip()[:MAX_NAME_CHARS].strip()
    return name or None


def duplicated_claims(token: str) -> list[str]:
    """The names of the claims a token's payload holds more than once, at any depth.

    Args:
        token: a compact JWT (``header.payload.signature``); its signature is checked
            elsewhere, this reads the payload's JSON text only.

    Returns:
        The duplicated member names, in the order met, escaped; ``[]`` when none, or
        when the payload is not readable JSON (the token library refuses those).
    """
    segments = token.split(".")
    if len(segments) != 3:
        return []
    payload = segments[1]
    try:
        text = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    except (binascii.Error, ValueError):
        return []
    seen: list[str] = []

    def pairs(members: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in members]
        seen.extend(escape_control(k) for k in dict.fromkeys(keys) if keys.count(k) > 1)
        return dict(members)

    try:
        json.loads(text, object_pairs_hook=pairs)
    except ValueError:
        return []
    return seen


def parse_claims(
    claims: Mapping[str, Any], names: ClaimNames = ClaimNames()
) -> tuple[Principal, int]:
    """The caller and the token's expiry from verified claims.

    Args:
        claims: the token's payload, its signature and ``exp`` already verified.
        names: which claim carries the user, tenant, app code and permissions.

    Returns:
        The principal and ``exp`` (epoch seconds, whole).

    Raises:
        ClaimError: a claim is missing or malformed (module rules); the message names it.
    """
    for claim in (names.user, names.tenant, names.app, "exp"):
        if claim not in claims:
            raise ClaimError(f"the token has no {claim} claim")
    perms = claims.get(names.perms, [])
    if type(perms) is not list or not all(type(p) is str for p in perms):
        raise ClaimError(f"{names.perms} must be a list of strings")
    app = claims[names.app]
    if type(app) is not str or app not in _APP_CODES:
        allowed = ", ".join(a.value for a in AppCode)
        raise ClaimError(f"{names.app} must be one of {allowed}")
    exp = claims["exp"]
    if type(exp) not in (int, float) or not exp <= MAX_EXP:
        raise ClaimError("exp must be a time no later than 9999-12-31 23:59:59 UTC")
    principal = Principal(
        user_id=parse_id(claims[names.user], names.user),
        tenant_id=parse_id(claims[names.tenant], names.tenant),
        app_code=AppCode(app),
        perms=frozenset(perms),
        name=parse_name(claims.get(names.name), names.name),
    )
    return principal, int(exp)
