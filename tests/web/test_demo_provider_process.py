"""``export-center demo-provider``: the demo Provider in a process of its own, over real HTTP."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator

import httpx
import pytest

from tests.processes import DEMO_PROVIDER_COMMAND, demo_provider_process
from web.demo_provider.app import SERVICE_TOKEN_HEADER
from web.demo_provider.data import PROVIDER_PATH

TOKEN = "process-test-token"
BODY = {
    "tenantId": "0",
    "appCode": "PLATFORM",
    "requestedBy": "1",
    "limit": 10,
    "parameters": {"rowCount": 25},
    "cursor": None,
}


@pytest.fixture
def provider() -> Iterator[tuple[subprocess.Popen[str], str]]:
    with demo_provider_process(TOKEN) as started:
        yield started


def test_serves_the_contract_and_stops_on_sigterm(
    provider: tuple[subprocess.Popen[str], str],
) -> None:
    proc, url = provider
    with httpx.Client(base_url=url, timeout=30) as client:
        ok = client.post(PROVIDER_PATH, json=BODY, headers={SERVICE_TOKEN_HEADER: TOKEN})
        refused = client.post(PROVIDER_PATH, json=BODY, headers={SERVICE_TOKEN_HEADER: "wrong"})
    assert ok.status_code == 200
    data = ok.json()["data"]
    assert [row["customerId"] for row in data["rows"]] == list(range(1, 11))
    assert data["hasMore"] is True and data["totalRows"] == 25
    assert refused.status_code == 401 and refused.json()["code"] == "401"

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0


def test_unknown_paths_and_methods_answer_the_json_envelope(
    provider: tuple[subprocess.Popen[str], str],
) -> None:
    """A Provider team probing the demo gets the envelope, never an HTML error page."""
    _, url = provider
    with httpx.Client(base_url=url, timeout=30) as client:
        missing = client.post("/internal/exports/v1/ORDERS/batches", json=BODY)
        wrong_method = client.get(PROVIDER_PATH)
    assert missing.status_code == 404
    assert missing.headers["content-type"].startswith("application/json")
    assert missing.json() == {
        "code": "404",
        "message": "no route /internal/exports/v1/ORDERS/batches: this Provider serves "
        f"POST {PROVIDER_PATH}",
        "data": None,
    }
    assert wrong_method.status_code == 405
    assert wrong_method.json()["code"] == "405" and wrong_method.json()["data"] is None


def test_refuses_to_start_without_a_service_token() -> None:
    env = {k: v for k, v in os.environ.items() if k != "INTERNAL_SERVICE_TOKEN"}
    done = subprocess.run(
        [*DEMO_PROVIDER_COMMAND, "--bind", "127.0.0.1:0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "INTERNAL_SERVICE_TOKEN must be set" in done.stderr


def test_a_taken_address_is_a_one_line_error(
    provider: tuple[subprocess.Popen[str], str],
) -> None:
    _, url = provider
    done = subprocess.run(
        [*DEMO_PROVIDER_COMMAND, "--bind", url.removeprefix("http://")],
        env={**os.environ, "INTERNAL_SERVICE_TOKEN": TOKEN},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "cannot listen: Address already in use" in done.stderr
    assert "Traceback" not in done.stderr
