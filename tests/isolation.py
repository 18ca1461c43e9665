"""What one test may change for the process and must not leave to the next (issue 22 item 7).

Two kinds of state outlive a test unless something puts them back:

- **Logging.** ``export-center`` commands run in-process (click's ``CliRunner``) call
  :func:`actors.plumbing.logs.configure_logging`, which installs a handler on the root
  logger and sets the root's and the libraries' levels for the life of the process, as a
  command should. :class:`LoggingState` records the root logger (handlers, level,
  filters) and every named logger (level, handlers, filters, ``propagate``, ``disabled``)
  before a test and puts them back after it; ``tests/conftest.py`` wraps every test in it.
- **The caller's environment.** :class:`actors.plumbing.config.Settings` reads every setting from
  the environment, so a ``FILE_EXPORT_…`` variable left in a developer's shell (or a CI
  job's) would reach every test's settings and every service process a test starts.
  :func:`settings_variables` names every variable Settings reads, derived from the model
  (a setting added later is covered without a list to keep); ``tests/conftest.py`` removes
  them for every test. ``EXPORT_CENTER_TEST_…`` variables are the test command's own
  (database URL, broker prefix, fuzz sizes) and are not settings: they stay.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from actors.plumbing.config_loading import environment_variables


def settings_variables() -> frozenset[str]:
    """Every environment variable name :class:`Settings` reads, upper-case.

    pydantic-settings matches names case-insensitively (``case_sensitive`` is off), so a
    caller compares ``name.upper()`` against this set.
    """
    return frozenset(environment_variables())


def stray_settings(environ: Iterable[str] | None = None) -> list[str]:
    """Names in ``environ`` (default ``os.environ``) that :class:`Settings` would read."""
    wanted = settings_variables()
    return sorted(n for n in (os.environ if environ is None else environ) if n.upper() in wanted)


def _ours(handler: logging.Handler) -> bool:
    """False for pytest's own capture handlers: pytest adds and removes them around each
    phase (setup, call, teardown) itself, so they are neither saved nor put back."""
    return not type(handler).__module__.startswith("_pytest")


@dataclass
class _LoggerState:
    level: int
    handlers: list[logging.Handler]
    filters: list[Any]
    propagate: bool
    disabled: bool


@dataclass
class LoggingState:
    """The logging configuration of this process at one moment, to put back later."""

    loggers: dict[str, _LoggerState] = field(default_factory=dict)

    @classmethod
    def save(cls) -> LoggingState:
        state = cls()
        for name, logger in cls._all_loggers():
            state.loggers[name] = _LoggerState(
                logger.level,
                [h for h in logger.handlers if _ours(h)],
                list(logger.filters),
                logger.propagate,
                logger.disabled,
            )
        return state

    def restore(self) -> None:
        """Put every logger back; a logger created since gets what a new logger starts
        with (level NOTSET, no handlers). Handlers a test added are removed, not closed:
        their streams belong to whoever made them."""
        fresh = _LoggerState(logging.NOTSET, [], [], True, False)
        for name, logger in self._all_loggers():
            saved = self.loggers.get(name, fresh)
            for handler in [h for h in logger.handlers if _ours(h) and h not in saved.handlers]:
                logger.removeHandler(handler)
            for handler in saved.handlers:
                if handler not in logger.handlers:
                    logger.addHandler(handler)
            logger.filters[:] = saved.filters
            logger.setLevel(saved.level)
            logger.propagate = saved.propagate
            logger.disabled = saved.disabled

    @staticmethod
    def _all_loggers() -> list[tuple[str, logging.Logger]]:
        found: list[tuple[str, logging.Logger]] = [("", logging.getLogger())]
        for name, logger in list(logging.Logger.manager.loggerDict.items()):
            if isinstance(logger, logging.Logger):
                found.append((name, logger))
        return found
