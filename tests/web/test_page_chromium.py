"""The download center page in a real Chromium (headless, driven by Selenium) against the
whole service on SQLite with the demo Provider (issue 10, item 4), what a person does:
sign in with the cookie session and sign out; create an export from the form built from
the export types, watch its progress bar move, download the file and read it back; retry a
failed export and read its history in the drawer (by keyboard), which follows the task
while open; cancel a running export;
progress by polling when the live stream fails; a rejected token and an ended session.

Each page state is saved as a screenshot under ``var/test-output/screenshots/``; the
paths are printed when each test ends (``tests/web/conftest.py``).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import openpyxl
import trio
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from actors.plumbing.config import Settings
from tests.browser import (
    API,
    WAIT,
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
from tests.helpers import make_settings, running_service


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
            press(browser, task_id, "download")
            wait_for(
                browser,
                lambda d: [p for p in downloads.iterdir() if p.suffix == ".xlsx"],
                "downloaded the file",
            )
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
    assert console_errors(browser) == []


async def test_a_refused_parameter_offers_edit_not_retry_and_the_drawer_tells_its_history(
    tmp_path: Path, browser: WebDriver, screenshot: Shoot
) -> None:
    """A permanent failure is told in plain words with the technical text folded; Retry is
    not offered where it cannot help, "Edit and export again" opens the form filled in, and
    the history reads in plain words too. The registry declares no parameters here (as a
    Provider team's may not), so the create passes what the Provider then refuses."""
    registry = tmp_path / "registry.yaml"
    registry.write_text(
        "definitions:\n  CUSTOMER_LIST:\n    provider-service: demo-service\n"
        "    provider-path: /internal/exports/v1/CUSTOMER_LIST/batches\n"
        "    required-permission: platform:customer:export\n    app-scope: PLATFORM\n"
        "    display-name: {en: Customer list, zh-CN: 客户列表}\n"
    )
    async with running_service(make_settings(tmp_path, registry=registry)) as rt:
        async with client(rt, 4002) as c:
            # The demo Provider refuses status DELETED: a permanent failure.
            body = {"exportType": "CUSTOMER_LIST", "parameters": {"status": "DELETED"}}
            body["taskName"] = "Deleted customers"
            task_id = (await c.post(API, json=body)).json()["data"]["id"]

            def drive() -> dict[str, Any]:
                sign_in(browser, rt.base_url, token_for(rt, 4002))
                wait_for(browser, lambda d: row_state(d, task_id) == "failed", "showed FAILED")
                screenshot(browser, "failed", row_css(task_id))
                texts, buttons = read_row(browser, task_id)
                technical = row(browser, task_id).find_element(By.CLASS_NAME, "failure")
                folded = technical.is_displayed()
                row(browser, task_id).find_element(By.CSS_SELECTOR, ".more summary").click()
                screenshot(browser, "failed-details", row_css(task_id))
                unfolded = technical.text
                press(browser, task_id, "edit")
                wait_for(browser, lambda d: shows(d, "new-export-panel"), "opened the form")
                filled = {
                    "name": browser.find_element(By.ID, "task-name").get_attribute("value"),
                    # No declared field: the parameters wait under "Other parameters".
                    "other": browser.find_element(By.ID, "extra-parameters").get_attribute("value"),
                }
                screenshot(browser, "edit-and-export-again")
                browser.find_element(By.ID, "new-export-close").click()
                # The drawer, by keyboard: Enter opens it, Escape closes it, and the focus
                # goes back to the History button.
                press(browser, task_id, "history", Keys.ENTER)
                wait_for(
                    browser,
                    lambda d: d.find_elements(By.CSS_SELECTOR, "#events li[data-kind]"),
                    "showed the history",
                )
                kinds = [
                    e.get_attribute("data-kind")
                    for e in browser.find_elements(By.CSS_SELECTOR, "#events li[data-kind]")
                ]
                text = browser.find_element(By.ID, "events").text
                raw = browser.find_element(By.ID, "events").get_attribute("textContent")
                screenshot(browser, "history-drawer")
                browser.switch_to.active_element.send_keys(Keys.ESCAPE)
                wait_for(
                    browser, lambda d: not d.find_element(By.ID, "drawer").is_displayed(), "closed"
                )
                focus_back = browser.switch_to.active_element.get_attribute("class")
                return {
                    "texts": texts,
                    "buttons": buttons,
                    "folded": folded,
                    "unfolded": unfolded,
                    "filled": filled,
                    "kinds": kinds,
                    "text": text,
                    "raw": raw,
                    "focus": focus_back,
                }

            seen = await in_thread(drive)
            task = (await c.get(f"{API}/{task_id}")).json()["data"]
    assert task["failureCode"] == "provider-refused" and task["remedy"] == "edit"
    assert seen["texts"]["reason"] == task["failureReason"]  # plain words, not the message
    assert "status must be one of" not in seen["texts"]["reason"]
    assert not seen["folded"] and "status must be one of" in seen["unfolded"]
    assert seen["buttons"] == ["edit", "history"]  # no Retry: it would fail the same way
    assert seen["filled"] == {"name": "Deleted customers", "other": '{"status":"DELETED"}'}
    kinds = seen["kinds"]
    assert kinds[0] == "created" and "claimed" in kinds and "attempt_failed" in kinds
    assert "Attempt failed" in seen["text"] and task["failureReason"] in seen["text"]
    assert "errorClass" not in seen["text"] and "ProviderRefusedError" in seen["raw"]
    assert seen["focus"] == "history"
    assert console_errors(browser) == []


async def test_cancel_of_a_running_export_from_the_page(
    settings: Settings, browser: WebDriver, screenshot: Shoot
) -> None:
    async with running_service(settings) as rt:
        async with client(rt, 4005) as c:
            body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 200_000}}
            task_id = (await c.post(API, json=body)).json()["data"]["id"]

            def drive() -> tuple[str, str, bool]:
                sign_in(browser, rt.base_url, token_for(rt, 4005))
                # The Cancel button of the queued or running export (a fast machine may
                # run 200,000 rows between two updates of the page).
                wait_for(
                    browser,
                    lambda d: d.find_elements(By.CSS_SELECTOR, f"{row_css(task_id)} .cancel"),
                    "offered Cancel",
                )
                screenshot(browser, "before-cancel", row_css(task_id))
                press(browser, task_id, "cancel")
                wait_for(
                    browser, lambda d: row_state(d, task_id) == "cancelled", "showed CANCELLED"
                )
                screenshot(browser, "cancelled", row_css(task_id))
                texts, buttons = read_row(browser, task_id)
                # The keyboard focus stays in the row: on History, as Cancel is gone.
                focus = browser.switch_to.active_element.get_attribute("class")
                return (
                    banner(browser),
                    texts["reason"],
                    buttons == ["retry", "history"] and focus == "history",
                )

            def retry() -> dict[str, str]:
                press(browser, task_id, "retry")
                wait_for(browser, lambda d: "queued again" in banner(d), "confirmed the retry")
                wait_for(
                    browser,
                    lambda d: row(d, task_id).get_attribute("data-version") == "2",
                    "showed the new attempt",
                )
                screenshot(browser, "retried", row_css(task_id))
                restarted = read_row(browser, task_id)[0]
                press(browser, task_id, "history")
                wait_for(
                    browser,
                    lambda d: d.find_elements(
                        By.CSS_SELECTOR, '#events li[data-kind="retry_scheduled"]'
                    ),
                    "showed the retry in the history",
                )
                restarted["history"] = browser.find_element(By.ID, "events").text
                return restarted

            shown_banner, reason, retry_offered = await in_thread(drive)
            task = (await c.get(f"{API}/{task_id}")).json()["data"]
            with trio.fail_after(WAIT):  # the slot settles the aborted run: file deleted
                while any(slot.current is not None for slot in rt.slots):
                    await trio.sleep(0.01)
            leftovers = [o.key for o in await rt.storage.list_objects() if f"/{task_id}/" in o.key]
            restarted = await in_thread(retry)
    assert "cancelled" in shown_banner and retry_offered
    assert reason.startswith("The export was cancelled.")
    # After Retry the row restarts visibly: no cancel reason, the attempt counted again.
    assert "reason" not in restarted and restarted["status"] in ("Queued", "Running", "Ready")
    assert restarted["status"] == "Ready" or "Attempt 1 of 3" in restarted[""]
    # A person's Retry reads as such in the history, not as an automatic retry.
    assert "Retry requested" in restarted["history"]
    assert "Will retry automatically" not in restarted["history"]
    assert "by you" in restarted["history"]
    assert task["status"] == "CANCELLED" and int(task["processedRows"]) < 200_000
    assert leftovers == []
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


async def test_the_open_history_drawer_follows_the_task(
    tmp_path: Path, browser: WebDriver, screenshot: Shoot
) -> None:
    """The drawer stays open while the task changes elsewhere (here: cancelled by its
    owner in another tab, through the API): the progress stream's change reloads its
    events, and the focus stays on Close. No consumer runs, so the task waits queued
    until the cancel, whatever the machine's speed."""
    async with running_service(make_settings(tmp_path, consumer_enabled=False)) as rt:
        async with client(rt, 4007) as c:
            body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 10}}
            created = (await c.post(API, json=body)).json()["data"]
            task_id = created["id"]
            headers = {"Authorization": f"Bearer {token_for(rt, 4007)}"}

            def drive() -> dict[str, Any]:
                sign_in(browser, rt.base_url, token_for(rt, 4007))
                wait_for(browser, lambda d: row_state(d, task_id) is not None, "listed it")
                press(browser, task_id, "history", Keys.ENTER)
                wait_for(
                    browser,
                    lambda d: d.find_elements(By.CSS_SELECTOR, '#events li[data-kind="created"]'),
                    "showed the history",
                )
                with httpx.Client(base_url=rt.base_url, headers=headers, timeout=10) as other:
                    answer = other.post(f"{API}/{task_id}/cancel").json()
                wait_for(
                    browser,
                    lambda d: d.find_elements(By.CSS_SELECTOR, '#events li[data-kind="cancelled"]'),
                    "added the cancel to the open drawer",
                )
                screenshot(browser, "drawer-followed-cancel")
                return {
                    "heading": browser.find_element(By.ID, "drawer-task").text,
                    "answer": answer["data"]["status"],
                    "open": browser.find_element(By.ID, "drawer").is_displayed(),
                    "focus": browser.switch_to.active_element.get_attribute("id"),
                }

            seen = await in_thread(drive)
    assert seen.pop("heading").endswith(f"Trace id {created['traceId']}")  # to quote
    assert seen == {"answer": "CANCELLED", "open": True, "focus": "drawer-close"}
    assert console_errors(browser) == []
