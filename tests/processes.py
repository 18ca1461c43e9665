"""The service and the Providers as real processes, for system tests: ``export-center serve``,
the guide's example Provider and the demo Provider (``tests/helpers.py`` has the builders)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import httpx
import trio

from actors.core.principal import AppCode
from tests.helpers import API
from web.auth import issue_token

# --- the real ``export-center serve`` process -------------------------------------------

PROCESS_SECRET = "process-test-secret-" + "y" * 32
READY = re.compile(r"ready at (http://127\.0\.0\.1:\d+)")


class ServeProcess:
    """``python -m actors`` in a process of its own, its log in ``log``; ``env`` adds to
    (or overrides) the environment, and a ``None`` value removes the variable. The demo
    Provider is mounted unless ``env`` says otherwise (on MySQL or RocketMQ it is off by
    default)."""

    def __init__(self, data_dir: Path, log: Path, **env: str | None) -> None:
        self.log = log
        full_env = {
            **os.environ,
            "FILE_EXPORT_DATA_DIR": str(data_dir),
            "FILE_EXPORT_HTTP_BIND": "127.0.0.1:0",
            "FILE_EXPORT_JWT_SECRET": PROCESS_SECRET,
            "FILE_EXPORT_INSTANCE_ID": f"proc-{log.stem}",
            "FILE_EXPORT_DEMO_PROVIDER": "true",
        }
        for name, value in env.items():
            if value is None:
                full_env.pop(name, None)
            else:
                full_env[name] = value
        self._log_file = open(log, "w")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "actors"],
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log_file,
        )
        self.url = ""

    async def ready(self, timeout: float = 30) -> str:
        with trio.fail_after(timeout):
            while not (m := READY.search(self.log.read_text())):
                assert self.proc.poll() is None, self.log.read_text()
                await trio.sleep(0.05)
        self.url = m.group(1)
        return self.url

    async def wait(self, timeout: float = 30) -> int:
        with trio.fail_after(timeout):
            while (code := self.proc.poll()) is None:
                await trio.sleep(0.05)
        return code

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._log_file.close()


def process_client(url: str) -> httpx.AsyncClient:
    """An HTTP client of a ``ServeProcess`` at ``url`` (user 5 of tenant 0)."""
    token = issue_token(
        PROCESS_SECRET,
        user_id=5,
        tenant_id=0,
        app_code=AppCode.PLATFORM,
        perms=["platform:customer:export"],
    )
    return httpx.AsyncClient(base_url=url, timeout=10, headers={"Authorization": f"Bearer {token}"})


async def poll_task(url: str, task_id: str, until: set[str], timeout: float = 60) -> dict:
    """Poll the task on the ``ServeProcess`` at ``url`` until its status is in ``until``."""
    async with process_client(url) as c:
        with trio.fail_after(timeout):
            while True:
                task = (await c.get(f"{API}/{task_id}")).json()["data"]
                if task["status"] in until:
                    return task
                await trio.sleep(0.05)


# --- the example Provider of docs/provider-guide.md ---------------------------------------

EXAMPLE_PROVIDER = Path(__file__).resolve().parents[1] / "examples/provider/minimal_provider.py"


def load_example_provider() -> ModuleType:
    """``examples/provider/minimal_provider.py`` imported as a module (it is no package)."""
    spec = importlib.util.spec_from_file_location("minimal_provider", EXAMPLE_PROVIDER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextmanager
def example_provider_process(token: str, log: Path) -> Iterator[str]:
    """The example Provider run as its README says, in a process of its own; yields its
    base URL. Its request log goes to ``log``."""
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, str(EXAMPLE_PROVIDER), "0"],
            env={**os.environ, "INTERNAL_SERVICE_TOKEN": token},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()  # the bound URL, or "" when it exited
            match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
            assert match, line + log.read_text()
            yield match.group(1)
        finally:
            proc.kill()
            proc.wait(30)
            assert proc.stdout is not None
            proc.stdout.close()


#: ``export-center demo-provider`` run by the CLI group itself (``python -m actors`` only serves).
DEMO_PROVIDER_COMMAND = [
    sys.executable,
    "-c",
    "from actors.cli.main import main; main()",
    "demo-provider",
]


@contextmanager
def demo_provider_process(token: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``export-center demo-provider`` in a process of its own on a free port; yields the
    process and its base URL (read from its first stderr line). Killed at the end unless it
    already exited (a test may stop it itself)."""
    proc = subprocess.Popen(
        [*DEMO_PROVIDER_COMMAND, "--bind", "127.0.0.1:0"],
        env={**os.environ, "INTERNAL_SERVICE_TOKEN": token},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # the bound URL, or "" when it exited
        match = re.search(r"demo Provider listening on (http://127\.0\.0\.1:\d+)", line)
        assert match, line + proc.stderr.read()
        yield proc, match.group(1)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
        assert proc.stderr is not None
        proc.stderr.close()
