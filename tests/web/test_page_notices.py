"""The ready notice of the download center (issue 36, item 3) in a real Chromium: an
export that finishes while the page is hidden (the person went to another tab) counts in
the tab's title until the page is seen again, and — after the person opted in with the
page's button — raises a browser notification, in the page's language, that brings its
row into view when clicked. The export is held at its Provider until the page is hidden,
so the finish is seen as a change, whatever the machine's speed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser import (
    API,
    Shoot,
    choose_language,
    client,
    in_thread,
    row_state,
    shows,
    sign_in,
    token_for,
)
from tests.browser import wait_for as wait_in_browser
from tests.helpers import make_settings, running_service, wait_for_status
from tests.provider_server import (
    GATED_SERVICE,
    BatchBody,
    gated_demo_registry,
    gated_demo_table,
    serve_provider,
)

#: Records every notification the page raises (the real one is raised too).
NOTIFICATION_SPY = """
window.notices = [];
const Real = window.Notification;
window.Notification = class extends Real {
  constructor(title, options) {
    super(title, options);
    window.notices.push(this);
  }
};
"""
READ_NOTICES = "return window.notices.map((n) => ({title: n.title, body: n.body, tag: n.tag}))"


@pytest.mark.parametrize("language", ["en", "zh-CN"])
async def test_an_export_finished_while_the_page_is_hidden_is_counted_and_notified(
    tmp_path: Path, browser: WebDriver, screenshot: Shoot, language: str
) -> None:
    registry = tmp_path / "registry.yaml"
    registry.write_text(gated_demo_registry(batch_size=100))
    release = trio.Event()

    async def gate(body: BatchBody) -> None:
        await release.wait()

    async with serve_provider(gated_demo_table(gate)) as provider_url:
        settings = make_settings(
            tmp_path,
            registry=registry,
            provider_urls={GATED_SERVICE: provider_url},
            internal_service_token="gated-provider-token",
        )
        async with running_service(settings) as rt, client(rt, 4007) as c:
            body = {"exportType": "CUSTOMER_LIST", "taskName": "Audit", "parameters": {}}
            task_id = (await c.post(API, json=body)).json()["data"]["id"]
            page = browser.current_window_handle

            def before() -> dict[str, Any]:
                choose_language(browser, rt.base_url, language)
                sign_in(browser, rt.base_url, token_for(rt, 4007))
                wait_in_browser(
                    browser, lambda d: row_state(d, task_id) == "running", "showed it running"
                )
                offered = shows(browser, "notify")
                screenshot(browser, f"{language}-notify-offered")
                browser.execute_cdp_cmd(
                    "Browser.grantPermissions",
                    {"origin": rt.base_url, "permissions": ["notifications"]},
                )
                browser.find_element(By.ID, "notify").click()
                wait_in_browser(browser, lambda d: not shows(d, "notify"), "took the yes")
                browser.execute_script(NOTIFICATION_SPY)
                title = browser.title
                browser.switch_to.new_window("tab")  # the person looks elsewhere
                return {"offered": offered, "title": title}

            seen = await in_thread(before)

            release.set()
            assert (await wait_for_status(c, task_id, "SUCCEEDED", "FAILED"))["status"] == (
                "SUCCEEDED"
            )

            def titles(d: WebDriver) -> list[str]:
                """The titles of the browser's tabs, read from the tab in front (CDP), so
                the hidden page stays hidden."""
                targets = d.execute_cdp_cmd("Target.getTargets", {})["targetInfos"]
                return [str(x["title"]) for x in targets if x["type"] == "page"]

            def after() -> dict[str, Any]:
                seen["counted"] = wait_in_browser(
                    browser,
                    lambda d: next((x for x in titles(d) if x.startswith("(1) ")), None),
                    "counted it in the hidden tab's title",
                )
                browser.close()  # the other tab; the page comes to the front
                browser.switch_to.window(page)
                wait_in_browser(browser, lambda d: not d.title.startswith("("), "cleared it")
                seen["seen_again"] = browser.title
                seen["notices"] = browser.execute_script(READ_NOTICES)
                browser.execute_script("window.notices[0].dispatchEvent(new Event('click'))")
                seen["highlighted"] = browser.find_element(
                    By.CSS_SELECTOR, f'tr[data-task-id="{task_id}"]'
                ).get_attribute("class")
                screenshot(browser, f"{language}-ready-after-notice")
                return seen

            seen = await in_thread(after)
    assert seen["offered"]
    assert seen["counted"] == f"(1) {seen['title']}"
    assert seen["seen_again"] == seen["title"]
    assert "highlight" in (seen["highlighted"] or "")
    (notice,) = seen["notices"]
    assert notice["tag"] == f"export-{task_id}"
    if language == "en":
        assert notice["title"] == "“Audit” is ready"
        assert notice["body"] == "Its file can be downloaded from the download center."
    else:
        assert notice["title"] == "“Audit”已就绪"
        assert notice["body"] == "可以在下载中心下载文件。"
