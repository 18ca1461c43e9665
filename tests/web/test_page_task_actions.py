"""The download center page in a real Chromium (headless, driven by Selenium) against the
whole service on SQLite with the demo Provider (issue 10, item 4), what a person does to
one export of the list: a failed export told in plain words, edited and exported again
and its history read in the drawer (by keyboard), which follows the task while open; a
running export stopped after a confirmation (a double tap, Enter or Escape keep it
running), then retried.

Each page state is saved as a screenshot under ``var/test-output/screenshots/``; the
paths are printed when each test ends (``tests/web/conftest.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

from actors.plumbing.config import Settings
from tests.browser import (
    API,
    WAIT,
    Shoot,
    banner,
    choose_language,
    client,
    console_errors,
    in_thread,
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
                # Abandoned: "New export" then starts empty, not from the failed export.
                browser.find_element(By.ID, "new-export").click()
                wait_for(browser, lambda d: shows(d, "new-export-panel"), "opened it anew")
                fresh = [
                    browser.find_element(By.ID, field).get_attribute("value")
                    for field in ("task-name", "extra-parameters")
                ]
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
                    "fresh": fresh,
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
    assert seen["fresh"] == ["", ""]
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
                wait_for(browser, lambda d: shows(d, "confirm-stop"), "asked before stopping")
                browser.find_element(By.ID, "confirm-stop-yes").click()
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


@pytest.mark.parametrize("language", ["en", "zh-CN"])
async def test_stopping_an_export_asks_first_and_a_double_tap_keeps_it_running(
    tmp_path: Path, browser: WebDriver, screenshot: Shoot, language: str
) -> None:
    """One tap on Stop never stops: it asks, "Keep it running" first and focused. A
    double tap on the row's button (the second tap lands on the question's backdrop), Enter
    and Escape all keep the export; only "Stop export" stops it. The words say "stop",
    never 取消 (which reads as "dismiss" in Chinese interfaces)."""
    async with running_service(make_settings(tmp_path, consumer_enabled=False)) as rt:
        async with client(rt, 4006) as c:
            body = {"exportType": "CUSTOMER_LIST", "taskName": "Audit", "parameters": {}}
            task_id = (await c.post(API, json=body)).json()["data"]["id"]

            def drive() -> dict[str, Any]:
                choose_language(browser, rt.base_url, language)
                sign_in(browser, rt.base_url, token_for(rt, 4006))
                wait_for(browser, lambda d: row_state(d, task_id) == "queued", "listed it")
                stop = row(browser, task_id).find_element(By.CLASS_NAME, "cancel")
                seen: dict[str, Any] = {"button": stop.text}
                ActionChains(browser).move_to_element(stop).click().pause(0.15).click().perform()
                seen["after_double_tap"] = (
                    shows(browser, "confirm-stop"),
                    row_state(browser, task_id),
                )
                press(browser, task_id, "cancel", Keys.ENTER)
                wait_for(browser, lambda d: shows(d, "confirm-stop"), "asked")
                seen["question"] = browser.find_element(By.ID, "confirm-stop").text
                seen["focused"] = browser.switch_to.active_element.get_attribute("id")
                screenshot(browser, f"{language}-stop-question")
                browser.switch_to.active_element.send_keys(Keys.ENTER)  # Keep it running
                wait_for(browser, lambda d: not shows(d, "confirm-stop"), "kept it")
                press(browser, task_id, "cancel")
                wait_for(browser, lambda d: shows(d, "confirm-stop"), "asked again")
                browser.switch_to.active_element.send_keys(Keys.ESCAPE)
                wait_for(browser, lambda d: not shows(d, "confirm-stop"), "kept it again")
                seen["kept"] = row_state(browser, task_id)
                press(browser, task_id, "cancel")
                wait_for(browser, lambda d: shows(d, "confirm-stop"), "asked a third time")
                browser.find_element(By.ID, "confirm-stop-yes").click()
                wait_for(browser, lambda d: row_state(d, task_id) == "cancelled", "stopped it")
                return seen

            seen = await in_thread(drive)
            task = (await c.get(f"{API}/{task_id}")).json()["data"]
    assert seen["after_double_tap"] == (False, "queued")
    assert seen["kept"] == "queued" and seen["focused"] == "confirm-keep"
    assert task["status"] == "CANCELLED"
    if language == "en":
        assert seen["button"] == "Stop"
        assert seen["question"].startswith("Stop this export?\n“Audit” stops")
        assert seen["question"].endswith("Keep it running\nStop export")
    else:
        assert seen["button"] == "停止"
        assert seen["question"].startswith("停止这个导出？\n“Audit”将停止")
        assert seen["question"].endswith("继续导出\n停止导出")
        assert "取消" not in seen["question"] + seen["button"]
    assert console_errors(browser) == []
