"""``GET /api/platform/v1/files/export-types``: the export types the caller may request.

The list is the registry in force, filtered by ``actors/core/http/export_types.py`` (enabled,
app scope, permission — the same checks a create makes), in registry order. Each entry
carries what a "new export" form needs: the display name (the export type when the
registry gives none), the formats, the row limit and the parameter hints of the registry
(``display-name``, ``description``, ``parameters``; see ``actors/defaults/registry.yaml``).
"""

from __future__ import annotations

from typing import Any

from quart import Blueprint, current_app

from actors.core.http.export_types import requestable_types
from actors.core.limits import EXPORT_FORMAT
from actors.core.models import ExportDefinition
from web.auth import request_principal
from web.openapi import declare
from web.schemas import ExportTypesEnvelope
from web.serialize import envelope
from web.services import Services

PATH = "/api/platform/v1/files/export-types"

export_types = Blueprint("export_types", __name__)


def export_type_json(definition: ExportDefinition) -> dict[str, Any]:
    """One export type as the API shows it (camelCase; ``maxRows`` is a number: it is at
    most 500,000, far from 64 bits).

    Args:
        definition: a registry entry.

    Returns:
        ``{"exportType", "displayName", "description", "formats", "maxRows",
        "parameters": [{"name", "type", "required", "description"}]}``.
    """
    return {
        "exportType": definition.export_type,
        "displayName": definition.display_name or definition.export_type,
        "description": definition.description,
        "formats": [EXPORT_FORMAT],
        "maxRows": definition.max_rows,
        "parameters": [
            {
                "name": p.name,
                "type": p.type,
                "required": p.required,
                "description": p.description,
            }
            for p in definition.parameters
        ],
    }


@export_types.get(PATH)
@declare(ExportTypesEnvelope)
async def list_export_types() -> dict[str, Any]:
    """The export types the caller (bearer header or session cookie) may request."""
    services: Services = current_app.config["SERVICES"]
    principal = request_principal(services.tokens)
    definitions = services.registry.current.definitions.values()
    return envelope([export_type_json(d) for d in requestable_types(definitions, principal)])
