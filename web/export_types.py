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

from actors.core.definitions import ExportDefinition, ParameterHint
from actors.core.http.export_types import requestable_types
from actors.core.limits import EXPORT_FORMAT
from web.auth import request_principal
from web.dependencies import Dependencies
from web.openapi import AUTH, declare
from web.schemas import ExportTypesEnvelope
from web.serialize import envelope

PATH = "/api/platform/v1/files/export-types"

export_types = Blueprint("export_types", __name__)


def export_type_json(definition: ExportDefinition) -> dict[str, Any]:
    """One export type as the API shows it (camelCase; ``maxRows`` is a number: it is at
    most 500,000, far from 64 bits).

    Args:
        definition: a registry entry.

    Returns:
        ``{"exportType", "displayName", "description", "formats", "maxRows",
        "parameters": [{"name", "type", "required", "label", "description", "values":
        [{"value", "label", "translations"}], "minimum", "maximum", "translations"}],
        "translations"}``: ``translations`` maps a language tag (``zh-CN``) to the texts
        given in it (``displayName``, ``description``; a parameter's ``label``,
        ``description``; a value's label), for a page in that language.
    """
    return {
        "exportType": definition.export_type,
        "displayName": definition.display_name or definition.export_type,
        "description": definition.description,
        "formats": [EXPORT_FORMAT],
        "maxRows": definition.max_rows,
        "parameters": [_parameter_json(p) for p in definition.parameters],
        "translations": {
            tag: _texts(displayName=name, description=description)
            for tag, name, description in definition.translations
        },
    }


def _texts(**texts: str | None) -> dict[str, str]:
    return {key: text for key, text in texts.items() if text is not None}


def _parameter_json(hint: ParameterHint) -> dict[str, Any]:
    return {
        "name": hint.name,
        "type": hint.type,
        "required": hint.required,
        "label": hint.label or hint.name,
        "description": hint.description,
        "values": [
            {"value": c.value, "label": c.label, "translations": dict(c.translations)}
            for c in hint.values
        ],
        "minimum": hint.minimum,
        "maximum": hint.maximum,
        "translations": {
            tag: _texts(label=label, description=description)
            for tag, label, description in hint.translations
        },
    }


@export_types.get(PATH)
@declare(ExportTypesEnvelope, http=AUTH)
async def list_export_types() -> dict[str, Any]:
    """The export types the caller (bearer header or session cookie) may request."""
    deps: Dependencies = current_app.config["DEPENDENCIES"]
    principal = request_principal(deps.tokens)
    definitions = deps.registry.current.definitions.values()
    return envelope([export_type_json(d) for d in requestable_types(definitions, principal)])
