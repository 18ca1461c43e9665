"""The download center page in a real Chromium (headless, driven by Selenium) against the
whole service on SQLite with the demo Provider: create, watch progress, download, cancel,
retry, hostile text, token handling.

Chromium and chromium-driver are installed by the test command when missing
(deploy/ensure-commands.sh); these tests never skip them.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import openpyxl
import pytest
import trio
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service as ChromeService
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from actors.config import Settings
from actors.core.models import AppCode
from actors.runtime import Runtime
from tests.helpers import running_service
from web.auth import issue_token
from web.page import CONTENT_SECURITY_POLICY

API = "/api/platform/v1/files/export-tasks"
PERMS = ("platform:customer:export",)
#: Longest wait for the page to show a state, seconds (the page refreshes every second
#: while a task is active).
WAIT = 60
#: Flags for a closed network: without them Chromium keeps trying Google's hosts.
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def _program(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(
            f"'{name}' is not on PATH. Run the tests with `deploy/dev test` (it installs "
            "chromium and chromium-driver) or `deploy/ensure-commands.sh chromium=chromium "
            "chromedriver=chromium-driver` as root."
        )
    return path


@pytest.fixture
def downloads(tmp_path: Path) -> Path:
    path = tmp_path / "downloads"
    path.mkdir()
    return path


@pytest.fixture
def browser(downloads: Path) -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = _program("chromium")
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    options.add_argument(f"--user-data-dir={profile}")
    options.add_experimental_option(
        "prefs",
        {"download.default_directory": str(downloads), "download.prompt_for_download": False},
    )
    # The page must not raise in the console: collect its log to assert on it.
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=ChromeService(_program("chromedriver")))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def token_for(rt: Runtime, user: int) -> str:
    return issue_token(
        rt.jwt_secret, user_id=user, tenant_id=0, app_code=AppCode.PLATFORM, perms=PERMS
    )


def wait_for(driver: WebDriver, condition: Callable[[WebDriver], Any], what: str) -> Any:
    # A row redrawn between finding it and reading it is read again at the next poll.
    wait = WebDriverWait(
        driver, WAIT, poll_frequency=0.1, ignored_exceptions=(StaleElementReferenceException,)
    )
    return wait.until(condition, f"page never {what}")


def row_status(driver: WebDriver, task_id: str) -> str | None:
    rows = driver.find_elements(By.CSS_SELECTOR, f'tr[data-task-id="{task_id}"]')
    return rows[0].get_attribute("data-status") if rows else None


def sign_in(driver: WebDriver, base_url: str, token: str) -> None:
    """Open the page and sign in through its form, as a person does."""
    driver.get(base_url + "/")
    wait_for(driver, lambda d: d.find_element(By.ID, "sign-in").is_displayed(), "asked")
    field = driver.find_element(By.ID, "token")
    field.send_keys(token)
    field.submit()
    wait_for(driver, lambda d: d.find_element(By.ID, "center").is_displayed(), "signed in")
    assert token not in driver.current_url  # never in a URL


def console_errors(driver: WebDriver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


async def in_thread(fn: Callable[[], Any]) -> Any:
    """Selenium blocks: drive the browser in a thread while the service runs in this loop."""
    return await trio.to_thread.run_sync(fn)


async def test_create_watch_progress_and_download(
    settings: Settings, browser: WebDriver, downloads: Path
) -> None:
    async with running_service(settings) as rt:
        token = token_for(rt, 4001)

        def drive() -> tuple[str, str]:
            sign_in(browser, rt.base_url, token)
            params = browser.find_element(By.ID, "parameters")
            params.clear()
            params.send_keys('{"rowCount": 30000}')
            browser.find_element(By.ID, "task-name").send_keys("Customers for the audit")
            browser.find_element(By.ID, "create").click()
            row = wait_for(
                browser,
                lambda d: d.find_elements(By.CSS_SELECTOR, "tr[data-task-id]"),
                "listed the new export",
            )[0]
            task_id = row.get_attribute("data-task-id")
            assert task_id
            # Progress is shown while it runs, then the finished state.
            seen = set()

            def finished(d: WebDriver) -> bool:
                status = row_status(d, task_id)
                if status == "RUNNING":
                    seen.add(d.find_element(By.CSS_SELECTOR, ".progress .rows").text)
                return status == "SUCCEEDED"

            wait_for(browser, finished, "showed SUCCEEDED")
            done = browser.find_element(By.CSS_SELECTOR, f'tr[data-task-id="{task_id}"]')
            assert "30,000 / 30,000 rows" in done.find_element(By.CLASS_NAME, "progress").text
            assert "Customers for the audit" in done.find_element(By.CLASS_NAME, "name").text
            done.find_element(By.CLASS_NAME, "download").click()
            wait_for(
                browser,
                lambda d: [p for p in downloads.iterdir() if p.suffix == ".xlsx"],
                "downloaded the file",
            )
            return task_id, " | ".join(sorted(seen))

        task_id, progress_seen = await in_thread(drive)
        async with httpx.AsyncClient(base_url=rt.base_url, timeout=10) as client:
            task = (
                await client.get(
                    f"{API}/{task_id}",
                    headers={"Authorization": f"Bearer {token_for(rt, 4001)}"},
                )
            ).json()["data"]
    assert task["status"] == "SUCCEEDED" and task["processedRows"] == "30000"
    (saved,) = downloads.iterdir()
    assert saved.name == task["fileName"]
    sheet = openpyxl.load_workbook(saved, read_only=True).worksheets[0]
    assert sheet.max_row == 30_001  # the header and every row
    assert console_errors(browser) == [], progress_seen


async def test_a_failed_export_shows_why_and_retry_queues_it_again(
    settings: Settings, browser: WebDriver
) -> None:
    async with running_service(settings) as rt:
        token = token_for(rt, 4002)
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=rt.base_url, timeout=10, headers=headers) as c:
            # The demo Provider refuses rowCount over 1,000,000: a permanent failure.
            body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 2_000_000}}
            task_id = (await c.post(API, json=body)).json()["data"]["id"]

            def drive() -> str:
                sign_in(browser, rt.base_url, token)
                wait_for(browser, lambda d: row_status(d, task_id) == "FAILED", "showed FAILED")
                row = browser.find_element(By.CSS_SELECTOR, f'tr[data-task-id="{task_id}"]')
                failure = row.find_element(By.CLASS_NAME, "failure").text
                row.find_element(By.CLASS_NAME, "retry").click()
                wait_for(
                    browser,
                    lambda d: "queued again" in d.find_element(By.ID, "banner").text,
                    "confirmed the retry",
                )
                return failure

            failure = await in_thread(drive)
            task = (await c.get(f"{API}/{task_id}")).json()["data"]
    assert "rowCount must be an integer in 1..1000000" in failure
    assert task["dispatchVersion"] >= 2  # the retry was a new dispatch of the same task


async def test_cancel_of_a_running_export_from_the_page(
    settings: Settings, browser: WebDriver
) -> None:
    async with running_service(settings) as rt:
        token = token_for(rt, 4005)
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=rt.base_url, timeout=10, headers=headers) as c:
            body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 200_000}}
            task_id = (await c.post(API, json=body)).json()["data"]["id"]

            def drive() -> tuple[str, str, bool]:
                sign_in(browser, rt.base_url, token)
                # The Cancel button of the queued or running export (a fast machine may
                # run 200,000 rows between two refreshes of the page).
                button = wait_for(
                    browser,
                    lambda d: d.find_elements(
                        By.CSS_SELECTOR, f'tr[data-task-id="{task_id}"] .cancel'
                    ),
                    "offered Cancel",
                )[0]
                button.click()
                wait_for(
                    browser, lambda d: row_status(d, task_id) == "CANCELLED", "showed CANCELLED"
                )
                row = browser.find_element(By.CSS_SELECTOR, f'tr[data-task-id="{task_id}"]')
                return (
                    browser.find_element(By.ID, "banner").text,
                    row.find_element(By.CLASS_NAME, "failure").text,
                    bool(row.find_elements(By.CLASS_NAME, "retry"))
                    and not row.find_elements(By.CLASS_NAME, "cancel"),
                )

            banner, failure, retry_offered = await in_thread(drive)
            task = (await c.get(f"{API}/{task_id}")).json()["data"]
        with trio.fail_after(WAIT):  # the slot settles the aborted run: file deleted
            while any(slot.current is not None for slot in rt.slots):
                await trio.sleep(0.01)
        leftovers = [o.key for o in await rt.storage.list_objects() if f"/{task_id}/" in o.key]
    assert "cancelled" in banner and failure == "cancelled by user 4005" and retry_offered
    assert task["status"] == "CANCELLED" and int(task["processedRows"]) < 200_000
    assert leftovers == []
    assert console_errors(browser) == []


async def test_hostile_text_is_shown_as_text_and_the_policy_forbids_inline_script(
    settings: Settings, browser: WebDriver
) -> None:
    hostile = "<img src=x onerror=\"document.title='pwned'\">"
    async with running_service(settings) as rt:
        token = token_for(rt, 4003)
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=rt.base_url, timeout=10, headers=headers) as c:
            body = {
                "exportType": "CUSTOMER_LIST",
                "taskName": hostile,
                "parameters": {"rowCount": 10},
            }
            task_id = (await c.post(API, json=body)).json()["data"]["id"]
            page = await c.get("/")

        def drive() -> tuple[str, int, str]:
            sign_in(browser, rt.base_url, token)
            wait_for(browser, lambda d: row_status(d, task_id) is not None, "listed the task")
            row = browser.find_element(By.CSS_SELECTOR, f'tr[data-task-id="{task_id}"]')
            images = len(browser.find_elements(By.CSS_SELECTOR, "#tasks img"))
            return row.find_element(By.CLASS_NAME, "name").text, images, browser.title

        name, images, title = await in_thread(drive)
    assert name == hostile and images == 0 and title != "pwned"
    assert page.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert "script-src 'self'" in CONTENT_SECURITY_POLICY
    assert page.headers["X-Content-Type-Options"] == "nosniff"


async def test_without_a_token_it_asks_for_one_and_a_rejected_token_says_so(
    settings: Settings, browser: WebDriver
) -> None:
    async with running_service(settings) as rt:
        good = token_for(rt, 4004)

        def drive() -> tuple[bool, str, bool]:
            browser.get(rt.base_url + "/")
            wait_for(browser, lambda d: d.find_element(By.ID, "sign-in").is_displayed(), "asked")
            field = browser.find_element(By.ID, "token")
            field.send_keys("not-a-jwt")
            field.submit()
            wait_for(
                browser,
                lambda d: "token was rejected" in d.find_element(By.ID, "banner").text,
                "said the token was rejected",
            )
            asked_again = browser.find_element(By.ID, "sign-in").is_displayed()
            banner = browser.find_element(By.ID, "banner").text
            field = browser.find_element(By.ID, "token")
            field.send_keys(good)
            field.submit()
            wait_for(browser, lambda d: d.find_element(By.ID, "center").is_displayed(), "signed in")
            return asked_again, banner, "user 4004" in browser.find_element(By.ID, "who").text

        asked_again, banner, named = await in_thread(drive)
    assert asked_again and "paste a new one" in banner and named
