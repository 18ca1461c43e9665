"""The export types in force: each one's definition as the registry gives it (§10.3),
already validated, with the parameters it takes; and the :class:`Registry` that holds
them, replaced whole on a valid reload.

The registry document is validated into these by ``actors.core.registry``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from actors.core.principal import AppCode


@dataclass(frozen=True, slots=True)
class ChoiceValue:
    """One value a parameter with a fixed set of values takes (``values`` of a hint).

    Attributes:
        value: what the create request sends.
        label: what a form shows (the value itself when the registry gives none).
        translations: (language tag, label) pairs for other languages.
    """

    value: str
    label: str
    translations: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ParameterHint:
    """One parameter an export type takes, as the registry describes it for clients
    (``parameters`` of a definition): it builds forms, and the create checks a declared
    parameter's presence and JSON type (``actors/core/declared_parameters.py``).

    Attributes:
        name: the key in the create request's ``parameters`` object.
        type: one of ``actors.core.registry_parameters.PARAMETER_TYPES`` (``string``, ``date`` …).
        required: whether the Provider needs it.
        description: one line for the person filling the form ("" when none).
    """

    name: str
    type: str
    required: bool = False
    description: str = ""
    #: What a form labels it (``label``; ``None``: the name).
    label: str | None = None
    #: The only values it takes, with their labels (``values``; empty: any value).
    values: tuple[ChoiceValue, ...] = ()
    #: Inclusive bounds of an ``integer`` or ``number`` parameter (``minimum``,
    #: ``maximum``; ``None``: unbounded).
    minimum: float | None = None
    maximum: float | None = None
    #: The ``label`` and ``description`` in other languages: (language tag, label,
    #: description) with ``None`` where not given (``actors/core/registry_parameters.py``).
    translations: tuple[tuple[str, str | None, str | None], ...] = ()


@dataclass(frozen=True, slots=True)
class ExportDefinition:
    """One registry entry (§10.3), already validated.

    Attributes mirror the YAML keys: ``provider-service`` … ``batch-size``. Row counts are
    rows; ``max_attempts`` is the automatic-retry ceiling snapshotted into a task at create.
    """

    export_type: str
    provider_service: str
    provider_path: str
    required_permission: str
    app_scope: AppCode
    enabled: bool = True
    max_rows: int = 200_000
    max_attempts: int = 3
    batch_size: int = 500
    #: What people see: ``display-name`` (``None``: show the export type),
    #: ``description`` and the ``parameters`` hints, all optional in the registry.
    display_name: str | None = None
    description: str = ""
    parameters: tuple[ParameterHint, ...] = ()
    #: ``display-name`` and ``description`` in other languages: (language tag, display
    #: name, description), ``None`` where not given.
    translations: tuple[tuple[str, str | None, str | None], ...] = ()


@dataclass(frozen=True, slots=True)
class Registry:
    """The set of export definitions in force; replaced whole on a valid reload (§10.3)."""

    definitions: Mapping[str, ExportDefinition] = field(default_factory=dict)

    def get(self, export_type: str) -> ExportDefinition | None:
        """Return the definition for ``export_type`` or ``None`` if it is not registered."""
        return self.definitions.get(export_type)
