"""The leaderboard page in a real headless browser (Debian's chromium, driven by Playwright).

The whole service runs (LeaderboardService: broker subscription, database, page, SSE); the
browser opens the page; a fake enrolled table publishes a signed score over MQTT; the score
must appear on the page WITHOUT a reload (the page's own state survives), with no script or
Content-Security-Policy error in the console. A screenshot is saved to
var/screenshots/leaderboard.png (its path is printed) and checked to be a real 1920 x 1080
picture.

Needs: ``apt-get install chromium`` (the Debian package, /usr/bin/chromium) and the PyPI
package ``playwright`` (never ``playwright install``: the system chromium is used). Without
either, the test skips and says which is missing.
"""

from __future__ import annotations

import os
import shutil
import struct
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from leaderboard.display_names import entry_code
from tests.fixtures.services import MqttBroker
from tests.leaderboard.support import START, finish, start

REPO = Path(__file__).resolve().parents[2]
SCREENSHOT = REPO / "var" / "screenshots" / "leaderboard.png"
CHROMIUM = os.environ.get("SHOWDOWN_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def _browser_or_skip() -> Any:
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        pytest.skip(f"no chromium at {CHROMIUM}: apt-get install chromium"
                    " (or set SHOWDOWN_CHROMIUM)")
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        pytest.skip("the playwright package is not installed: pip install playwright"
                    " (do not run `playwright install`; the system chromium is used)")
    return async_playwright


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.parametrize("mqtt_broker", ["embedded"], indirect=True)
async def test_a_score_published_over_mqtt_appears_on_the_page_without_reload(
        tmp_path: Path, mqtt_broker: MqttBroker, unique_topic: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    async_playwright = _browser_or_skip()
    run = await start(tmp_path, mqtt_broker, unique_topic)
    problems: list[str] = []
    try:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = await browser.new_page(viewport={"width": 1920, "height": 1080})
                page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
                        if m.type in ("error", "warning") else None)
                page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
                await page.goto(f"http://127.0.0.1:{run.port}/")
                await page.wait_for_selector("body[data-version]", timeout=30_000)
                # SSE connected, the broker subscribed, no table heard from yet: not "live"
                await page.wait_for_selector('#live[data-state="waiting"]', timeout=30_000)
                assert await page.inner_text("#live-text") == "waiting for the tables"
                await page.evaluate("window.__sameDocument = 'not reloaded'")
                assert await page.locator('tr[data-entry="E-LIVE01"]').count() == 0
                assert await page.locator("#board-rows tr").count() == 14

                await run.table.score("E-LIVE01", 575_000, START - timedelta(minutes=3))

                row = await page.wait_for_selector('tr[data-entry="E-LIVE01"]',
                                                   timeout=30_000)
                assert row is not None
                cells = [c.strip() for c in (await row.inner_text()).split("\t")]
                assert cells[:3] == ["1", entry_code("E-LIVE01"), "R5,750.00"]
                assert await page.evaluate("window.__sameDocument") == "not reloaded"
                await page.wait_for_selector("#live.on", timeout=30_000)  # a table was heard
                assert await page.inner_text("#live-text") == "live"
                assert await page.locator("#board-rows tr").count() == 15
                # 16 buy-ins of R100 now: 80% = R1,280.00, 20% = R320.00.
                assert await page.inner_text("#final-pool") == "R1,280.00"
                assert await page.inner_text("#top-pool") == "R320.00"
                assert entry_code("E-f1d2e3") in await page.inner_text("#pending")

                SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
                await page.screenshot(path=str(SCREENSHOT))
            finally:
                await browser.close()
    finally:
        assert await finish(run) == 0
    data = SCREENSHOT.read_bytes()
    with capsys.disabled():
        print(f"\nleaderboard screenshot: {SCREENSHOT} ({len(data)} bytes)")
    assert png_size(data) == (1920, 1080)
    assert len(data) > 30_000, "the screenshot is almost empty"
    assert problems == []


def test_png_size_reads_the_header() -> None:
    header = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + struct.pack(">II", 640, 480)
    assert png_size(header) == (640, 480)

