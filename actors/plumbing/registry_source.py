"""Where the registry comes from: a YAML file, hot-reloaded on change and on SIGHUP (§10.3).

The seed keeps the registry in Nacos with hot refresh; here the same contract is met with a
file: every reload runs the full validation of :mod:`actors.core.registry`, a valid file
replaces the registry whole, and an invalid one is rejected with an ERROR log while the old
registry stays in force ("刷新时同样执行全量校验，校验失败保留旧配置并告警").

The Provider allowlist passed in here is fixed at process start and never reloaded, so a
reload can only choose among known services (SSRF guard, docs/design-rules.md §10.3).

Reading the file strictly and telling a change by its signature are shared with the
Provider map (:mod:`actors.plumbing.watched_file`).
"""

from __future__ import annotations

import logging
import os
import pathlib
import signal
from collections.abc import Callable, Collection
from contextlib import ExitStack
from typing import Any

import trio

from actors.core.definitions import Registry
from actors.core.errors import RegistryError
from actors.core.registry import parse_registry, registry_fingerprint
from actors.plumbing.watched_file import FILE_KEY, WatchedFileError, read_yaml_file
from actors.plumbing.watched_file import file_signature as _file_signature

__all__ = [
    "RegistryHolder",
    "default_registry_path",
    "load_registry_file",
    "watch_registry",
]

logger = logging.getLogger(__name__)


def default_registry_path() -> pathlib.Path:
    """The registry shipped with the package: ``actors/defaults/registry.yaml``.

    Returns:
        An absolute filesystem path (the package is installed as plain files, which is also
        what the file watcher needs).
    """
    return pathlib.Path(__file__).resolve().parents[1] / "defaults" / "registry.yaml"


def load_registry_file(path: str | os.PathLike[str], allowed_services: Collection[str]) -> Registry:
    """Read, parse and validate a registry file. Blocking IO: call it from a thread in trio.

    Args:
        path: the YAML file.
        allowed_services: the static Provider allowlist fixed at process start.

    Returns:
        The validated registry.

    Raises:
        RegistryError: the file is missing, unreadable, not UTF-8 or not valid YAML
            (``key == "<file>"``), or its content breaks a §10.3 rule (``key`` is the YAML
            path of the offending key).
    """
    try:
        data = read_yaml_file(path, "registry file")
    except WatchedFileError as exc:
        raise RegistryError(FILE_KEY, str(exc)) from None
    return parse_registry(data, allowed_services)


class RegistryHolder:
    """The registry in force, shared by every reader and replaced whole on a valid reload.

    Readers take ``holder.current`` once per decision and use that object throughout, so
    they always see one complete registry, never a mix of old and new definitions. The
    swap is a single attribute assignment, atomic under the GIL, so reader threads are safe
    too.
    """

    __slots__ = ("_registry",)

    def __init__(self, registry: Registry) -> None:
        """Start with ``registry`` (already validated, typically by :func:`load_registry_file`).

        Args:
            registry: the initial registry.

        Raises:
            TypeError: ``registry`` is not a :class:`Registry`.
        """
        self._registry = _checked(registry)

    @property
    def current(self) -> Registry:
        """The registry in force now."""
        return self._registry

    def replace(self, registry: Registry) -> None:
        """Put ``registry`` in force for every later read of :attr:`current`.

        Args:
            registry: a validated registry.

        Raises:
            TypeError: ``registry`` is not a :class:`Registry`.
        """
        self._registry = _checked(registry)


def _checked(registry: Registry) -> Registry:
    if not isinstance(registry, Registry):
        raise TypeError(f"expected a Registry, got {type(registry).__name__}")
    return registry


def _open_sighup_receiver(stack: ExitStack) -> Any | None:
    """Open a SIGHUP receiver on ``stack``, or return ``None`` if that is impossible.

    trio only installs signal handlers from the main thread (``RuntimeError`` otherwise),
    and SIGHUP does not exist on Windows; in both cases the watcher falls back to polling.
    """
    sighup = getattr(signal, "SIGHUP", None)
    if sighup is None:
        logger.info("SIGHUP is not available on this platform; registry reload polls only")
        return None
    try:
        return stack.enter_context(trio.open_signal_receiver(sighup))
    except RuntimeError as exc:
        logger.info("registry reload polls only, SIGHUP cannot be received here: %s", exc)
        return None


async def watch_registry(
    holder: RegistryHolder,
    path: str | os.PathLike[str],
    allowed_services: Collection[str],
    *,
    poll_interval: float = 2.0,
    on_reloaded: Callable[[Registry], None] | None = None,
    on_reload_failed: Callable[[RegistryError], None] | None = None,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Trio actor: keep ``holder`` in step with the registry file until cancelled (§10.3).

    Reloads when the file's (mtime_ns, size, inode) signature changes, checked every
    ``poll_interval`` seconds, and at once on SIGHUP (even if the signature is unchanged: the
    signal is an explicit operator request). A valid file replaces the registry and is
    logged at INFO with its fingerprint; an invalid one is logged at ERROR naming the key
    and rule, the old registry stays in force, and ``on_reload_failed`` is called. A change
    that fails is reported once, not on every poll: the next attempt waits for the next
    change or SIGHUP.

    The signature is taken when the watcher starts, so the caller should load the initial
    registry just before starting it; a change in between is only noticed on the next one.

    Args:
        holder: the holder to update.
        path: the registry file.
        allowed_services: the static Provider allowlist fixed at process start.
        poll_interval: seconds between signature checks.
        on_reloaded: called with the new registry after each successful reload.
        on_reload_failed: called with the error after each rejected reload (for a metric).
        task_status: ``started()`` once the watcher is watching (signal handler installed
            and baseline signature taken), for ``nursery.start``.

    Raises:
        ValueError: ``poll_interval`` is not positive.
    """
    if poll_interval <= 0:
        raise ValueError(f"poll_interval must be positive, got {poll_interval!r}")
    file_path = pathlib.Path(path)
    allowed = frozenset(allowed_services)

    with ExitStack() as stack:
        sighup = _open_sighup_receiver(stack)
        last_signature = await trio.to_thread.run_sync(_file_signature, file_path)
        task_status.started()

        while True:
            forced = False
            if sighup is None:
                await trio.sleep(poll_interval)
            else:
                # Cancelling a pending receive loses no signal: trio keeps it queued.
                with trio.move_on_after(poll_interval):
                    await sighup.__anext__()
                    forced = True
            signature = await trio.to_thread.run_sync(_file_signature, file_path)
            if not forced and signature == last_signature:
                continue
            # Recorded before reading, whatever the outcome: a write racing the read changes
            # the signature again and triggers another reload, and a bad file is reported
            # once per change rather than on every poll.
            last_signature = signature
            reason = "SIGHUP" if forced else "file change"
            await _reload(holder, file_path, allowed, reason, on_reloaded, on_reload_failed)


async def _reload(
    holder: RegistryHolder,
    path: pathlib.Path,
    allowed: frozenset[str],
    reason: str,
    on_reloaded: Callable[[Registry], None] | None,
    on_reload_failed: Callable[[RegistryError], None] | None,
) -> None:
    """Load ``path`` once and either put it in force or keep the old registry."""
    try:
        registry = await trio.to_thread.run_sync(load_registry_file, path, allowed)
    except RegistryError as err:
        logger.error(
            "registry reload (%s) from %s rejected, keeping the previous registry "
            "(fingerprint %s): key %r: %s",
            reason,
            path,
            registry_fingerprint(holder.current),
            err.key,
            err.rule,
        )
        if on_reload_failed is not None:
            on_reload_failed(err)
        return
    previous = registry_fingerprint(holder.current)
    holder.replace(registry)
    fingerprint = registry_fingerprint(registry)
    logger.info(
        "registry reloaded (%s) from %s: %d definitions, fingerprint %s%s",
        reason,
        path,
        len(registry.definitions),
        fingerprint,
        " (unchanged)" if fingerprint == previous else f" (was {previous})",
    )
    if on_reloaded is not None:
        on_reloaded(registry)
