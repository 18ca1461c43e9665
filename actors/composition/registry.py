"""The registry in force at start, and the Provider allowlist fixed with it
(docs/design-rules.md §10.3): the services a registry may name are those of the Provider
map or URLs, plus the demo Provider's when it is mounted; a reload of the registry
(:func:`actors.plumbing.registry_source.watch_registry`) can only pick among them.
"""

from __future__ import annotations

from pathlib import Path

from actors.core.definitions import Registry
from actors.core.errors import ConfigError, RegistryError
from actors.plumbing.config import Settings
from actors.plumbing.provider_map_source import ProviderMapSource, open_provider_map
from actors.plumbing.registry_source import default_registry_path, load_registry_file


def allowed_services(
    settings: Settings, providers: ProviderMapSource | None = None
) -> frozenset[str]:
    """The Provider services a registry may name, fixed at start (docs/design-rules.md §10.3):
    those of ``FILE_EXPORT_PROVIDER_MAP`` or ``FILE_EXPORT_PROVIDER_URLS``, plus the demo
    Provider's service when it is mounted.

    Args:
        providers: the source built at start; ``None`` reads the settings' (blocking IO).

    Raises:
        ConfigError: see :func:`actors.plumbing.provider_map_source.open_provider_map`.
    """
    from web.demo_provider.data import DEMO_SERVICE

    if providers is None:
        providers = open_provider_map(settings)
    demo = {DEMO_SERVICE} if settings.demo_provider else set()
    return providers.services | demo


def read_registry(settings: Settings, allowed: frozenset[str] | None = None) -> Registry:
    """The registry file in force (``FILE_EXPORT_REGISTRY``, else the built-in demo one),
    read and validated as at start-up. Blocking IO.

    Args:
        allowed: the Provider allowlist; ``None``: :func:`allowed_services`.

    Raises:
        ConfigError: the file is unreadable or breaks a rule; the message names the file.
    """
    registry_path = Path(settings.registry or default_registry_path())
    if allowed is None:
        allowed = allowed_services(settings)
    try:
        return load_registry_file(registry_path, allowed)
    except RegistryError as exc:
        raise ConfigError(f"FILE_EXPORT_REGISTRY ({registry_path}): {exc}") from None
