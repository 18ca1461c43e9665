"""Which export types a caller may request: the list behind ``GET .../export-types``.

A type is listed exactly when a create of it would pass the registry checks of
:func:`actors.core.access.authorise` — registered, enabled, in the caller's app scope and
covered by the caller's permissions — so the list never offers a type the create would
refuse, and never hides one it would accept.
"""

from __future__ import annotations

from collections.abc import Iterable

from actors.core.access import authorise
from actors.core.definitions import ExportDefinition
from actors.core.errors import RequestError
from actors.core.principal import Principal


def requestable_types(
    definitions: Iterable[ExportDefinition], principal: Principal
) -> list[ExportDefinition]:
    """The definitions ``principal`` may create tasks of, in registry order.

    Args:
        definitions: the registry in force, in document order.
        principal: the authenticated caller.

    Returns:
        Those that :func:`~actors.core.access.authorise` accepts for the caller.
    """
    allowed = []
    for definition in definitions:
        try:
            authorise(definition.export_type, definition, principal)
        except RequestError:
            continue
        allowed.append(definition)
    return allowed
