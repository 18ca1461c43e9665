"""Company sign-in on the download center page, in a real Chromium against a real OpenID
Provider (``tests/oidc_provider.py``): at a phone's and a desktop's width and in both
languages, a person presses "Sign in with …", meets the provider's login form, types a
wrong password and then the right one, comes back signed in by name, exports, and the
browser downloads the file (read back). A session that ends while the new-export form is
open signs in again and comes back to the form with its input. A sign-in that came back
unfinished is told in the person's language. Every new state is checked by axe-core."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openpyxl
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser import (
    Shoot,
    axe_violations,
    banner,
    choose_language,
    console_errors,
    in_thread,
    press,
    row_state,
    shows,
    wait_for,
)
from tests.oidc_provider import ALICE, service_with_provider

DESKTOP = {"width": 1366, "height": 900, "deviceScaleFactor": 1, "mobile": False}
PHONE = {"width": 375, "height": 800, "deviceScaleFactor": 2, "mobile": True}
BUTTON = {"en": "Sign in with Test company", "zh-CN": "使用 Test company 登录"}


def log_in_at_provider(driver: WebDriver, password: str) -> None:
    """Fill the provider's login form (deploy/idp/server.mjs) and send it."""
    wait_for(driver, lambda d: d.find_elements(By.ID, "password"), "the provider's form")
    driver.find_element(By.ID, "login").send_keys(ALICE.login)
    driver.find_element(By.ID, "password").send_keys(password)
    driver.find_element(By.ID, "submit").click()


@pytest.mark.parametrize("width", ["phone", "desktop"])
@pytest.mark.parametrize("language", ["en", "zh-CN"])
async def test_sign_in_at_the_company_provider_export_and_download(
    tmp_path: Path,
    browser: WebDriver,
    downloads: Path,
    screenshot: Shoot,
    language: str,
    width: str,
) -> None:
    async with service_with_provider(tmp_path) as (base_url, _):

        def drive() -> dict[str, Any]:
            seen: dict[str, Any] = {}
            tag = f"{language}-{width}"
            browser.execute_cdp_cmd(
                "Emulation.setDeviceMetricsOverride", PHONE if width == "phone" else DESKTOP
            )
            choose_language(browser, base_url, language)
            wait_for(browser, lambda d: shows(d, "company-sign-in"), "offered the button")
            link = browser.find_element(By.ID, "company-sign-in-link")
            seen["button"] = link.text
            seen["token_form_shown"] = shows(browser, "token-sign-in")
            screenshot(browser, f"{tag}-sign-in")
            seen["axe_sign_in"] = axe_violations(browser)
            link.click()
            log_in_at_provider(browser, "not-the-password")
            wait_for(browser, lambda d: d.find_elements(By.ID, "problem"), "refused")
            seen["refused"] = browser.find_element(By.ID, "problem").text
            screenshot(browser, f"{tag}-provider-refused")
            log_in_at_provider(browser, ALICE.password)
            wait_for(browser, lambda d: d.current_url.startswith(base_url), "came back")
            wait_for(browser, lambda d: shows(d, "center"), "signed in")
            seen["who"] = wait_for(
                browser, lambda d: d.find_element(By.ID, "who").text, "named the person"
            )
            screenshot(browser, f"{tag}-signed-in")
            seen["axe_signed_in"] = axe_violations(browser)
            # An export from the form, downloaded by the browser itself.
            browser.find_element(By.ID, "new-export").click()
            wait_for(browser, lambda d: shows(d, "new-export-panel"), "opened the form")
            browser.find_element(By.ID, "param-rowCount").send_keys("300")
            browser.find_element(By.ID, "create").click()
            task_id = wait_for(
                browser,
                lambda d: d.find_element(By.CSS_SELECTOR, "tr.highlight").get_attribute(
                    "data-task-id"
                ),
                "showed the new export",
            )
            wait_for(browser, lambda d: row_state(d, task_id) == "succeeded", "ready")
            press(browser, task_id, "download")
            seen["file"] = wait_for(
                browser,
                lambda d: [p for p in downloads.iterdir() if p.suffix == ".xlsx"],
                "downloaded the file",
            )[0]
            return seen

        seen = await in_thread(drive)
    assert seen["button"] == BUTTON[language]
    assert not seen["token_form_shown"]
    assert seen["refused"] == "Wrong username or password · 用户名或密码错误"
    assert ALICE.name in seen["who"]
    assert seen["axe_sign_in"] == [] and seen["axe_signed_in"] == []
    sheet = openpyxl.load_workbook(seen["file"], read_only=True).worksheets[0]
    assert sheet.max_row == 301
    assert console_errors(browser) == []


async def test_a_session_that_ends_mid_form_signs_in_again_and_keeps_the_input(
    tmp_path: Path, browser: WebDriver, screenshot: Shoot
) -> None:
    async with service_with_provider(tmp_path) as (base_url, _):

        def drive() -> dict[str, Any]:
            choose_language(browser, base_url, "en")
            wait_for(browser, lambda d: shows(d, "company-sign-in"), "offered the button")
            browser.find_element(By.ID, "company-sign-in-link").click()
            log_in_at_provider(browser, ALICE.password)
            wait_for(browser, lambda d: shows(d, "center"), "signed in")
            browser.find_element(By.ID, "new-export").click()
            wait_for(browser, lambda d: shows(d, "new-export-panel"), "opened the form")
            browser.find_element(By.ID, "task-name").send_keys("Quarter audit")
            browser.find_element(By.ID, "param-rowCount").send_keys("1234")
            # The session ends (its cookie gone, as when the ID token expires).
            browser.execute_cdp_cmd(
                "Network.deleteCookies", {"name": "export_center_session", "url": base_url}
            )
            create = browser.find_element(By.ID, "create")
            if create.is_displayed():  # else a list refresh met the ended session first
                create.click()
            wait_for(browser, lambda d: shows(d, "sign-in"), "asked to sign in again")
            ended = banner(browser)
            browser.find_element(By.ID, "company-sign-in-link").click()
            # The provider still knows the person: no password asked (single sign-on).
            wait_for(browser, lambda d: shows(d, "new-export-panel"), "reopened the form")
            screenshot(browser, "draft-kept")
            return {
                "ended": ended,
                "kept": banner(browser),
                "name": browser.find_element(By.ID, "task-name").get_attribute("value"),
                "rows": browser.find_element(By.ID, "param-rowCount").get_attribute("value"),
                "stored": browser.execute_script("return sessionStorage.length"),
                "axe": axe_violations(browser),
            }

        seen = await in_thread(drive)
    assert seen["ended"] == "Your session has ended: please sign in again."
    assert seen["kept"] == "Signed in again: your new export is as you left it."
    assert (seen["name"], seen["rows"]) == ("Quarter audit", "1234")
    assert seen["stored"] == 0  # the draft is taken back once
    assert seen["axe"] == []


@pytest.mark.parametrize(
    ("language", "problem", "said"),
    [
        ("en", "state", "A sign-in answer that did not belong to this browser was ignored."),
        ("zh-CN", "code", "登录无法完成：一次性登录码已被使用或已过期。请重新登录。"),
        ("en", "refused", "it was cancelled or refused at Test company"),
    ],
    ids=["en-state", "zh-CN-code", "en-refused"],
)
async def test_a_sign_in_that_came_back_unfinished_is_told_in_the_persons_language(
    tmp_path: Path, browser: WebDriver, screenshot: Shoot, language: str, problem: str, said: str
) -> None:
    async with service_with_provider(tmp_path) as (base_url, _):

        def drive() -> tuple[str, str, list[Any]]:
            choose_language(browser, base_url, language)
            browser.get(f"{base_url}/?status=FAILED&signInProblem={problem}")
            told = wait_for(browser, banner, "told why")
            screenshot(browser, f"{language}-sign-in-problem-{problem}")
            return told, browser.current_url, axe_violations(browser)

        told, url, found = await in_thread(drive)
    assert said in told
    assert url == f"{base_url}/?status=FAILED"  # told once: the reason left the address
    assert found == []
