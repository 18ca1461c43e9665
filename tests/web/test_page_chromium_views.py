"""The download center page in a real Chromium (headless, driven by Selenium) against the
whole service on SQLite with the demo Provider (issue 10, item 4), what each view shows:
a retrying export's next attempt and last error at a phone's width (labels, keyboard
focus, no sideways scrolling), an expired export, another user's task kept out of the
list while the administrator sees it with its requester and filters by requester and
status, hostile text shown as text under the Content-Security-Policy, and paging with the
requested-at date range.

Each page state is saved as a screenshot under ``var/test-output/screenshots/``; the
paths are printed when each test ends (``tests/web/conftest.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

from actors.core.messages import catalogue_json
from actors.plumbing.config import Settings
from tests.browser import (
    ADMIN_PERMS,
    API,
    WAIT,
    Shoot,
    client,
    console_errors,
    in_thread,
    open_filters,
    press,
    read_row,
    row,
    row_css,
    row_state,
    set_date,
    shown_ids,
    sign_in,
    token_for,
    wait_for,
)
from tests.helpers import make_settings, running_service, wait_for_status
from tests.own_mariadb import free_port
from web.page import CONTENT_SECURITY_POLICY


async def test_a_retrying_export_shows_its_next_attempt_and_last_error_at_phone_width(
    tmp_path: Path, browser: WebDriver, screenshot: Shoot
) -> None:
    # The demo Provider's service points at a closed port: every attempt fails with a
    # transient connection error and a retry is scheduled 60 s later.
    dead = f"http://127.0.0.1:{free_port()}"
    settings = make_settings(
        tmp_path,
        provider_urls={"demo-service": dead},
        internal_service_token="page-test-service-token",
        retry_backoff_seconds=(60, 900),
    )
    async with running_service(settings) as rt:
        async with client(rt, 4006) as c:
            body = {"exportType": "CUSTOMER_LIST", "taskName": "Waiting for the Provider"}
            task_id = (await c.post(API, json=body)).json()["data"]["id"]

            def drive() -> dict[str, Any]:
                browser.execute_cdp_cmd(
                    "Emulation.setDeviceMetricsOverride",
                    {"width": 375, "height": 812, "deviceScaleFactor": 2, "mobile": True},
                )
                sign_in(browser, rt.base_url, token_for(rt, 4006))
                wait_for(browser, lambda d: row_state(d, task_id) == "retrying", "showed retrying")
                screenshot(browser, "retrying-375px", row_css(task_id))
                texts, buttons = read_row(browser, task_id)
                # Every control has an accessible name; nothing is wider than the phone.
                unnamed = [
                    e.get_attribute("outerHTML")
                    for e in browser.find_elements(
                        By.CSS_SELECTOR, "input, select, textarea, button"
                    )
                    if e.is_displayed() and not e.accessible_name.strip()
                ]
                widths = browser.execute_script(
                    "return [document.documentElement.scrollWidth, window.innerWidth]"
                )
                # The keyboard reaches the row's buttons, and the focus is visible.
                focus_styles = []
                for _ in range(60):
                    ActionChains(browser).send_keys(Keys.TAB).perform()
                    focused = browser.switch_to.active_element
                    if focused.get_attribute("class") == "history":
                        focus_styles.append(focused.value_of_css_property("outline-style"))
                        break
                screenshot(browser, "keyboard-focus-375px")  # focus scrolls
                return {
                    "next": texts["next-attempt"],
                    "error": texts["last-error"],
                    "status": texts["status"],
                    "buttons": buttons,
                    "unnamed": unnamed,
                    "widths": widths,
                    "focus": focus_styles,
                }

            seen = await in_thread(drive)
            task = (await c.get(f"{API}/{task_id}")).json()["data"]
    assert task["status"] == "PENDING" and task["attemptCount"] >= 1
    assert seen["status"] == "Retrying" and seen["buttons"] == ["cancel", "history"]
    assert seen["next"].startswith(
        f"Attempt {task['attemptCount'] + 1} of {task['maxAttempts']} in "
    )
    # The last attempt in plain words — what happened, not "try again later": the service
    # is trying again by itself; the technical message is folded under Details.
    cause = catalogue_json("en")["causes"]["provider-unavailable"]
    assert seen["error"] == f"Last attempt: {cause}" and "later" not in seen["error"]
    assert task["failureReason"].startswith(cause)
    assert task["failureCode"] == "provider-unavailable"
    assert seen["unnamed"] == []
    assert seen["widths"][0] <= seen["widths"][1] == 375, seen["widths"]
    assert seen["focus"] and seen["focus"][0] != "none"
    assert console_errors(browser) == []


async def test_an_expired_export_says_its_file_is_gone(
    tmp_path: Path, browser: WebDriver, screenshot: Shoot
) -> None:
    # Files are kept for 2 seconds and the reconciler looks every 200 ms.
    settings = make_settings(tmp_path, retention_days=2 / 86400, reconciler_poll_ms=200)
    async with running_service(settings) as rt:
        async with client(rt, 4007) as c:
            body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 10}}
            task_id = (await c.post(API, json=body)).json()["data"]["id"]
            await wait_for_status(c, task_id, "EXPIRED", timeout=WAIT)

            def drive() -> tuple[str, str, list[str]]:
                sign_in(browser, rt.base_url, token_for(rt, 4007))
                wait_for(browser, lambda d: row_state(d, task_id) == "expired", "showed EXPIRED")
                screenshot(browser, "expired", row_css(task_id))
                texts, buttons = read_row(browser, task_id)
                return texts["status"], texts[""], buttons

            status, text, buttons = await in_thread(drive)
    assert status == "Expired" and "deleted" in text
    assert buttons == ["edit", "history"]  # export again; no download, cancel or retry
    assert console_errors(browser) == []


async def test_another_users_task_is_invisible_and_the_administrator_sees_and_filters_it(
    settings: Settings, browser: WebDriver, screenshot: Shoot
) -> None:
    async with running_service(settings) as rt:
        ids: dict[int, str] = {}
        # 4101's token carries a name, 4102's none: the page shows the name, else the id.
        for user in (4101, 4102):
            async with client(rt, user, "李雷" if user == 4101 else None) as c:
                body = {
                    "exportType": "CUSTOMER_LIST",
                    "taskName": f"of {user}",
                    "parameters": {"rowCount": 10},
                }
                ids[user] = (await c.post(API, json=body)).json()["data"]["id"]
                await wait_for_status(c, ids[user], "SUCCEEDED", timeout=WAIT)

        def drive() -> dict[str, Any]:
            sign_in(browser, rt.base_url, token_for(rt, 4102))
            wait_for(browser, lambda d: ids[4102] in shown_ids(d), "listed the user's own task")
            own_view = shown_ids(browser)
            requester_column = browser.find_element(
                By.CSS_SELECTOR, "thead .requester"
            ).is_displayed()
            open_filters(browser)
            filter_offered = browser.find_element(By.ID, "filter-requester").is_displayed()
            screenshot(browser, "user-view", row_css(ids[4102]))
            browser.find_element(By.ID, "sign-out").click()
            sign_in(browser, rt.base_url, token_for(rt, 4103, ADMIN_PERMS, "Han Meimei"))
            who = browser.find_element(By.ID, "who").text
            wait_for(browser, lambda d: {ids[4101], ids[4102]} <= shown_ids(d), "listed both")
            requesters = {
                r.get_attribute("data-task-id"): r.find_element(By.CLASS_NAME, "requester").text
                for r in browser.find_elements(By.CSS_SELECTOR, "tr[data-task-id]")
            }
            screenshot(browser, "admin-view", row_css(ids[4101]))
            # Choosing a requester's name shows only their exports (the filter takes the id).
            press(browser, ids[4101], "by")
            wait_for(browser, lambda d: shown_ids(d) == {ids[4101]}, "filtered by requester")
            by_field = browser.find_element(By.ID, "filter-requester").get_attribute("value")
            url = browser.current_url
            screenshot(browser, "admin-filtered", row_css(ids[4101]))
            # Status filters: two checked boxes, as the list's repeated status parameter.
            for status in ("FAILED", "CANCELLED"):
                browser.find_element(
                    By.CSS_SELECTOR, f'#status-filters input[value="{status}"]'
                ).click()
            wait_for(browser, lambda d: not shown_ids(d), "filtered by status")
            empty = browser.find_element(By.CSS_SELECTOR, "#tasks tbody").text
            return {
                "own_view": own_view,
                "requester_column": requester_column,
                "filter_offered": filter_offered,
                "requesters": requesters,
                "empty": empty,
                "who": who,
                "by_field": by_field,
                "url": url,
            }

        seen = await in_thread(drive)
    assert seen["own_view"] == {ids[4102]}  # 4101's task is not shown to 4102
    assert not seen["requester_column"] and not seen["filter_offered"]
    assert seen["who"].startswith("Signed in as Han Meimei")
    assert seen["by_field"] == "4101" and seen["url"].endswith("?by=4101")
    assert seen["requesters"][ids[4101]] == "李雷"
    assert seen["requesters"][ids[4102]] == "user 4102"
    assert seen["empty"] == "No exports match these filters."
    assert console_errors(browser) == []


async def test_hostile_text_is_shown_as_text_and_the_policy_forbids_inline_script(
    settings: Settings, browser: WebDriver
) -> None:
    hostile = "<img src=x onerror=\"document.title='pwned'\">"
    async with running_service(settings) as rt:
        async with client(rt, 4003) as c:
            body = {
                "exportType": "CUSTOMER_LIST",
                "taskName": hostile,
                "parameters": {"rowCount": 10},
            }
            task_id = (await c.post(API, json=body)).json()["data"]["id"]
            page = await c.get("/")
            script = await c.get("/static/download-center.js")
            missing = await c.get("/static/..%2Fpage.py")
            # Only the scripts and styles are served: not Node's marker of ES modules.
            package = await c.get("/static/package.json")

        def drive() -> tuple[str, int, str]:
            sign_in(browser, rt.base_url, token_for(rt, 4003))
            wait_for(browser, lambda d: row_state(d, task_id) is not None, "listed the task")
            images = len(browser.find_elements(By.CSS_SELECTOR, "#tasks img"))
            return (
                row(browser, task_id).find_element(By.CLASS_NAME, "task-name").text,
                images,
                browser.title,
            )

        name, images, title = await in_thread(drive)
    assert name == hostile and images == 0 and title != "pwned"
    assert page.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert "script-src 'self'" in CONTENT_SECURITY_POLICY
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    # One charset, once (a second "; charset=utf-8" was once appended by Quart).
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    assert script.headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert missing.status_code == 404
    assert package.status_code == 404


async def test_twenty_one_exports_take_two_pages_newest_first(
    settings: Settings, browser: WebDriver, screenshot: Shoot
) -> None:
    async with running_service(settings) as rt:
        ids = []
        async with client(rt, 4301) as c:
            for n in range(1, 22):  # one at a time: at most 3 active per user
                body = {
                    "exportType": "CUSTOMER_LIST",
                    "taskName": f"export {n}",
                    "parameters": {"rowCount": n},
                }
                ids.append((await c.post(API, json=body)).json()["data"]["id"])
                await wait_for_status(c, ids[-1], "SUCCEEDED", timeout=WAIT)

        def drive() -> dict[str, Any]:
            sign_in(browser, rt.base_url, token_for(rt, 4301))
            wait_for(browser, lambda d: len(shown_ids(d)) == 20, "showed a full page")
            first = shown_ids(browser)
            # Relative times move on by themselves, without a change of the export.
            newest = f"{row_css(ids[-1])} .requested time"
            before = browser.find_element(By.CSS_SELECTOR, newest).text
            wait_for(
                browser,
                lambda d: d.find_element(By.CSS_SELECTOR, newest).text != before,
                "moved the relative time on",
            )
            label = browser.find_element(By.ID, "page-label").text
            browser.find_element(By.ID, "older").click()
            wait_for(browser, lambda d: shown_ids(d) == {ids[0]}, "showed the oldest on page 2")
            screenshot(browser, "page-2", "#page-label")
            second = browser.find_element(By.ID, "page-label").text
            older_enabled = browser.find_element(By.ID, "older").is_enabled()
            browser.find_element(By.ID, "newer").click()
            wait_for(browser, lambda d: len(shown_ids(d)) == 20, "went back to page 1")
            # The requested-at range: until yesterday shows none, today (from and until,
            # the day included) all 21 on two pages again.
            open_filters(browser)
            set_date(browser, "filter-to", -1)
            wait_for(browser, lambda d: not shown_ids(d), "filtered until yesterday")
            until_yesterday = browser.find_element(By.CSS_SELECTOR, "#tasks tbody").text
            screenshot(browser, "requested-until-yesterday", "#filter-form")
            set_date(browser, "filter-from", 0)
            set_date(browser, "filter-to", 0)
            wait_for(browser, lambda d: len(shown_ids(d)) == 20, "filtered to today")
            today = browser.find_element(By.ID, "page-label").text
            # An old link past the end opens the last page; a status that is not one is
            # no filter (the summary counts none).
            browser.get(rt.base_url + "/?page=99")
            wait_for(browser, lambda d: shown_ids(d) == {ids[0]}, "opened the last page")
            past_end = (
                browser.find_element(By.ID, "page-label").text,
                browser.execute_script("return location.search"),
                browser.find_element(By.ID, "newer").text,
            )
            browser.get(rt.base_url + "/?status=BOGUS")
            wait_for(browser, lambda d: len(shown_ids(d)) == 20, "listed everything")
            bogus = browser.find_element(By.ID, "filters-summary").text
            return {
                "past_end": past_end,
                "bogus": bogus,
                "first": first,
                "label": label,
                "second": second,
                "older": older_enabled,
                "until_yesterday": until_yesterday,
                "today": today,
            }

        seen = await in_thread(drive)
    assert seen["first"] == set(ids[1:])  # newest first: the oldest is on page 2
    assert seen["label"] == "Page 1 of 2" and seen["second"] == "Page 2 of 2"
    assert not seen["older"]
    assert seen["until_yesterday"] == "No exports match these filters."
    assert seen["today"] == "Page 1 of 2"
    assert seen["past_end"] == ("Page 2 of 2", "?page=2", "Previous")
    assert seen["bogus"] == "Filters"
    assert console_errors(browser) == []


async def test_the_api_docs_render_from_this_origin_alone(
    tmp_path: Path, browser: WebDriver, screenshot: Shoot
) -> None:
    """Issue 24 item 4: Swagger UI came from a CDN, without Subresource Integrity, on the
    origin of the session cookie. It is served by the service now, under a policy of this
    origin only; in a browser with no route to any CDN the page renders the API."""
    async with running_service(make_settings(tmp_path)) as rt:

        def drive() -> dict[str, Any]:
            browser.get(f"{rt.base_url}/docs")
            title = wait_for(
                browser,
                lambda d: d.find_element(By.CSS_SELECTOR, ".swagger-ui .info .title").text,
                "rendered the API's title",
            )
            operations = browser.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")
            screenshot(browser, "api-docs")
            sources = browser.execute_script(
                "return [...document.querySelectorAll('script[src], link[href]')]"
                ".map(e => e.src || e.href)"
            )
            return {"title": title, "operations": len(operations), "sources": sources}

        seen = await in_thread(drive)
    assert seen["title"].startswith("Export Center API")
    assert seen["operations"] >= 8
    assert seen["sources"] and all(s.startswith(rt.base_url + "/") for s in seen["sources"])
    assert console_errors(browser) == []


async def test_a_stream_refused_by_the_cap_leaves_the_page_polling(
    tmp_path: Path, browser: WebDriver, screenshot: Shoot
) -> None:
    """Issue 24 item 1: one stream over the caller's cap is refused (an envelope 429, not
    an event stream); the page falls back to polling the list and still shows the export
    finish."""
    settings = make_settings(tmp_path, progress_streams_per_user=1)
    async with running_service(settings) as rt:
        async with (
            client(rt, 4009) as c,
            c.stream("GET", "/api/platform/v1/files/progress") as held,  # the one allowed
        ):
            assert held.status_code == 200
            refused = await c.get("/api/platform/v1/files/progress")
            assert refused.json()["code"] == "429"

            def open_page() -> str:
                sign_in(browser, rt.base_url, token_for(rt, 4009))
                updates = wait_for(
                    browser,
                    lambda d: d.find_element(By.CSS_SELECTOR, '#updates[data-mode="polling"]'),
                    "fell back to polling",
                )
                return str(updates.text)

            mode_text = await in_thread(open_page)
            body = {"exportType": "CUSTOMER_LIST", "parameters": {"rowCount": 2000}}
            task_id = (await c.post(API, json=body)).json()["data"]["id"]

            def finished() -> str:
                wait_for(browser, lambda d: row_state(d, task_id) == "succeeded", "showed it ready")
                screenshot(browser, "stream-refused-polled", row_css(task_id))
                return str(row(browser, task_id).find_element(By.CLASS_NAME, "progress").text)

            progress = await in_thread(finished)
    assert "refreshing every second" in mode_text
    assert progress == "2,000 rows"
