"""Registry hot reload (§10.3): file change, SIGHUP, invalid reload kept out.

§19.1 bullet covered here: "注册表：…热刷新非法配置保留旧值".

No test sleeps on the wall clock to wait for state: each waits on a trio.Event set by the
watcher's callbacks (or by a counting wrapper around the signature probe), with
trio.fail_after only as a guard against hanging. Reading the file once is
``test_registry_source.py``'s.
"""

from __future__ import annotations

import logging
import os
import pathlib
import signal
import threading
from collections.abc import Callable
from typing import Any

import pytest
import trio

import actors.plumbing.registry_source as registry_source
from actors.core.definitions import Registry
from actors.core.errors import RegistryError
from actors.core.registry import registry_fingerprint
from actors.plumbing.registry_source import RegistryHolder, load_registry_file, watch_registry
from tests.actors.plumbing.registry_helpers import ALLOWED, batch_size, registry_yaml

GUARD_SECONDS = 10
FAST_POLL = 0.01
#: Long enough that within a test only SIGHUP can cause a reload.
NEVER_POLL = 3600.0


def replace_file(path: pathlib.Path, text: str) -> None:
    """Write ``text`` atomically (temp file + rename), as deploy tools do."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class Recorder:
    """Collects watcher callbacks and lets a test await the next one."""

    def __init__(self) -> None:
        self.reloaded: list[Registry] = []
        self.failed: list[RegistryError] = []
        self._event = trio.Event()

    def on_reloaded(self, registry: Registry) -> None:
        self.reloaded.append(registry)
        self._fire()

    def on_reload_failed(self, err: RegistryError) -> None:
        self.failed.append(err)
        self._fire()

    def _fire(self) -> None:
        self._event.set()
        self._event = trio.Event()

    def next_callback(self) -> trio.Event:
        """The event set by the next callback; take it *before* causing the reload."""
        return self._event


async def start_watcher(
    nursery: trio.Nursery,
    holder: RegistryHolder,
    path: pathlib.Path,
    recorder: Recorder,
    poll_interval: float,
) -> None:
    await nursery.start(
        lambda task_status: watch_registry(
            holder,
            path,
            ALLOWED,
            poll_interval=poll_interval,
            on_reloaded=recorder.on_reloaded,
            on_reload_failed=recorder.on_reload_failed,
            task_status=task_status,
        )
    )


# --- watch_registry --------------------------------------------------------------------------


async def test_rewritten_file_is_hot_reloaded(registry_file: pathlib.Path) -> None:
    holder = RegistryHolder(load_registry_file(registry_file, ALLOWED))
    recorder = Recorder()

    async with trio.open_nursery() as nursery:
        await start_watcher(nursery, holder, registry_file, recorder, FAST_POLL)
        reloaded = recorder.next_callback()

        replace_file(registry_file, registry_yaml(800))
        with trio.fail_after(GUARD_SECONDS):
            await reloaded.wait()
        nursery.cancel_scope.cancel()

    assert recorder.failed == []
    assert batch_size(holder.current) == 800
    assert recorder.reloaded == [holder.current]


async def test_file_rewritten_in_place_is_hot_reloaded(registry_file: pathlib.Path) -> None:
    """An in-place write (same inode) is caught by the size/mtime part of the signature."""
    holder = RegistryHolder(load_registry_file(registry_file, ALLOWED))
    recorder = Recorder()

    async with trio.open_nursery() as nursery:
        await start_watcher(nursery, holder, registry_file, recorder, FAST_POLL)
        reloaded = recorder.next_callback()

        registry_file.write_text(registry_yaml(1000), encoding="utf-8")
        with trio.fail_after(GUARD_SECONDS):
            await reloaded.wait()
            # A poll may land between truncate and write and reject the empty file; the
            # finished write changes the signature again, so a good reload must follow.
            while not recorder.reloaded:
                await recorder.next_callback().wait()
        nursery.cancel_scope.cancel()

    assert batch_size(holder.current) == 1000


async def test_invalid_rewrite_keeps_the_old_registry_and_reports_the_key(
    registry_file: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    """§19.1 注册表：热刷新非法配置保留旧值."""
    old = load_registry_file(registry_file, ALLOWED)
    holder = RegistryHolder(old)
    recorder = Recorder()
    caplog.set_level(logging.INFO, logger="actors.plumbing.registry_source")

    async with trio.open_nursery() as nursery:
        await start_watcher(nursery, holder, registry_file, recorder, FAST_POLL)
        rejected = recorder.next_callback()

        replace_file(registry_file, registry_yaml(800, path_type="ORDER_LIST"))
        with trio.fail_after(GUARD_SECONDS):
            await rejected.wait()
        nursery.cancel_scope.cancel()

    assert holder.current is old
    assert recorder.reloaded == []
    [err] = recorder.failed
    assert isinstance(err, RegistryError)
    assert err.key == "definitions.CUSTOMER_LIST.provider-path"
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "definitions.CUSTOMER_LIST.provider-path" in errors[0].getMessage()
    assert "keeping the previous registry" in errors[0].getMessage()


async def test_deleted_file_keeps_the_old_registry(registry_file: pathlib.Path) -> None:
    old = load_registry_file(registry_file, ALLOWED)
    holder = RegistryHolder(old)
    recorder = Recorder()

    async with trio.open_nursery() as nursery:
        await start_watcher(nursery, holder, registry_file, recorder, FAST_POLL)
        rejected = recorder.next_callback()

        registry_file.unlink()
        with trio.fail_after(GUARD_SECONDS):
            await rejected.wait()
        nursery.cancel_scope.cancel()

    assert holder.current is old
    assert [err.key for err in recorder.failed] == ["<file>"]


async def test_fixed_file_after_a_rejected_one_is_loaded(registry_file: pathlib.Path) -> None:
    holder = RegistryHolder(load_registry_file(registry_file, ALLOWED))
    recorder = Recorder()

    async with trio.open_nursery() as nursery:
        await start_watcher(nursery, holder, registry_file, recorder, FAST_POLL)
        rejected = recorder.next_callback()
        replace_file(registry_file, "definitions: [not, a, mapping]\n")
        with trio.fail_after(GUARD_SECONDS):
            await rejected.wait()

        reloaded = recorder.next_callback()
        replace_file(registry_file, registry_yaml(700))
        with trio.fail_after(GUARD_SECONDS):
            await reloaded.wait()
        nursery.cancel_scope.cancel()

    assert [err.key for err in recorder.failed] == ["definitions"]
    assert batch_size(holder.current) == 700


async def test_valid_reload_logs_info_with_the_fingerprint(
    registry_file: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    holder = RegistryHolder(load_registry_file(registry_file, ALLOWED))
    recorder = Recorder()
    caplog.set_level(logging.INFO, logger="actors.plumbing.registry_source")

    async with trio.open_nursery() as nursery:
        await start_watcher(nursery, holder, registry_file, recorder, FAST_POLL)
        reloaded = recorder.next_callback()
        replace_file(registry_file, registry_yaml(900))
        with trio.fail_after(GUARD_SECONDS):
            await reloaded.wait()
        nursery.cancel_scope.cancel()

    messages = [
        r.getMessage()
        for r in caplog.records
        if r.name == "actors.plumbing.registry_source" and r.levelno == logging.INFO
    ]
    assert any(registry_fingerprint(holder.current) in m for m in messages)


async def test_unchanged_file_is_not_reloaded(
    registry_file: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Polling with an unchanged signature never re-reads the file."""
    holder = RegistryHolder(load_registry_file(registry_file, ALLOWED))
    recorder = Recorder()
    loads: list[Any] = []
    real_load = registry_source.load_registry_file
    real_probe = registry_source._file_signature
    probes = 0
    five_polls_done = trio.Event()
    token = trio.lowlevel.current_trio_token()

    def counting_load(*args: Any) -> Registry:
        loads.append(args)
        return real_load(*args)

    def counting_probe(path: pathlib.Path) -> Any:
        # Runs in a worker thread: hand the event back to the trio thread.
        nonlocal probes
        probes += 1
        if probes == 6:  # the baseline probe plus five polls
            token.run_sync_soon(five_polls_done.set)
        return real_probe(path)

    monkeypatch.setattr(registry_source, "load_registry_file", counting_load)
    monkeypatch.setattr(registry_source, "_file_signature", counting_probe)

    async with trio.open_nursery() as nursery:
        await start_watcher(nursery, holder, registry_file, recorder, FAST_POLL)
        with trio.fail_after(GUARD_SECONDS):
            await five_polls_done.wait()
        nursery.cancel_scope.cancel()

    assert loads == []
    assert recorder.reloaded == [] and recorder.failed == []


async def test_sighup_triggers_a_reload(registry_file: pathlib.Path) -> None:
    """SIGHUP reloads at once; the poll interval is far too long to be the cause."""
    holder = RegistryHolder(load_registry_file(registry_file, ALLOWED))
    recorder = Recorder()

    async with trio.open_nursery() as nursery:
        # started() is only called once the SIGHUP handler is installed, so the signal
        # below cannot hit the default handler (which would terminate the test process).
        await start_watcher(nursery, holder, registry_file, recorder, NEVER_POLL)
        replace_file(registry_file, registry_yaml(600))
        reloaded = recorder.next_callback()

        os.kill(os.getpid(), signal.SIGHUP)
        with trio.fail_after(GUARD_SECONDS):
            await reloaded.wait()
        nursery.cancel_scope.cancel()

    assert batch_size(holder.current) == 600


async def test_sighup_with_an_invalid_file_keeps_the_old_registry(
    registry_file: pathlib.Path,
) -> None:
    """§19.1 注册表：热刷新非法配置保留旧值 (reload requested by SIGHUP)."""
    old = load_registry_file(registry_file, ALLOWED)
    holder = RegistryHolder(old)
    recorder = Recorder()

    async with trio.open_nursery() as nursery:
        await start_watcher(nursery, holder, registry_file, recorder, NEVER_POLL)
        replace_file(
            registry_file,
            registry_yaml(600).replace("demo-service", "evil-service"),
        )
        rejected = recorder.next_callback()

        os.kill(os.getpid(), signal.SIGHUP)
        with trio.fail_after(GUARD_SECONDS):
            await rejected.wait()
        nursery.cancel_scope.cancel()

    assert holder.current is old
    assert [err.key for err in recorder.failed] == ["definitions.CUSTOMER_LIST.provider-service"]


def test_watcher_outside_the_main_thread_falls_back_to_polling(
    registry_file: pathlib.Path,
) -> None:
    """trio cannot receive signals off the main thread; the watcher must still poll."""
    holder = RegistryHolder(load_registry_file(registry_file, ALLOWED))
    outcome: list[BaseException | int] = []

    async def scenario() -> None:
        recorder = Recorder()
        async with trio.open_nursery() as nursery:
            await start_watcher(nursery, holder, registry_file, recorder, FAST_POLL)
            reloaded = recorder.next_callback()
            replace_file(registry_file, registry_yaml(300))
            with trio.fail_after(GUARD_SECONDS):
                await reloaded.wait()
            nursery.cancel_scope.cancel()

    def run_in_thread(fn: Callable[[], Any]) -> None:
        try:
            trio.run(fn)
            outcome.append(0)
        except BaseException as exc:  # reported to the test thread below
            outcome.append(exc)

    thread = threading.Thread(target=run_in_thread, args=(scenario,))
    thread.start()
    thread.join(GUARD_SECONDS * 2)

    assert not thread.is_alive()
    assert outcome == [0], outcome
    assert batch_size(holder.current) == 300


async def test_non_positive_poll_interval_is_rejected(registry_file: pathlib.Path) -> None:
    holder = RegistryHolder(load_registry_file(registry_file, ALLOWED))

    with pytest.raises(ValueError, match="poll_interval"):
        await watch_registry(holder, registry_file, ALLOWED, poll_interval=0)
