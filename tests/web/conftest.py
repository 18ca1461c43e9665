"""Fixtures of the download center page tests: a headless Chromium, its download
directory, and screenshots of page states (helpers in ``tests/browser.py``)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser import SCREENSHOTS, Shoot, start_chromium


@pytest.fixture
def downloads(tmp_path: Path) -> Path:
    path = tmp_path / "downloads"
    path.mkdir()
    return path


@pytest.fixture
def browser(downloads: Path) -> Iterator[WebDriver]:
    profile = Path(tempfile.mkdtemp(prefix="chromium-profile-"))
    driver = start_chromium(profile, downloads)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def screenshot(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> Iterator[Shoot]:
    """``screenshot(driver, state, at=selector)`` saves what the browser shows, scrolled to
    the element of the CSS ``selector`` if given, as
    ``var/test-output/screenshots/<test>-<n>-<state>.png``; the paths are printed at the
    end of the test (outside pytest's capture, so a reviewer finds them in the log)."""
    saved: list[Path] = []
    for old in SCREENSHOTS.glob(f"{request.node.name}-*.png"):
        old.unlink()

    def take(driver: WebDriver, state: str, at: str | None = None) -> Path:
        if at is not None:  # found and scrolled in one step: a redrawn row is no matter
            driver.execute_script(
                "document.querySelector(arguments[0])?.scrollIntoView({block: 'center'})", at
            )
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{request.node.name}-{len(saved) + 1:02d}-{state}.png"
        assert driver.save_screenshot(str(path)), f"no screenshot {path}"
        saved.append(path)
        return path

    yield take
    with capsys.disabled():
        for path in saved:
            print(f"\nscreenshot: {path}")
