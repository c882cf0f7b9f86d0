"""The tray counted and confirmed on the dealer's screen in a real browser, at the smallest
dealer screen (1024 x 600): the dealer counts blind in the dialog, the table answers with the
difference from its float; confirming with the dealer's own id is refused in red; the
supervisor's own id and PIN (typed hidden) confirm it, green only because the table accepted;
the panels fit the screen (scrolled to: they lie in the staff panel, below the fold).
Screenshot: build/screens/console/1024x600/counts-confirmed.png."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from game.messages.chips import ChipsCounted
from tests.controller.console.screens import fits, screen_shot
from tests.controller.console.support import DEALER, SUPERVISOR, console_table
from tests.controller.console.test_console_browser import (
    WAIT_MS,
    banner_text,
    browser_page,
    sign_in_on_page,
)

# A browser walk: in make test-soak (docs/testing.md).
pytestmark = pytest.mark.soak

SIZE = (1024, 600)


async def test_the_dealer_counts_and_a_supervisor_confirms_on_the_page(tmp_path: Path) -> None:
    problems: list[str] = []
    async with console_table(tmp_path) as table, browser_page(
            problems, viewport={"width": SIZE[0], "height": SIZE[1]}) as page:
        await table.open_heat((1,), stacks=False)
        registry = table.chips.registry
        tray = Counter(c.value_cents for c in registry if c.chip_set == registry.chip_set)
        await page.goto(f"{table.url}/")
        await page.wait_for_selector("#live.on", timeout=WAIT_MS)
        await sign_in_on_page(page, DEALER)
        await page.wait_for_selector("#counts:not(.hidden)", timeout=WAIT_MS)
        assert "opening: not counted yet" in await page.inner_text("#counts")

        await page.click("#count-tray")
        await page.wait_for_selector("#ask:not(.hidden)", timeout=WAIT_MS)
        assert await page.input_value("#ask-stage") == "opening"
        for value, n in tray.items():
            await page.fill(f"#ask-v{value}", str(n))
        await page.click("#ask-ok")
        said = await banner_text(page, "good", "a supervisor confirms it")
        assert "no difference" in said

        await page.click("#confirm-count")
        await page.wait_for_selector("#ask:not(.hidden)", timeout=WAIT_MS)
        assert await page.get_attribute("#ask-pin", "type") == "password"
        await page.fill("#ask-staff_id", DEALER["staff_id"])
        await page.fill("#ask-pin", DEALER["pin"])
        await page.click("#ask-ok")
        refused = await banner_text(page, "bad", "counted this tray")
        assert refused.startswith(f"{DEALER['staff_id']} counted this tray")

        await page.click("#confirm-count")
        await page.wait_for_selector("#ask:not(.hidden)", timeout=WAIT_MS)
        await page.fill("#ask-staff_id", SUPERVISOR["staff_id"])
        await page.fill("#ask-pin", SUPERVISOR["pin"])
        await page.click("#ask-ok")
        await banner_text(page, "good", "no difference")
        await page.wait_for_function(
            "() => document.getElementById('counts').textContent.includes('confirmed by')",
            timeout=WAIT_MS)
        for panel in ("counts", "decks"):  # in the staff panel, below the fold (console.css)
            await page.evaluate(f"document.getElementById('{panel}').scrollIntoView()")
            assert await fits(page, [f"#{panel}"]) == []
        await screen_shot(page, SIZE, "counts-confirmed")
        assert table.daemon.journal is not None
        [message] = [m.body for m in table.daemon.journal.messages(1)
                     if m.type == ChipsCounted.TYPE]
        assert (message["supervisor_id"], message["difference_cents"]) == (
            SUPERVISOR["staff_id"], 0)
        assert problems == []
