"""The connection light in a real browser turns green only from fresh, verified messages.

The walk of test_page_light.py (a forged message, an old one, a replayed copy, a re-used
seq, then a fresh one) with the page open: after each message the test waits for the next
status event the page receives (``#live[data-told]`` counts them; sent every 0.5 s here),
then reads the light.
Needs chromium and the playwright package (see test_page_browser.py; skips without them).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from leaderboard import web
from tests.fixtures.services import MqttBroker
from tests.leaderboard.support import finish, start
from tests.leaderboard.test_page_browser import CHROMIUM, CHROMIUM_ARGS, _browser_or_skip
from tests.leaderboard.test_page_light import walk

_TOLD = "() => Number(document.querySelector('#live').dataset.told || '0')"
_MORE = "n => Number(document.querySelector('#live').dataset.told || '0') > n"


@pytest.mark.parametrize("mqtt_broker", ["embedded"], indirect=True)
async def test_the_light_in_the_browser(tmp_path: Path, mqtt_broker: MqttBroker,
                                        unique_topic: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    async_playwright = _browser_or_skip()
    monkeypatch.setattr(web, "STATUS_SECONDS", 0.5)  # the next status sooner than every 5 s
    run = await start(tmp_path, mqtt_broker, unique_topic)
    try:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = await browser.new_page(viewport={"width": 1280, "height": 720})
                await page.goto(f"http://127.0.0.1:{run.port}/")
                await page.wait_for_function(_MORE, arg=0, timeout=30_000)
                lights: list[tuple[str, str]] = []

                async def check(state: str, _tables: int) -> None:
                    told = await page.evaluate(_TOLD)  # the next status is sent after this
                    await page.wait_for_function(_MORE, arg=told, timeout=30_000)
                    shown = await page.get_attribute("#live", "data-state") or ""
                    green = await page.locator("#live.on").count()
                    lights.append((shown, await page.inner_text("#live-text")))
                    assert shown == state, lights
                    assert green == (1 if state == "live" else 0), lights

                await walk(run, check)
                assert lights[-1] == ("live", "live")
                assert all(text != "live" for _, text in lights[:-1]), lights
            finally:
                await browser.close()
    finally:
        assert await finish(run) == 0
