"""``export-center accept`` against a live instance: the real ``serve`` process on SQLite
with the demo Provider, and the command in a process of its own, as an operator runs it
(issue 12 item 4): one export end to end, the create-only / task-ids pair of a fault
drill, and a task that FAILED giving a failing verdict."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from actors.core.principal import AppCode
from tests.processes import PROCESS_SECRET, ServeProcess
from web.auth import issue_token
from web.demo_provider.data import demo_registry_yaml

pytestmark = pytest.mark.slow


async def accept(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``export-center accept`` against ``url`` with a user's token (in the
    environment, as the help text suggests), answering its completed process."""
    token = issue_token(
        PROCESS_SECRET,
        user_id=5,
        tenant_id=0,
        app_code=AppCode.PLATFORM,
        perms=["platform:customer:export"],
    )
    with trio.fail_after(120):
        done = await trio.run_process(
            [sys.executable, "-c", "from actors.cli.main import main; main()", "accept"]
            + ["--base-url", url, "--timeout", "60", *args],
            env={**os.environ, "EXPORT_CENTER_TOKEN": token},
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


async def test_accept_passes_fails_and_checks_earlier_ids(
    tmp_path: Path, processes: list[ServeProcess]
) -> None:
    # A registry that declares no parameters (as a Provider team's may not): the create
    # passes a rowCount of 0, which the Provider then refuses, a failed export.
    registry = tmp_path / "registry.yaml"
    registry.write_text(demo_registry_yaml())
    server = ServeProcess(
        tmp_path / "data", tmp_path / "serve.log", FILE_EXPORT_REGISTRY=str(registry)
    )
    processes.append(server)
    url = await server.ready()

    one = await accept(url, "--parameters", '{"rowCount": 1500}')
    assert one.returncode == 0, one.stdout + one.stderr
    [verdict] = one.stdout.splitlines()
    assert verdict.startswith("accept: PASS 1/1 exports succeeded and read back")
    # The demo table's eight typed columns, read back from the downloaded file.
    assert "1500 rows, 8 columns (number, text, text, number, boolean, date, datetime, text)" in (
        verdict
    )

    created = await accept(url, "--create-only", "--parameters", '{"rowCount": 700}')
    assert created.returncode == 0, created.stderr
    [task_id] = created.stdout.split()
    assert task_id.isdigit()
    later = await accept(url, "--task-ids", task_id)
    assert later.returncode == 0, later.stdout + later.stderr
    assert later.stdout.startswith("accept: PASS 1/1") and f"task {task_id}: 700 rows" in (
        later.stdout
    )

    failing = await accept(url, "--parameters", '{"rowCount": 0}')
    assert failing.returncode == 1
    [verdict] = failing.stdout.splitlines()
    assert verdict.startswith("accept: FAIL 0/1 exports passed; task ")
    assert "FAILED: provider demo-service answered code 400: rowCount must be" in verdict

    both = await accept(url, "--task-ids", task_id, verdict.split()[6])
    assert both.returncode == 1 and both.stdout.startswith("accept: FAIL 1/2 exports passed")
    assert "Traceback" not in server.log.read_text()


async def test_accept_fails_cleanly_when_the_service_refuses_or_is_gone(
    tmp_path: Path, processes: list[ServeProcess]
) -> None:
    server = ServeProcess(tmp_path / "data", tmp_path / "serve.log")
    processes.append(server)
    url = await server.ready()
    unknown = await accept(url, "--export-type", "NO_SUCH_TYPE")
    assert unknown.returncode == 1
    assert unknown.stdout.startswith("accept: FAIL cannot create an export: ")

    server.close()
    gone = await accept(url, "--task-ids", "123")
    assert gone.returncode == 1 and gone.stdout.startswith("accept: FAIL 0/1 exports passed; ")

    usage = await accept(url, "123")
    assert usage.returncode == 2 and "task ids are given after --task-ids" in usage.stderr


async def test_accept_load_measures_the_api_under_exports_and_reports_resources(
    tmp_path: Path, processes: list[ServeProcess]
) -> None:
    """``accept --load`` against a live instance: two exports at once (different
    parameters: identical ones would be one task), the API probed idle then under load,
    one verdict line with the figures; its exit status follows its PASS or FAIL (on a
    shared test machine either may happen: the figures are what is checked here)."""
    server = ServeProcess(tmp_path / "data", tmp_path / "serve.log")
    processes.append(server)
    url = await server.ready()

    done = await accept(
        url,
        "--load",
        "--exports",
        "2",
        "--baseline-seconds",
        "2",
        "--probe-rate",
        "30",
        "--parameters",
        '{"rowCount": 100000}',
        "--parameters",
        '{"rowCount": 99999}',
    )
    [verdict] = done.stdout.splitlines()
    assert verdict.startswith(("accept --load: PASS 2/2 exports", "accept --load: FAIL 2/2")), (
        done.stdout + done.stderr
    )
    assert done.returncode == (0 if " PASS " in verdict else 1)
    assert "(199999 rows, " in verdict
    assert re.search(
        r"API p95 [\d.]+ ms idle, [\d.]+ ms under load \([+-]\d+%, allowed \+20%\)", verdict
    )
    assert re.search(r"CPU [\d.]+ cores \(service [\d.]+ s, export workers [\d.]+ s\)", verdict)
    assert re.search(r"memory peak \d+ MB", verdict)
    assert re.search(r"Provider p95 [\d.]+ s, p99 [\d.]+ s", verdict), verdict

    same = await accept(url, "--load", "--exports", "2", "--baseline-seconds", "1")
    assert same.returncode == 1
    assert "give --parameters once per export, each different" in same.stdout
