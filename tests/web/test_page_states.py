"""Every state of the download center page, in both languages, at a desktop's and a
phone's width, checked by axe-core in a real Chromium (issue 26, "Done when").

One account holds an export in each state a person meets: ready, ready with no rows,
queued, running, retrying, failed for a reason only editing fixes, failed for a reason only
support fixes, and cancelled. The first two are made by the real pipeline; the service then
restarts on the same database with no consumer, so the others stay where the store's own
transitions put them (an expired file too). At each width the test walks sign-in, a
refused token, a list with no export yet, the list, a failure's details,
the new-export panel (by keyboard), a duplicate submission, the history drawer and a
filtered empty list reloaded from its URL; axe-core must find no serious or critical
violation in any of them, and each is saved as a screenshot
(``var/test-output/screenshots/test_every_state…``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

from actors.core.messages import catalogue_json
from actors.core.outcomes import RetryOutcome
from tests.browser import (
    API,
    Shoot,
    axe_violations,
    banner,
    client,
    console_errors,
    in_thread,
    read_row,
    row_css,
    row_state,
    shown_ids,
    shows,
    sign_in,
    token_for,
    wait_for,
)
from tests.helpers import claim, complete, make_settings, running_service, wait_for_status

USER = 4501
#: Widths a person uses: a laptop and a phone (CSS pixels).
#: An automatic retry whose time has come (web/static/i18n.js, dueNow).
DUE_NOW = {"en": "starting now", "zh-CN": "即将开始"}
DESKTOP = {"width": 1366, "height": 900, "deviceScaleFactor": 1, "mobile": False}
PHONE = {"width": 375, "height": 800, "deviceScaleFactor": 2, "mobile": True}
#: What the page calls each state, by language (the row's status label).
LABELS = {
    "en": {"succeeded": "Ready", "queued": "Queued", "running": "Running", "expired": "Expired"},
    "zh-CN": {"succeeded": "已就绪", "queued": "排队中", "running": "导出中", "expired": "已过期"},
}


async def _exports(tmp_path: Path) -> dict[str, str]:
    """Make one export in each state; returns task ids by state name."""
    ids: dict[str, str] = {}
    settings = make_settings(tmp_path)
    async with running_service(settings) as rt, client(rt, USER) as c:
        for name, parameters in (
            ("ready", {"rowCount": 20}),
            ("warned", {"rowCount": 20, "edgeCases": True}),  # a cell cut: a data warning
            ("no-rows", {"keyword": "no customer is called this"}),
        ):
            body = {"exportType": "CUSTOMER_LIST", "taskName": name, "parameters": parameters}
            ids[name] = (await c.post(API, json=body)).json()["data"]["id"]
            await wait_for_status(c, ids[name], "SUCCEEDED")
    # The same database, no consumer: what the store's transitions set stays as set.
    async with running_service(make_settings(tmp_path, consumer_enabled=False)) as rt:
        store = rt.store
        async with client(rt, USER) as c:

            async def created(name: str, rows: int) -> Any:
                body = {"exportType": "CUSTOMER_LIST", "taskName": name}
                body["parameters"] = {"rowCount": rows}
                ids[name] = (await c.post(API, json=body)).json()["data"]["id"]
                task = await store.get_task(int(ids[name]))
                assert task is not None
                return task

            refused = await claim(store, await created("refused", 101), "other-instance")
            assert await store.fail_task(
                refused,
                "other-instance",
                "provider demo-service answered code 400: status must be one of ACTIVE, INACTIVE",
                "ProviderRefusedError",
            )
            broken = await claim(store, await created("broken", 102), "other-instance")
            assert await store.fail_task(
                broken,
                "other-instance",
                "schemaHash changed between batches",
                "ProviderContractError",
            )
            cancelled = await created("cancelled", 103)
            assert (await c.post(f"{API}/{cancelled.id}/cancel")).json()["code"] == "200"
            expired = await claim(store, await created("expired", 107), "other-instance")
            assert await complete(store, expired, "other-instance", retention_seconds=0)
            assert await store.mark_expired(expired.id)  # expires_at is now: due at once
            running = await claim(
                store, await created("running", 105), "other-instance", lease=3600
            )
            assert await store.report_progress(running, "other-instance", 40_000, 105_000)
            waiting = await claim(store, await created("retrying", 106), "other-instance")
            outcome = await store.schedule_retry(
                waiting,
                "other-instance",
                "provider demo-service unreachable: ConnectError: [Errno 111] Connection refused",
                0,  # due at once, and never claimed here (no consumer): an overdue retry
                "ProviderUnavailableError",
            )
            assert outcome == RetryOutcome.SCHEDULED
    return ids


def _check(driver: WebDriver, screenshot: Shoot, found: dict[str, Any], state: str) -> None:
    """Screenshot the state and record axe-core's blocking violations of it."""
    screenshot(driver, state)
    found[state] = axe_violations(driver)


@pytest.mark.parametrize("language", ["en", "zh-CN"])
async def test_every_state_in_both_languages_at_two_widths_is_accessible(
    tmp_path: Path, browser: WebDriver, screenshot: Shoot, language: str
) -> None:
    ids = await _exports(tmp_path)
    words = catalogue_json(language)
    async with running_service(make_settings(tmp_path, consumer_enabled=False)) as rt:
        token = token_for(rt, USER)

        def walk(width: dict[str, Any], tag: str) -> dict[str, Any]:
            found: dict[str, Any] = {}
            browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", width)
            browser.get(rt.base_url + "/")
            wait_for(browser, lambda d: shows(d, "sign-in"), "asked")
            browser.find_element(By.CSS_SELECTOR, f'#language option[value="{language}"]').click()
            wait_for(
                browser,
                lambda d: d.execute_script("return document.documentElement.lang") == language,
                "switched the language",
            )
            _check(browser, screenshot, found, f"{tag}-sign-in")
            field = browser.find_element(By.ID, "token")
            field.send_keys("not-a-jwt", Keys.ENTER)
            wait_for(browser, lambda d: banner(d), "refused the token")
            rejected = banner(browser)
            _check(browser, screenshot, found, f"{tag}-token-rejected")
            # Someone with no export yet.
            sign_in(browser, rt.base_url, token_for(rt, USER + 1))
            wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "tr.empty"), "empty")
            nothing = browser.find_element(By.CSS_SELECTOR, "#tasks tbody").text
            _check(browser, screenshot, found, f"{tag}-no-exports-yet")
            browser.find_element(By.ID, "sign-out").click()
            wait_for(browser, lambda d: shows(d, "sign-in"), "signed out")
            sign_in(browser, rt.base_url, token)
            wait_for(browser, lambda d: set(ids.values()) <= shown_ids(d), "listed every export")

            def export(name: str) -> None:
                # By keyboard: the panel opens on Enter, the form is filled by typing,
                # Enter submits.
                opener = browser.find_element(By.ID, "new-export")
                browser.execute_script("arguments[0].focus()", opener)
                opener.send_keys(Keys.ENTER)
                wait_for(browser, lambda d: shows(d, "new-export-panel"), "opened the panel")
                if name == "queued":
                    _check(browser, screenshot, found, f"{tag}-new-export")
                field = browser.find_element(By.ID, "param-rowCount")
                leftovers.append(field.get_attribute("value"))  # the last export's, if any
                field.clear()
                field.send_keys(str(rows_asked))
                browser.find_element(By.ID, "task-name").send_keys(name, Keys.ENTER)
                wait_for(browser, lambda d: not shows(d, "new-export-panel"), "closed the panel")

            rows_asked = 104 if tag == "desktop" else 204
            leftovers: list[str | None] = []
            export("queued")
            queued = wait_for(
                browser,
                lambda d: d.find_element(By.CSS_SELECTOR, "tr.highlight").get_attribute(
                    "data-task-id"
                ),
                "highlighted the new export",
            )
            accepted = banner(browser)
            wait_for(browser, lambda d: row_state(d, queued) == "queued", "showed it queued")
            _check(browser, screenshot, found, f"{tag}-list")
            rows = {name: read_row(browser, task_id) for name, task_id in ids.items()}
            # Scrolled so the top card is at the top of the screen, with a banner shown:
            # what is there is the card, not the banner over it.
            covered = browser.execute_script(
                "const tr = document.querySelector('tr[data-task-id]');"
                "tr.scrollIntoView({block: 'start'});"
                "const box = tr.getBoundingClientRect();"
                "const hit = document.elementFromPoint(box.left + box.width / 2, box.top + 4);"
                "return Boolean(hit) && !tr.contains(hit);"
            )
            note_lang = browser.execute_script(
                "return [...document.querySelectorAll('.notes .technical ul')].map((u) => u.lang)"
            )
            rows["queued"] = read_row(browser, queued)
            heights = browser.execute_script(
                "return [...document.querySelectorAll('tr[data-task-id]')]"
                ".map((r) => r.getBoundingClientRect().height)"
            )
            widths = browser.execute_script(
                "return [document.documentElement.scrollWidth, window.innerWidth]"
            )
            browser.find_element(
                By.CSS_SELECTOR, f"{row_css(ids['refused'])} .more summary"
            ).click()
            _check(browser, screenshot, found, f"{tag}-failure-details")
            # The same request again within a minute: flagged as a duplicate, and the
            # existing export is the one highlighted.
            export("again")
            wait_for(browser, lambda d: banner(d) != accepted, "answered the second request")
            duplicate = banner(browser)
            highlighted = browser.find_element(By.CSS_SELECTOR, "tr.highlight").get_attribute(
                "data-task-id"
            )
            _check(browser, screenshot, found, f"{tag}-duplicate")
            history = browser.find_element(By.CSS_SELECTOR, f"{row_css(ids['refused'])} .history")
            browser.execute_script("arguments[0].focus()", history)
            history.send_keys(Keys.ENTER)
            wait_for(
                browser,
                lambda d: d.find_elements(
                    By.CSS_SELECTOR, '#events li[data-kind="attempt_failed"]'
                ),
                "showed the history",
            )
            events = browser.find_element(By.ID, "events").text
            _check(browser, screenshot, found, f"{tag}-history")
            browser.switch_to.active_element.send_keys(Keys.ESCAPE)
            # Cancel the queued export (at most three may be active per person).
            cancel = browser.find_element(By.CSS_SELECTOR, f"{row_css(queued)} .cancel")
            browser.execute_script("arguments[0].focus()", cancel)
            cancel.send_keys(Keys.ENTER)
            wait_for(browser, lambda d: shows(d, "confirm-stop"), "asked before stopping")
            _check(browser, screenshot, found, f"{tag}-stop-question")
            browser.find_element(By.ID, "confirm-stop-yes").click()
            wait_for(browser, lambda d: row_state(d, queued) == "cancelled", "cancelled it")
            # The banner follows a switch of language, and back.
            said = banner(browser)
            other = "en" if language == "zh-CN" else "zh-CN"
            for tag_ in (other, language):
                title = browser.title
                browser.find_element(By.CSS_SELECTOR, f'#language option[value="{tag_}"]').click()
                # The page's lang changes at once, its words once the service's catalogue
                # in that language is loaded: the title and the banner change together.
                wait_for(
                    browser,
                    lambda d, tag_=tag_, title=title: (
                        d.execute_script("return document.documentElement.lang") == tag_
                        and d.title != title
                    ),
                    "switched the language",
                )
                if tag_ == other:
                    switched = banner(browser)
            back = banner(browser)
            # It stays in view while the list scrolls, so it can be put away.
            browser.find_element(By.ID, "banner-close").click()
            put_away = not browser.find_element(By.ID, "banner").is_displayed()
            # Filters live in the URL: a reload (or a shared link) keeps them.
            browser.get(rt.base_url + "/?status=EXPIRED&from=2020-01-01&to=2020-01-02")
            wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "tr.empty"), "filtered")
            empty = browser.find_element(By.CSS_SELECTOR, "#tasks tbody").text
            checked = (
                browser.find_element(
                    By.CSS_SELECTOR, '#status-filters input[value="EXPIRED"]'
                ).is_selected()
                and browser.find_element(By.ID, "filter-from").get_attribute("value")
                == "2020-01-01"
            )
            _check(browser, screenshot, found, f"{tag}-filtered-empty")
            browser.find_element(By.ID, "sign-out").click()
            wait_for(browser, lambda d: shows(d, "sign-in"), "signed out")
            return {
                "violations": found,
                "rejected": rejected,
                "nothing": nothing,
                "rows": rows,
                "note_lang": note_lang,
                "covered": covered,
                "heights": heights,
                "widths": widths,
                "duplicate": duplicate,
                "leftovers": leftovers,
                "said": said,
                "switched": switched,
                "back": back,
                "put_away": put_away,
                "accepted": accepted,
                "highlighted": highlighted == queued,
                "events": events,
                "empty": empty,
                "checked": checked,
                "heading": browser.find_element(By.ID, "sign-in-heading").text,
            }

        desktop = await in_thread(lambda: walk(DESKTOP, "desktop"))
        phone = await in_thread(lambda: walk(PHONE, "phone"))
        # Read while the service still runs: a page left open on a stopped service logs
        # its stream's refused reconnections.
        errors = console_errors(browser)

    for seen in (desktop, phone):
        assert {state: v for state, v in seen["violations"].items() if v} == {}
        rows = seen["rows"]
        labels = LABELS[language]
        assert rows["ready"][0]["status"] == labels["succeeded"]
        assert rows["queued"][0]["status"] == labels["queued"]
        assert rows["running"][0]["status"] == labels["running"]
        assert rows["expired"][0]["status"] == labels["expired"]
        assert rows["expired"][1] == ["edit", "history"]  # export it again
        # In the person's words, not the service's technical message.
        refused_words = words["failures"]["provider-refused"]
        assert rows["refused"][0]["reason"] == refused_words
        assert rows["broken"][0]["reason"] == words["failures"]["provider-contract"]
        assert rows["cancelled"][0]["reason"] == words["failures"]["cancelled"]
        # The one action that helps.
        assert rows["refused"][1] == ["edit", "history"]
        assert rows["broken"][1] == ["history"]  # support: retrying cannot help
        assert rows["cancelled"][1] == ["retry", "history"]
        assert rows["ready"][1] == ["download", "history"]
        assert rows["running"][1] == ["cancel", "history"]
        assert rows["no-rows"][0]["no-rows"]  # a state of its own, not a broken bar
        assert rows["cancelled"][0]["progress"] == ""  # no half bar on a stopped export
        assert "%" in rows["running"][0]["progress"]
        assert seen["widths"][0] <= seen["widths"][1]  # nothing wider than the screen
        assert refused_words in seen["events"]
        assert seen["checked"] and seen["empty"]
        assert seen["highlighted"]  # the duplicate points at the existing row
        assert seen["leftovers"] == ["", ""]  # each export starts from an empty form
        assert seen["switched"] != seen["said"] == seen["back"]  # the banner is re-worded
        assert seen["put_away"]
        assert "demo-service" not in rows["refused"][0]["reason"]
        # One language per note: the warning in the person's words, the service's English
        # line folded under technical details (and marked as English).
        assert rows["warned"][0]["notes"] == words["warnings"]["truncated-cells"], rows["warned"]
        assert seen["note_lang"] == ["en"]
        assert not seen["covered"], "the banner covers the top card"
        # The exact time is text, not only a hover title (out of reach on a phone).
        exact = rows["ready"][0]["exact"]
        assert str(datetime.now(UTC).year) in exact and ("UTC" in exact or "GMT" in exact), exact
        # While the service retries by itself: what happened, not "try again later"; a
        # retry that is due says so, not "37 seconds ago".
        cause = words["causes"]["provider-unavailable"]
        assert rows["retrying"][0]["last-error"].endswith(cause)
        assert rows["retrying"][0]["next-attempt"].endswith(DUE_NOW[language])
    if language == "zh-CN":
        assert desktop["rejected"].startswith("令牌被拒绝")
        assert desktop["nothing"].startswith("还没有导出")
        assert desktop["heading"] == "登录" and "相同的导出" in desktop["duplicate"]
        assert desktop["empty"] == "没有符合这些筛选条件的导出。"
    else:
        assert desktop["rejected"].startswith("The token was rejected")
        assert desktop["nothing"].startswith("No exports yet")
        assert "same export" in desktop["duplicate"] and desktop["heading"] == "Sign in"
        assert desktop["empty"] == "No exports match these filters."
    # About four cards to a phone's screen: the plain states' cards are at most a quarter
    # of its 800 px (a failure's card, with its reason, is taller).
    plain = sorted(phone["heights"])[: len(phone["heights"]) // 2]
    print(f"phone card heights ({language}), px: {sorted(round(h) for h in phone['heights'])}")
    assert max(plain) <= 200, phone["heights"]
    assert errors == []


async def test_the_accessibility_check_finds_what_it_must(
    tmp_path: Path, browser: WebDriver
) -> None:
    """The check above is not vacuous: on the same page, a button without a name and a
    form field without a label are reported as critical violations."""
    async with running_service(make_settings(tmp_path)) as rt:

        def drive() -> list[str]:
            browser.get(rt.base_url + "/")
            wait_for(browser, lambda d: shows(d, "sign-in"), "asked")
            browser.execute_script(
                "const f = document.getElementById('token-form');"
                "f.append(document.createElement('button'));"
                "f.append(document.createElement('input'));"
            )
            return sorted(v["id"] for v in axe_violations(browser))

        found = await in_thread(drive)
    assert {"button-name", "label"} <= set(found), found
