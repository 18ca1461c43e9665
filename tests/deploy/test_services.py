"""The test command cleans up after itself (issue 8, item 6): ``deploy/services.sh run``
stops the servers it started — on success, failure and Ctrl-C — leaves running what was
already running, lets overlapping runs share a server, and says which in one line.

Each test uses a MariaDB of its own (a fresh data dir, a free port), never the shared
server on 3307, through the real scripts: a real ``mariadbd`` starts and must be gone
afterwards. RocketMQ goes through the same code with a slower start; it is left out here.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.own_mariadb import free_port

REPO = Path(__file__).resolve().parents[2]
SERVICES_SH = REPO / "deploy" / "services.sh"
SERVER_SH = REPO / "deploy" / "mariadb" / "server.sh"

Env = dict[str, str]


@pytest.fixture
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    """Environment for a private MariaDB; stops it afterwards whatever happened."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXPORT_CENTER_")}
    env.update(
        EXPORT_CENTER_SERVICES="mariadb",
        # short: the server's unix socket lives in this directory (108-byte limit)
        EXPORT_CENTER_MARIADB_DIR=str(tmp_path_factory.mktemp("mdb")),
        EXPORT_CENTER_MARIADB_PORT=str(free_port()),
    )
    yield env
    subprocess.run([SERVER_SH, "stop"], env=env, check=False, timeout=60)


def mariadbd_pid(env: Env) -> int | None:
    """The pid of the private server while it runs (per ``server.sh running``)."""
    out = subprocess.run(
        [SERVER_SH, "running"], env=env, capture_output=True, text=True, check=True
    ).stdout
    if out.strip() != "mariadbd":
        return None
    return int((Path(env["EXPORT_CENTER_MARIADB_DIR"]) / "mysqld.pid").read_text())


def wait_for(condition: Callable[[], object], timeout: float = 240) -> None:
    # Generous: initialising a data directory and starting mariadbd takes seconds on a
    # quiet machine and over a minute on a loaded one; the bound only stops a hang.
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def gone(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists()


def services(env: Env, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SERVICES_SH, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def last_line(stderr: str) -> str:
    return stderr.strip().splitlines()[-1]


def test_a_run_stops_the_server_it_started(env: Env) -> None:
    """The command sees a running server; afterwards that ``mariadbd`` is gone."""
    run = services(env, "run", str(SERVER_SH), "running")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "mariadbd"  # it ran while the command ran
    assert mariadbd_pid(env) is None
    assert last_line(run.stderr) == "services.sh: stopped MariaDB that this run started"


def test_a_failed_run_stops_it_too_and_keeps_the_exit_status(env: Env) -> None:
    run = services(env, "run", "sh", "-c", "exit 3")
    assert run.returncode == 3
    assert mariadbd_pid(env) is None
    assert last_line(run.stderr) == "services.sh: stopped MariaDB that this run started"


def interrupt(env: Env, when: Callable[[int], object]) -> tuple[int, str]:
    """Start ``services.sh run sleep 600`` in a session of its own, wait until
    ``when(run_pid)`` holds, then send SIGINT to its process group (what Ctrl-C in a
    terminal does). Returns the exit status and stderr."""
    proc = subprocess.Popen(
        [SERVICES_SH, "run", "sleep", "600"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        wait_for(lambda: when(proc.pid))
        os.killpg(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            # The whole session: a server it started holds stderr open, and a wait for
            # the pipe's end alone would outlast the test's timeout.
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()
    return proc.returncode, stderr


def servers_of(env: Env) -> str:
    """pids of any mariadbd on this test's data dir, pid file or not."""
    datadir = f"--datadir={env['EXPORT_CENTER_MARIADB_DIR']}/data"
    return subprocess.run(
        ["pgrep", "-f", "--", datadir], capture_output=True, text=True, check=False
    ).stdout.strip()


def test_ctrl_c_stops_the_server_it_started(env: Env) -> None:
    """Ctrl-C while the tests run: the trap stops the server (which lives in a session
    of its own, so only the trap can stop it) and the exit status says interrupted."""
    pids: list[int] = []

    def command_running(run_pid: int) -> bool:
        pid = mariadbd_pid(env)
        if pid is not None:
            pids[:] = [pid]
        probe = ["pgrep", "-s", str(run_pid), "-f", "^sleep 600$"]
        return subprocess.run(probe, capture_output=True, check=False).returncode == 0

    status, stderr = interrupt(env, command_running)
    assert status == 130
    assert pids and gone(pids[0])
    assert last_line(stderr) == "services.sh: stopped MariaDB that this run started"


def test_ctrl_c_while_the_server_starts_leaves_no_server_behind(env: Env) -> None:
    """Ctrl-C as soon as ``mariadbd`` is launched, while ``server.sh start`` still waits
    for it to answer (a window of a few hundred ms): the start is cut short before the
    run could note that it started the server, and still no ``mariadbd`` is left."""
    launched = ["pgrep", "-f", "--", f"--pid-file={env['EXPORT_CENTER_MARIADB_DIR']}/mysqld.pid"]
    status, stderr = interrupt(
        env, lambda _pid: subprocess.run(launched, capture_output=True).returncode == 0
    )
    assert status == 130, stderr
    assert servers_of(env) == "", stderr


def test_a_server_that_was_already_running_is_left_running(env: Env) -> None:
    """Started by hand (``deploy/dev services start``): a test run never stops it."""
    assert services(env, "start").returncode == 0
    pid = mariadbd_pid(env)
    assert pid is not None
    run = services(env, "run", "true")
    assert run.returncode == 0, run.stderr
    assert mariadbd_pid(env) == pid
    assert last_line(run.stderr) == "services.sh: left MariaDB running: it was already running"
    assert services(env, "stop").returncode == 0
    assert gone(pid)


def test_keep_services_keeps_what_the_run_started(env: Env) -> None:
    run = services({**env, "EXPORT_CENTER_KEEP_SERVICES": "1"}, "run", "true")
    assert run.returncode == 0, run.stderr
    assert mariadbd_pid(env) is not None
    assert "kept MariaDB running" in last_line(run.stderr)
    assert "already running" in last_line(services(env, "run", "true").stderr)


def test_overlapping_runs_share_the_server_and_the_last_one_stops_it(
    env: Env, tmp_path: Path
) -> None:
    """Run A starts the server and is still testing when run B (which found it running)
    ends: B leaves it for A, ``services stop`` refuses, and A stops it when it ends."""
    flag = tmp_path / "a-may-end"
    a = subprocess.Popen(
        [SERVICES_SH, "run", "sh", "-c", f"while [ ! -e '{flag}' ]; do sleep 0.05; done"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        notes = Path(env["EXPORT_CENTER_MARIADB_DIR"]) / "test-runs"
        wait_for(lambda: (notes / "started").exists())  # A has started it
        pid = mariadbd_pid(env)
        assert pid is not None
        b = services(env, "run", "true")
        assert b.returncode == 0, b.stderr
        assert last_line(b.stderr) == (
            f"services.sh: left MariaDB running: test run {a.pid} still uses it and will stop it"
        )
        refused = services(env, "stop")
        assert refused.returncode == 1 and f"test run {a.pid} uses it" in refused.stderr
        assert mariadbd_pid(env) == pid
        flag.touch()
        _, a_stderr = a.communicate(timeout=60)
    finally:
        if a.poll() is None:
            a.kill()
            a.communicate()
    assert a.returncode == 0
    assert gone(pid)
    assert last_line(a_stderr) == "services.sh: stopped MariaDB that this run started"
