"""What the soaks share: a throwaway MariaDB and a work directory, service instances as
processes of their own against them, the schema made by ``export-center migrate``, an API
client, the verdict, the outbox's sends per task.

Each instance is an ``export-center serve`` process (``python -m actors``) with a data
directory of its own, as on separate hosts; its stderr goes to a log file in the soak's
work directory, one file per start. ``code`` names the checkout the processes run (the
one this file is in by default), so a soak can measure another commit's service with
today's tooling.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import trio

from actors.core.principal import AppCode
from tests.own_mariadb import OwnMariaDB
from web.auth import issue_token

ROOT = Path(__file__).resolve().parents[2]
API = "/api/platform/v1/files/export-tasks"
READY = re.compile(r"ready at (http://127\.0\.0\.1:\d+)")

#: Every send of every command, and the tasks they were for: the sum of the outbox rows'
#: send attempts (``attempt_count``, §7.4: one per claim by a publisher, whether the send
#: then went through or failed; a re-send of the same row counts again).
SENDS_PER_TASK_SQL = (
    "SELECT COALESCE(SUM(attempt_count), 0), COUNT(DISTINCT task_id) FROM {db}.file_export_outbox"
)


class Instance:
    """One service process; ``start`` it, ``stop`` it at the end (``sigkill`` to crash it).

    Args:
        name: its ``FILE_EXPORT_INSTANCE_ID``, and the name of its data directory.
        work: the soak's work directory (logs, data directories).
        env: its settings, over this process's environment.
        code: the checkout it runs.
    """

    def __init__(self, name: str, work: Path, env: dict[str, str], code: Path = ROOT) -> None:
        self.name = name
        self.work = work
        self.env = env
        self.code = code
        self.logs: list[Path] = []
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    async def start(self) -> None:
        log = self.work / f"{self.name}-{len(self.logs) + 1}.log"
        self.logs.append(log)
        env = {
            **os.environ,
            **self.env,
            "PYTHONPATH": str(self.code),
            "FILE_EXPORT_DATA_DIR": str(self.work / self.name),
            "FILE_EXPORT_INSTANCE_ID": self.name,
        }
        with open(log, "w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "actors"],
                env=env,
                cwd=self.code,
                stdout=subprocess.DEVNULL,
                stderr=out,
            )
        with trio.fail_after(60):
            while not (m := READY.search(log.read_text())):
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{self.name} exited:\n{log.read_text()[-3000:]}")
                await trio.sleep(0.1)
        self.url = m.group(1)

    def sigkill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log_text(self) -> str:
        return "".join(p.read_text() for p in self.logs)


@dataclass
class Soak:
    """A soak's world: its database, its work directory, the settings every instance
    shares (the database, one storage directory, the registry file, the demo Provider)
    and the instances, which the soak adds."""

    db: OwnMariaDB
    work: Path
    env: dict[str, str]
    instances: list[Instance] = field(default_factory=list)


@contextmanager
def soak_world(database: str, registry_yaml: str, keep: bool) -> Iterator[Soak]:
    """Start a throwaway MariaDB (``tests/own_mariadb.py``) with ``database`` and make a
    work directory with the registry file; at the end stop every instance of the soak,
    stop the database and remove the work directory, unless ``keep``."""
    db = OwnMariaDB(database)
    work = Path(tempfile.mkdtemp(prefix="ec-soak-work-"))
    env = {
        "FILE_EXPORT_DATABASE_URL": db.url,
        "FILE_EXPORT_STORAGE_DIR": str(work / "shared-files"),
        "FILE_EXPORT_REGISTRY": str(work / "registry.yaml"),
        # off by default on MySQL (production's default); the soaks export demo data
        "FILE_EXPORT_DEMO_PROVIDER": "true",
    }
    soak = Soak(db, work, env)
    try:
        db.start()
        (work / "registry.yaml").write_text(registry_yaml)
        yield soak
    finally:
        for inst in soak.instances:
            inst.stop()
        db.close()
        if keep:
            print(f"kept logs and files in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


async def migrate(env: dict[str, str], work: Path, code: Path = ROOT) -> str | None:
    """``export-center migrate`` with ``env``, from ``code``; its stderr if it failed."""
    result = await trio.run_process(
        [sys.executable, "-c", "from actors.cli.main import main; main()", "migrate"],
        env={**os.environ, **env, "PYTHONPATH": str(code), "FILE_EXPORT_DATA_DIR": str(work / "m")},
        cwd=code,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    return result.stderr.decode() if result.returncode else None


def verdict(
    checks: dict[str, int], instances: list[Instance], keep: bool, details: Sequence[str] = ()
) -> int:
    """Print the checks (each must be 0), ``details`` under them and, when the files are
    kept, where the logs are; the soak's exit status: 0 only if every check passed."""
    print("checks: " + ", ".join(f"{k} {v}" for k, v in checks.items()))
    for line in details:
        print(f"  {line}")
    if keep:
        for inst in instances:
            print(f"  logs of {inst.name}: {', '.join(str(p) for p in inst.logs)}")
    return 0 if not any(checks.values()) else 1


async def create_exports(
    instances: Sequence[Instance],
    secret: str,
    count: int,
    rows: Callable[[int], int],
    user: Callable[[int], int],
) -> list[int] | None:
    """Create ``count`` demo exports (``CUSTOMER_LIST``) one after the other, round robin
    over ``instances``: export ``i`` of ``rows(i)`` rows, by user ``user(i)``.

    Returns:
        Their task ids; ``None`` once a create is refused (printed to stderr).
    """
    started = time.monotonic()
    ids: list[int] = []
    for i in range(count):
        inst = instances[i % len(instances)]
        async with client(inst.url, secret, user(i)) as c:
            r = await c.post(
                API,
                json={"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": rows(i), "i": i}},
            )
            body = r.json()
            if body.get("code") != "200":
                print(f"create {i} refused: {body}", file=sys.stderr)
                return None
            ids.append(int(body["data"]["id"]))
    print(f"created {len(ids)} tasks in {time.monotonic() - started:.1f} s")
    return ids


def client(url: str, secret: str, user: int) -> httpx.AsyncClient:
    """An API client signed in as ``user`` (tenant 0, the platform app), allowed to export
    customers and download every file."""
    token = issue_token(
        secret,
        user_id=user,
        tenant_id=0,
        app_code=AppCode.PLATFORM,
        perms=["platform:customer:export", "platform:download:all"],
    )
    return httpx.AsyncClient(base_url=url, timeout=30, headers={"Authorization": f"Bearer {token}"})
