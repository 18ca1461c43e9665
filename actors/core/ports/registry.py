"""The export-type registry in force, as its readers see it (the registry is reloaded
while the service runs)."""

from __future__ import annotations

from typing import Protocol

from actors.core.definitions import Registry


class RegistryView(Protocol):
    """The export-type registry in force (``actors.plumbing.registry_source.RegistryHolder``).

    Readers take ``current`` once per decision and use that object throughout, so they never
    see a mix of an old and a reloaded registry.
    """

    @property
    def current(self) -> Registry:
        """The registry in force now."""
        ...
