"""Where Provider addresses come from: a map file that follows its source, or the environment.

Two sources, one at a time (both set refuses to start, :mod:`actors.plumbing.config`):

* ``FILE_EXPORT_PROVIDER_URLS`` (a JSON object in the environment): static, read once; every
  request carries ``INTERNAL_SERVICE_TOKEN``. For deployments whose Providers do not move.
* ``FILE_EXPORT_PROVIDER_MAP`` (a YAML file, rules in :mod:`actors.core.provider.provider_map`): an
  address and optionally a token per service, reloaded without a restart. The file is
  checked when an export run starts (:meth:`ProviderMapSource.refresh`, called by the
  runner): if its signature (mtime, size, inode) changed it is read and validated whole; a
  valid file replaces the map in force, an invalid one is rejected with one ERROR line and
  ``on_reload_failed`` (the ``export_provider_map_reload_failures_total`` counter), and the
  old map stays. A rejected change is reported once: the next read waits for the next
  change.

Checking at the start of a run, rather than on a timer, is what makes the next attempt of a
queued or retried task use the new address: no run can start between the file's change and
its reload (§10.4: ``provider-service`` is taken at execution time). Every batch request
reads the map in force when it is built, so a run already going switches at its next batch
once any run has reloaded the file. A changed file is not noticed while no export starts;
nothing needs its addresses then.

The services a registry may name (the Provider allowlist, docs/design-rules.md §10.3) are fixed
when this source is built at start-up and never reloaded: a reload may change the address
and token of those services, never add or drop one (:func:`parse_provider_map`).
"""

from __future__ import annotations

import logging
import os
import pathlib
from collections.abc import Callable

import trio

from actors.core.errors import ConfigError, ProviderMapError
from actors.core.provider.provider_map import (
    ProviderEndpoint,
    ProviderMap,
    base_url_problem,
    parse_provider_map,
    provider_map_fingerprint,
)
from actors.plumbing.config import Settings
from actors.plumbing.watched_file import (
    FILE_KEY,
    FileSignature,
    WatchedFileError,
    file_signature,
    read_yaml_file,
)

__all__ = ["ProviderMapSource", "load_provider_map_file", "open_provider_map"]

logger = logging.getLogger(__name__)


def load_provider_map_file(
    path: str | os.PathLike[str], *, services: frozenset[str] | None, default_token: bool
) -> ProviderMap:
    """Read, parse and validate a Provider map file. Blocking IO.

    Args:
        path: the YAML file.
        services: ``None`` at start-up; on a reload the service names fixed at start.
        default_token: whether ``INTERNAL_SERVICE_TOKEN`` is set.

    Raises:
        ProviderMapError: the file is missing, unreadable, not UTF-8 or not valid YAML
            (``key == "<file>"``), or it breaks a rule of :mod:`actors.core.provider.provider_map`.
    """
    try:
        data = read_yaml_file(path, "provider map file")
    except WatchedFileError as exc:
        raise ProviderMapError(FILE_KEY, str(exc)) from None
    return parse_provider_map(data, services=services, default_token=default_token)


class ProviderMapSource:
    """The Provider addresses in force, for :class:`actors.pipeline.provider.client.ProviderClient`.

    :meth:`endpoint` answers from the map file's map when there is one, else from
    ``static``, a mapping read at every call (the composition root adds the demo
    Provider's own address to it once the server has bound its port).

    Args:
        static: service -> base URL from ``FILE_EXPORT_PROVIDER_URLS`` (and the demo
            Provider); requests to them carry ``INTERNAL_SERVICE_TOKEN``.
        path: the map file, or ``None`` without one (then :meth:`refresh` does nothing).
        initial: the map read from ``path`` at start-up (see :meth:`from_file`).
        signature: ``path``'s signature taken *before* ``initial`` was read, so a change
            racing that read is seen by the first :meth:`refresh`.
        default_token: whether ``INTERNAL_SERVICE_TOKEN`` is set (entries without a token
            need it).
        on_reload_failed: called with the error after each rejected reload.
    """

    def __init__(
        self,
        static: dict[str, str],
        *,
        path: str | os.PathLike[str] | None = None,
        initial: ProviderMap | None = None,
        signature: FileSignature = None,
        default_token: bool = True,
        on_reload_failed: Callable[[ProviderMapError], None] | None = None,
    ) -> None:
        if (path is None) != (initial is None):
            raise ValueError("a map file needs its initial map, and only a map file has one")
        self._static = static
        self._path = None if path is None else pathlib.Path(path)
        self._map = initial
        self._signature = signature
        self._default_token = default_token
        self._on_reload_failed = on_reload_failed
        self._lock = trio.Lock()
        #: Fixed here, never reloaded (docs/design-rules.md §10.3).
        self.services: frozenset[str] = frozenset(static) | (
            initial.services if initial is not None else frozenset()
        )

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        static: dict[str, str],
        *,
        default_token: bool,
        on_reload_failed: Callable[[ProviderMapError], None] | None = None,
    ) -> ProviderMapSource:
        """Read the map file at start-up. Blocking IO.

        Raises:
            ProviderMapError: the file breaks a rule; nothing should start.
        """
        signature = file_signature(pathlib.Path(path))
        initial = load_provider_map_file(path, services=None, default_token=default_token)
        return cls(
            static,
            path=path,
            initial=initial,
            signature=signature,
            default_token=default_token,
            on_reload_failed=on_reload_failed,
        )

    @property
    def static_urls(self) -> dict[str, str]:
        """The static map, live: an entry added to it applies to the next request."""
        return self._static

    @property
    def current(self) -> ProviderMap | None:
        """The map file's map in force, or ``None`` without a map file."""
        return self._map

    def endpoint(self, service: str) -> ProviderEndpoint | None:
        """Where ``service`` is reached now, or ``None`` when no source names it."""
        if self._map is not None:
            found = self._map.get(service)
            if found is not None:
                return found
        url = self._static.get(service)
        return None if url is None else ProviderEndpoint(url)

    async def refresh(self) -> None:
        """Reload the map file if it changed since it was last read (see the module).

        Never raises for a bad file: the old map stays, one ERROR is logged and
        ``on_reload_failed`` is called. Concurrent callers wait for one reload.
        """
        if self._path is None:
            return
        async with self._lock:
            signature = await trio.to_thread.run_sync(file_signature, self._path)
            if signature == self._signature:
                return
            # Recorded before reading, whatever the outcome: a bad file is reported once
            # per change, and a write racing the read changes the signature again.
            self._signature = signature
            await self._reload(self._path)

    async def watch(self, poll_interval: float = 2.0) -> None:
        """Trio actor: :meth:`refresh` every ``poll_interval`` seconds until cancelled, so a
        bad edit is reported (one ERROR, the counter, its alert) within seconds, not only
        when the next export starts. Runs still refresh before they start as well: a file
        changed between two polls is used by the very next attempt. Returns at once
        without a map file.

        Raises:
            ValueError: ``poll_interval`` is not positive.
        """
        if poll_interval <= 0:
            raise ValueError(f"poll_interval must be positive, got {poll_interval!r}")
        if self._path is None:
            return
        while True:
            await trio.sleep(poll_interval)
            await self.refresh()

    async def _reload(self, path: pathlib.Path) -> None:
        old = self._map
        assert old is not None
        try:
            new = await trio.to_thread.run_sync(
                lambda: load_provider_map_file(
                    path, services=old.services, default_token=self._default_token
                )
            )
        except Exception as exc:  # a file no rule foresaw must not fail the run that read it
            err = (
                exc
                if isinstance(exc, ProviderMapError)
                else ProviderMapError(FILE_KEY, f"cannot be loaded: {type(exc).__name__}: {exc}")
            )
            logger.error(
                "provider map reload from %s rejected, keeping the previous map "
                "(fingerprint %s): key %r: %s",
                path,
                provider_map_fingerprint(old)[:12],
                err.key,
                err.rule,
                extra={"key": err.key},
            )
            if self._on_reload_failed is not None:
                self._on_reload_failed(err)
            return
        self._map = new
        before, after = provider_map_fingerprint(old), provider_map_fingerprint(new)
        logger.info(
            "provider map reloaded from %s: %d services, fingerprint %s%s",
            path,
            len(new.endpoints),
            after[:12],
            " (unchanged)" if after == before else f" (was {before[:12]})",
        )


def open_provider_map(
    settings: Settings,
    on_reload_failed: Callable[[ProviderMapError], None] | None = None,
) -> ProviderMapSource:
    """The source the settings name, read and validated as at start-up: the map file
    ``FILE_EXPORT_PROVIDER_MAP`` (reloaded when it changes) or the static
    ``FILE_EXPORT_PROVIDER_URLS``. Blocking IO.

    Args:
        settings: validated settings (they never name both).
        on_reload_failed: called after each rejected reload of the map file (a metric).

    Raises:
        ConfigError: a base URL is malformed, or the map file is unreadable or breaks a
            rule; the message names the variable (and the file and key).
    """
    static: dict[str, str] = dict(settings.provider_urls)
    for service, url in static.items():
        problem = base_url_problem(url)
        if problem is not None:
            raise ConfigError(f"FILE_EXPORT_PROVIDER_URLS ({service}): {problem}")
    if settings.provider_map is None:
        return ProviderMapSource(static)
    try:
        return ProviderMapSource.from_file(
            settings.provider_map,
            static,
            default_token=bool(settings.internal_service_token),
            on_reload_failed=on_reload_failed,
        )
    except ProviderMapError as exc:
        raise ConfigError(f"FILE_EXPORT_PROVIDER_MAP ({settings.provider_map}): {exc}") from None
