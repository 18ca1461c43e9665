"""Driving the download center page in a real Chromium: starting the browser, waiting for
what the page shows (always a condition, never a sleep), signing in, reading rows, and
saving screenshots of page states under ``var/test-output/screenshots/`` (git ignores
``var/``). The fixtures over these live in ``tests/web/conftest.py``.

Chromium and chromium-driver are Debian's packages, installed by the test command when
missing (deploy/ensure-commands.sh); the browser tests never skip them.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import httpx
import pytest
import trio
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service as ChromeService
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from actors.core.principal import AppCode
from actors.runtime import Runtime
from tests.helpers import REPO
from web.auth import issue_token

API = "/api/platform/v1/files/export-tasks"
PERMS = ("platform:customer:export",)
ADMIN_PERMS = (*PERMS, "platform:download:all")
#: Longest wait for the page to show a state, seconds: a bound against hangs only (the
#: machine running the suite may be busy).
WAIT = 120
SCREENSHOTS = REPO / "var" / "test-output" / "screenshots"
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
    "--window-size=1280,1000",
)
#: Console errors that are answers the page expects: Chromium logs every HTTP error
#: status, and "who am I" answers 401 before signing in. A refused connection only
#: happens once a test has stopped its service under the open page (the page then falls
#: back to polling it): the tests read the console after that.
EXPECTED_CONSOLE = (
    "/api/platform/v1/session - Failed to load resource: the server responded with a status of 401",
    "net::ERR_CONNECTION_REFUSED",
)


def program(name: str) -> str:
    """The path of ``name`` on PATH; fails the test (never skips) when it is missing."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(
            f"'{name}' is not on PATH. Run the tests with `deploy/dev test` (it installs "
            "chromium and chromium-driver) or `deploy/ensure-commands.sh chromium=chromium "
            "chromedriver=chromium-driver` as root."
        )
    return path


def start_chromium(profile: Path, downloads: Path) -> WebDriver:
    """A headless Chromium with its own profile, saving downloads into ``downloads``
    without asking, and keeping the console log for :func:`console_errors`."""
    options = webdriver.ChromeOptions()
    options.binary_location = program("chromium")
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_experimental_option(
        "prefs",
        {"download.default_directory": str(downloads), "download.prompt_for_download": False},
    )
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=ChromeService(program("chromedriver")))


class Shoot(Protocol):
    """The ``screenshot`` fixture: save the page, scrolled to the element the CSS selector
    ``at`` finds, if given."""

    def __call__(self, driver: WebDriver, state: str, at: str | None = None) -> Path: ...


def token_for(
    rt: Runtime, user: int, perms: tuple[str, ...] = PERMS, name: str | None = None
) -> str:
    return issue_token(
        rt.jwt_secret,
        user_id=user,
        tenant_id=0,
        app_code=AppCode.PLATFORM,
        perms=perms,
        name=name,
    )


def client(rt: Runtime, user: int, name: str | None = None) -> httpx.AsyncClient:
    """An API client of ``rt`` with a bearer token for ``user`` (the tests' side door)."""
    headers = {"Authorization": f"Bearer {token_for(rt, user, name=name)}"}
    return httpx.AsyncClient(base_url=rt.base_url, timeout=10, headers=headers)


def wait_for(driver: WebDriver, condition: Callable[[WebDriver], Any], what: str) -> Any:
    """Poll ``condition`` until it is truthy (at most :data:`WAIT` s); returns its value."""
    # A row redrawn between finding it and reading it is read again at the next poll.
    wait = WebDriverWait(
        driver, WAIT, poll_frequency=0.05, ignored_exceptions=(StaleElementReferenceException,)
    )
    return wait.until(condition, f"page never {what}")


def row_css(task_id: str) -> str:
    """The CSS selector of a task's row."""
    return f'tr[data-task-id="{task_id}"]'


def row(driver: WebDriver, task_id: str) -> WebElement:
    return driver.find_element(By.CSS_SELECTOR, row_css(task_id))


def row_state(driver: WebDriver, task_id: str) -> str | None:
    """The row's shown state (queued, retrying, running, succeeded, …) or None if absent."""
    rows = driver.find_elements(By.CSS_SELECTOR, f'tr[data-task-id="{task_id}"]')
    return rows[0].get_attribute("data-state") if rows else None


#: One read of a row, in the page (no element can go stale between two reads): the text
#: of each element by its first class, and the classes of its buttons.
_READ_ROW = """
const tr = document.querySelector(`tr[data-task-id="${arguments[0]}"]`);
if (!tr) return null;
const texts = {"": tr.innerText};
for (const node of tr.querySelectorAll("[class]")) {
  const name = node.classList[0];
  if (!(name in texts)) texts[name] = node.innerText;
}
return {texts, buttons: [...tr.querySelectorAll("button")].map((b) => b.classList[0])};
"""


def read_row(driver: WebDriver, task_id: str) -> tuple[dict[str, str], list[str]]:
    """The row's texts by the first class of their element (``""``: the whole row) and
    its buttons' classes; fails the test if the row is not shown."""
    found = driver.execute_script(_READ_ROW, task_id)
    assert found is not None, f"task {task_id} is not listed"
    return found["texts"], found["buttons"]


def press(driver: WebDriver, task_id: str, button: str, key: str | None = None) -> None:
    """Click the row's ``button`` (a class: download, cancel, retry, history), or focus it
    and press ``key``. A row redrawn under the pointer (a pushed update) is found again."""

    def pressed(d: WebDriver) -> bool:
        target = row(d, task_id).find_element(By.CLASS_NAME, button)
        if key is None:
            target.click()
        else:
            d.execute_script("arguments[0].focus()", target)
            target.send_keys(key)
        return True

    wait_for(driver, pressed, f"let {button} be pressed")


def shown_ids(driver: WebDriver) -> set[str]:
    rows = driver.find_elements(By.CSS_SELECTOR, "tr[data-task-id]")
    return {r.get_attribute("data-task-id") or "" for r in rows}


def banner(driver: WebDriver) -> str:
    """What the banner says ("" when it is put away)."""
    return str(driver.find_element(By.ID, "banner-text").text)


def shows(driver: WebDriver, element_id: str) -> bool:
    return bool(driver.find_element(By.ID, element_id).is_displayed())


def sign_in(driver: WebDriver, base_url: str, token: str) -> None:
    """Open the page and sign in through its form, as a person does."""
    driver.get(base_url + "/")
    wait_for(driver, lambda d: shows(d, "sign-in"), "asked")
    field = driver.find_element(By.ID, "token")
    field.send_keys(token)
    field.submit()
    wait_for(driver, lambda d: shows(d, "center"), "signed in")
    wait_for(driver, lambda d: d.find_element(By.ID, "total").text, "listed the exports")
    assert token not in driver.current_url  # never in a URL


def choose_language(driver: WebDriver, base_url: str, language: str) -> None:
    """Open the page and choose ``language`` in its switch (remembered in this browser),
    once the script has offered the languages."""
    driver.get(base_url + "/")
    option = f'#language option[value="{language}"]'
    wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, option), "offered the languages")
    driver.find_element(By.CSS_SELECTOR, option).click()
    wait_for(
        driver,
        lambda d: d.execute_script("return document.documentElement.lang") == language,
        "switched the language",
    )


def open_filters(driver: WebDriver) -> None:
    """Unfold the filters (folded while none is on, so the list comes first)."""
    if not driver.find_element(By.ID, "filters").get_attribute("open"):
        driver.find_element(By.ID, "filters-summary").click()


#: Set a date input to the browser's local day ``arguments[1]`` days from today, as a
#: person picking it does (the value, then the change event).
_SET_DATE = """
const input = document.getElementById(arguments[0]);
const day = new Date();
day.setDate(day.getDate() + arguments[1]);
const pad = (n) => String(n).padStart(2, "0");
input.value = `${day.getFullYear()}-${pad(day.getMonth() + 1)}-${pad(day.getDate())}`;
input.dispatchEvent(new Event("change", { bubbles: true }));
"""


def set_date(driver: WebDriver, element_id: str, days_from_today: int) -> None:
    """Pick a day in the date input ``element_id`` (the browser's local calendar; typing
    into a date input depends on the browser's locale)."""
    driver.execute_script(_SET_DATE, element_id, days_from_today)


def console_errors(driver: WebDriver) -> list[str]:
    """The page's console errors (script errors, failed loads) but the expected ones."""
    return [
        e["message"]
        for e in driver.get_log("browser")
        if e["level"] == "SEVERE" and not any(x in e["message"] for x in EXPECTED_CONSOLE)
    ]


async def in_thread(fn: Callable[[], Any]) -> Any:
    """Selenium blocks: drive the browser in a thread while the service runs in this loop."""
    return await trio.to_thread.run_sync(fn)


#: axe-core, installed by ``deploy/dev test`` from deploy/axe/package-lock.json.
AXE = REPO / "deploy" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
AXE_VERSION = "4.11.0"  # deploy/axe/package.json
#: The impacts a page state may not have (axe-core's two highest of four).
BLOCKING_IMPACTS = ("serious", "critical")

_RUN_AXE = """
const done = arguments[arguments.length - 1];
axe.run(document, {resultTypes: ["violations"]}).then(
  (results) => done(results.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 5),
  }))),
  (error) => done([{id: "axe-error", impact: "critical", help: String(error), nodes: []}]),
);
"""


def axe_violations(driver: WebDriver) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations of the page as shown now (WCAG 2.x A
    and AA and axe's best practices): ``[{"id", "impact", "help", "nodes"}]``. Injected
    through the driver, so the page's Content-Security-Policy does not apply to it."""
    if not AXE.is_file():
        pytest.fail(
            f"{AXE} is missing: run the tests with `deploy/dev test` (it installs axe-core)"
        )
    if not driver.execute_script("return typeof axe !== 'undefined'"):
        driver.execute_script(AXE.read_text(encoding="utf-8"))
    driver.set_script_timeout(60)
    found: list[dict[str, Any]] = driver.execute_async_script(_RUN_AXE)
    lesser = sorted(
        {f"{v['id']} ({v['impact']})" for v in found}
        - {f"{v['id']} ({v['impact']})" for v in found if v["impact"] in BLOCKING_IMPACTS}
    )
    rules = driver.execute_script("return axe.getRules().length")
    print(f"axe-core {AXE_VERSION}: {rules} rules; below serious: {', '.join(lesser) or 'none'}")
    return [v for v in found if v["impact"] in BLOCKING_IMPACTS]
