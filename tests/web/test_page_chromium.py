"""The download center page in a real Chromium (headless, driven by Selenium) against the
whole service on SQLite with the demo Provider (issue 10, item 4), a person's session:
sign in with the cookie session and sign out; create an export from the form built from
the export types, watch its progress bar move, download the file and read it back;
progress by polling when the live stream fails; a rejected token and an ended session.
What a person does to one export of the list — retry or edit a failed one, cancel a
running one, read its history — is ``test_page_task_actions.py``'s.

Each page state is saved as a screenshot under ``var/test-output/screenshots/``; the
paths are printed when each test ends (``tests/web/conftest.py``).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import openpyxl
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from actors.plumbing.config import Settings
from tests.browser import (
    API,
    Shoot,
    banner,
    client,
    console_errors,
    in_thread,
    open_filters,
    press,
    read_row,
    row,
    row_css,
    row_state,
    shows,
    sign_in,
    token_for,
    wait_for,
)
from tests.helpers import make_settings, running_service, wait_for_status
from tests.s3_helpers import drop_bucket, new_bucket, object_keys, s3_settings

#: Counts the Blob URLs the page makes from now on: a download fetched into the page's
#: memory makes one; a download the browser handles makes none.
BLOB_SPY = """
window.blobUrls = 0;
const made = URL.createObjectURL;
URL.createObjectURL = (...args) => { window.blobUrls += 1; return made(...args); };
"""
#: After a download: Blob URLs made, and the class of the focused element if it is in the
#: row of the task ``arguments[0]``.
AFTER_DOWNLOAD = """
const focused = document.activeElement;
const inRow = focused && focused.closest(`tr[data-task-id="${arguments[0]}"]`);
return {blobs: window.blobUrls, focus: inRow ? focused.className : String(focused?.tagName)};
"""


async def test_sign_in_create_from_the_form_watch_progress_download_and_sign_out(
    settings: Settings, browser: WebDriver, downloads: Path, screenshot: Shoot
) -> None:
    # A 100,000-row export takes about a second now: progress written and streamed five
    # times a second, so the bar has time to move.
    settings = settings.model_copy(
        update={"progress_poll_seconds": 0.2, "progress_write_seconds": 0.1}
    )
    async with running_service(settings) as rt:
        token = token_for(rt, 4001)

        def drive() -> dict[str, Any]:
            browser.get(rt.base_url + "/")
            wait_for(browser, lambda d: shows(d, "sign-in"), "asked")
            screenshot(browser, "sign-in")
            sign_in(browser, rt.base_url, token)
            cookies = {c["name"]: c for c in browser.get_cookies()}
            stored = browser.execute_script(
                "return JSON.stringify(sessionStorage) + JSON.stringify(localStorage)"
            )
            script_cookies = browser.execute_script("return document.cookie")
            wait_for(
                browser,
                lambda d: d.find_elements(By.CSS_SELECTOR, "#export-type option"),
                "offered types",
            )
            screenshot(browser, "signed-in")
            browser.find_element(By.ID, "new-export").click()
            wait_for(browser, lambda d: shows(d, "new-export-panel"), "opened the form")
            Select(browser.find_element(By.ID, "export-type")).select_by_value("CUSTOMER_LIST")
            # Names, not keys: the type's display name, the parameter's label, a select for
            # a parameter with fixed values, the row limit stated once.
            form = {
                "type": Select(
                    browser.find_element(By.ID, "export-type")
                ).first_selected_option.text,
                "labels": [
                    e.text
                    for e in browser.find_elements(By.CSS_SELECTOR, "#parameter-fields label")
                ],
                "status": [
                    o.text for o in Select(browser.find_element(By.ID, "param-status")).options
                ],
                "hint": browser.find_element(By.ID, "type-hint").text,
                "max": browser.find_element(By.ID, "param-rowCount").get_attribute("max"),
            }
            hinted = browser.find_elements(By.ID, "param-rowCount")
            if hinted:  # the registry gives parameter hints: the form has a field
                hinted[0].send_keys("100000")
            else:
                browser.find_element(By.CSS_SELECTOR, "details summary").click()
                browser.find_element(By.ID, "extra-parameters").send_keys('{"rowCount": 100000}')
            browser.find_element(By.ID, "task-name").send_keys("Customers for the audit")
            screenshot(browser, "new-export-form")
            browser.find_element(By.ID, "create").click()
            task_id = wait_for(
                browser,
                lambda d: d.find_element(By.CSS_SELECTOR, "tr.highlight").get_attribute(
                    "data-task-id"
                ),
                "highlighted the new export",
            )
            accepted = banner(browser)
            # The bar moves: distinct values of the running row's <progress>.
            values: list[float] = []

            def moved(d: WebDriver) -> bool:
                if row_state(d, task_id) == "running":
                    bars = row(d, task_id).find_elements(By.TAG_NAME, "progress")
                    value = bars[0].get_attribute("value") if bars else None
                    if value is not None and float(value) > 0 and float(value) not in values:
                        values.append(float(value))
                        if len(values) == 1:
                            screenshot(d, "running", row_css(task_id))
                return len(values) >= 2 or row_state(d, task_id) == "succeeded"

            wait_for(browser, moved, "moved the progress bar")
            wait_for(browser, lambda d: row_state(d, task_id) == "succeeded", "showed it ready")
            screenshot(browser, "succeeded", row_css(task_id))
            texts, _ = read_row(browser, task_id)
            shown = {
                "progress": texts["progress"],
                "name": texts["name"],
                "file": texts["file"],
                "live": browser.find_element(By.ID, "live").get_attribute("textContent"),
                "requested": texts["requested"],
                "when": row(browser, task_id)
                .find_element(By.TAG_NAME, "time")
                .get_attribute("title"),
            }
            browser.execute_script(BLOB_SPY)
            press(browser, task_id, "download")
            wait_for(
                browser,
                lambda d: [p for p in downloads.iterdir() if p.suffix == ".xlsx"],
                "downloaded the file",
            )
            after_download = browser.execute_script(AFTER_DOWNLOAD, task_id)
            # What the live stream saves: the list requests the page made meanwhile.
            lists = browser.execute_script(
                "return performance.getEntriesByType('resource')"
                ".filter((e) => e.name.includes('/export-tasks?')).length"
            )
            print(f"list requests of the page while a 100,000-row export ran: {lists}")
            browser.find_element(By.ID, "sign-out").click()
            wait_for(browser, lambda d: shows(d, "sign-in"), "signed out")
            browser.refresh()  # the session is gone on the server, not just in this page
            wait_for(browser, lambda d: shows(d, "sign-in"), "asked again")
            screenshot(browser, "signed-out")
            return {
                "task_id": task_id,
                "values": values,
                "cookies": cookies,
                "stored": stored,
                "script_cookies": script_cookies,
                "after_sign_out": {c["name"] for c in browser.get_cookies()},
                "form": form,
                "accepted": accepted,
                "after_download": after_download,
                **shown,
            }

        seen = await in_thread(drive)
        async with client(rt, 4001) as c:
            task = (await c.get(f"{API}/{seen['task_id']}")).json()["data"]
    ran = datetime.fromisoformat(task["completedAt"]) - datetime.fromisoformat(task["startedAt"])
    print(f"the export ran {ran.total_seconds():.1f} s; progress values seen: {seen['values']}")
    session_cookie = seen["cookies"]["export_center_session"]
    assert session_cookie["httpOnly"] and session_cookie["sameSite"] == "Strict"
    assert "export_center_csrf" in seen["script_cookies"]
    assert "export_center_session" not in seen["script_cookies"]
    assert token not in seen["stored"] and token not in seen["script_cookies"]
    assert "export_center_session" not in seen["after_sign_out"]
    assert len(seen["values"]) >= 2 and seen["values"] == sorted(seen["values"]), seen["values"]
    assert task["status"] == "SUCCEEDED" and task["processedRows"] == "100000"
    assert seen["progress"] == "100,000 rows"
    assert "Customers for the audit" in seen["name"] and "Customer list" in seen["name"]
    assert "expires in 7 days" in seen["file"]
    assert seen["file"].replace("\n", "").startswith(task["fileName"])  # wraps, never cut
    assert "ago" in seen["requested"] and "took" in seen["requested"]
    assert seen["when"].endswith(("UTC", "GMT"))  # the exact time, with its zone, on hover
    assert "Ready" in seen["live"]
    assert "accepted" in seen["accepted"]
    form = seen["form"]
    assert form["type"] == "Customer list"
    assert [label.split(" (")[0] for label in form["labels"]] == [
        "Status",
        "Name contains",
        "Rows in the demo table",
    ]
    assert form["status"] == ["— any —", "Active", "Inactive"]
    assert form["hint"].count("200,000") == 1 and form["max"] == "200000"
    (saved,) = downloads.iterdir()
    assert saved.name == task["fileName"]
    sheet = openpyxl.load_workbook(saved, read_only=True).worksheets[0]
    assert sheet.max_row == 100_001  # the header and every row
    # The browser's own download: the page never held the file (no Blob URL) and the
    # keyboard focus stayed on the row's Download button.
    assert seen["after_download"] == {"blobs": 0, "focus": "download primary"}
    assert console_errors(browser) == []


async def test_progress_is_polled_when_the_live_stream_fails(
    settings: Settings, browser: WebDriver, screenshot: Shoot
) -> None:
    async with running_service(settings) as rt:
        async with client(rt, 4008) as c:

            def blocked_stream() -> str:
                # The browser refuses the stream's URL, as a proxy that does not pass
                # event streams would.
                browser.execute_cdp_cmd("Network.enable", {})
                browser.execute_cdp_cmd(
                    "Network.setBlockedURLs", {"urls": ["*/api/platform/v1/files/progress*"]}
                )
                sign_in(browser, rt.base_url, token_for(rt, 4008))
                updates = wait_for(
                    browser,
                    lambda d: d.find_element(By.CSS_SELECTOR, '#updates[data-mode="polling"]'),
                    "fell back to polling",
                )
                return updates.text

            mode_text = await in_thread(blocked_stream)
            body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 3000}}
            task_id = (await c.post(API, json=body)).json()["data"]["id"]

            def drive() -> str:
                wait_for(browser, lambda d: row_state(d, task_id) == "succeeded", "showed it ready")
                screenshot(browser, "polled", row_css(task_id))
                return row(browser, task_id).find_element(By.CLASS_NAME, "progress").text

            progress = await in_thread(drive)
    assert "refreshing every second" in mode_text
    assert progress == "3,000 rows"
    # The blocked stream is the only error the console may show.
    assert all("/files/progress" in e for e in console_errors(browser))


async def test_a_rejected_token_says_so_and_an_ended_session_asks_again(
    settings: Settings, browser: WebDriver, screenshot: Shoot
) -> None:
    async with running_service(settings) as rt:
        good = token_for(rt, 4004)

        def drive() -> dict[str, Any]:
            browser.get(rt.base_url + "/")
            wait_for(browser, lambda d: shows(d, "sign-in"), "asked")
            field = browser.find_element(By.ID, "token")
            field.send_keys("not-a-jwt")
            field.submit()
            wait_for(
                browser, lambda d: "token was rejected" in banner(d), "said the token was rejected"
            )
            screenshot(browser, "token-rejected")
            rejected = {"asked": shows(browser, "sign-in"), "banner": banner(browser)}
            sign_in(browser, rt.base_url, good)
            who = browser.find_element(By.ID, "who").text
            # The session ends under the page (expired, or signed out in another tab): the
            # next call answers 401 and the page asks for a token again.
            browser.delete_cookie("export_center_session")
            open_filters(browser)
            browser.find_element(By.CSS_SELECTOR, "#filter-form button[type=submit]").click()
            wait_for(browser, lambda d: shows(d, "sign-in"), "asked again")
            screenshot(browser, "session-ended")
            return {**rejected, "who": who, "ended": banner(browser)}

        seen = await in_thread(drive)
    assert seen["asked"] and "paste a new one" in seen["banner"] and "user 4004" in seen["who"]
    assert "session has ended" in seen["ended"]


async def test_in_redirect_mode_the_browser_downloads_from_the_bucket(
    tmp_path: Path, browser: WebDriver, downloads: Path
) -> None:
    """``FILE_EXPORT_DOWNLOAD_MODE=redirect``: the page's Download follows the service's
    302 to the bucket's presigned address, and the browser saves the file under its name."""
    bucket = await in_thread(new_bucket)
    settings = make_settings(tmp_path, **s3_settings(bucket), download_mode="redirect")
    try:
        async with running_service(settings) as rt:
            async with client(rt, 4002) as c:
                body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 2000}}
                task_id = (await c.post(API, json=body)).json()["data"]["id"]
                task = await wait_for_status(c, task_id, "SUCCEEDED", "FAILED")
                first = await c.get(f"{API}/{task_id}/download")
            assert task["status"] == "SUCCEEDED", task
            assert first.status_code == 302 and first.headers["Location"].startswith(
                settings.s3_endpoint or ""
            )
            token = token_for(rt, 4002)

            def drive() -> dict[str, Any]:
                sign_in(browser, rt.base_url, token)
                wait_for(browser, lambda d: row_state(d, task_id) == "succeeded", "listed it")
                browser.execute_script(BLOB_SPY)
                press(browser, task_id, "download")
                wait_for(
                    browser,
                    lambda d: [p for p in downloads.iterdir() if p.suffix == ".xlsx"],
                    "downloaded the file from the bucket",
                )
                return dict(browser.execute_script(AFTER_DOWNLOAD, task_id))

            after = await in_thread(drive)
        (saved,) = downloads.iterdir()
        assert saved.name == task["fileName"]
        sheet = openpyxl.load_workbook(saved, read_only=True).worksheets[0]
        assert sheet.max_row == 2001
        assert after == {"blobs": 0, "focus": "download primary"}
        assert len(await in_thread(lambda: object_keys(bucket))) == 1
        assert console_errors(browser) == []
    finally:
        await in_thread(lambda: drop_bucket(bucket))


async def test_a_download_refused_is_told_in_the_banner_and_saves_nothing(
    settings: Settings, browser: WebDriver, downloads: Path
) -> None:
    """The file of a SUCCEEDED export gone from storage: Download says so in the banner (the
    envelope read after the HEAD was refused); the browser saves nothing, not even the
    envelope as a file."""
    async with running_service(settings) as rt:
        async with client(rt, 4003) as c:
            body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 20}}
            task_id = (await c.post(API, json=body)).json()["data"]["id"]
            assert (await wait_for_status(c, task_id, "SUCCEEDED", "FAILED"))["status"] == (
                "SUCCEEDED"
            )
        for path in Path(settings.storage_dir).rglob("*.xlsx"):
            path.unlink()
        token = token_for(rt, 4003)

        def drive() -> str:
            sign_in(browser, rt.base_url, token)
            wait_for(browser, lambda d: row_state(d, task_id) == "succeeded", "listed it")
            press(browser, task_id, "download")
            return str(wait_for(browser, banner, "told why"))

        said = await in_thread(drive)
    assert said == "This export was not found."
    assert list(downloads.iterdir()) == []
