"""pytest-timeout for trio tests: the test fails alone, the trio run ends cleanly.

pytest-timeout's signal method raises ``Failed`` from its ``SIGALRM`` handler wherever the
main thread is. Outside a trio run (a sync test, a sync fixture) that is what we want.
Inside one it is not: the exception may surface in the run loop's own code, the loop is
left half torn down, and every later trio test of the session fails with "Attempted to
call run() from inside a run()".

So while a trio run is active the alarm takes trio's own road for an interrupt: it raises
``SIGINT``, trio delivers ``KeyboardInterrupt`` to the run's main task at a checkpoint,
which cancels the test and its fixtures and ends the run as Ctrl-C would;
:func:`interrupt_to_failure` (a ``pytest_runtest_call`` wrapper in ``tests/conftest.py``)
turns that one ``KeyboardInterrupt`` into the test's failure, so the session goes on. If
the run does not end within :data:`GRACE_SECONDS` (a test blocked outside trio, in a
thread or a system call), pytest-timeout's thread method takes over: every thread's stack
is printed and the process exits.
"""

from __future__ import annotations

import signal
from collections.abc import Generator
from types import FrameType
from typing import Any

import pytest
import pytest_timeout
import trio

#: seconds a trio run has to end after the interrupt, before the process is stopped
GRACE_SECONDS = 30.0
_TIMED_OUT = pytest.StashKey[bool]()
_SECONDS = pytest.StashKey[float]()


def set_timer(item: pytest.Item, settings: Any) -> bool | None:
    """``pytest_timeout_set_timer`` for the signal method (``None``: not ours to set)."""
    if settings.method != "signal":
        return None
    item.stash[_TIMED_OUT] = False
    item.stash[_SECONDS] = settings.timeout

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        try:
            trio.lowlevel.current_trio_token()
        except RuntimeError:  # no trio run: pytest-timeout's own (raises Failed here)
            pytest_timeout.timeout_sigalrm(item, settings)
            return
        if item.stash[_TIMED_OUT]:  # the run ignored the interrupt for GRACE_SECONDS
            pytest_timeout.timeout_timer(item, settings)
            return
        item.stash[_TIMED_OUT] = True
        signal.setitimer(signal.ITIMER_REAL, GRACE_SECONDS)
        signal.raise_signal(signal.SIGINT)

    def cancel() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)

    item.cancel_timeout = cancel  # type: ignore[attr-defined]  # read by pytest-timeout
    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, settings.timeout)
    return True


def interrupt_to_failure(item: pytest.Item) -> Generator[None, object, object]:
    """The body of a ``pytest_runtest_call`` wrapper: a ``KeyboardInterrupt`` that the
    alarm caused fails this test; any other one still stops the session."""
    try:
        return (yield)
    except BaseException as exc:
        if not (item.stash.get(_TIMED_OUT, False) and _is_interrupt(exc)):
            raise
    # outside the except block: the failure is the timeout, not a chain from the interrupt
    seconds = item.stash[_SECONDS]
    pytest.fail(f"Timeout (>{seconds:g}s): the trio run was interrupted", pytrace=False)


def _is_interrupt(exc: BaseException) -> bool:
    if isinstance(exc, KeyboardInterrupt):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return exc.subgroup(KeyboardInterrupt) is not None
    return False
