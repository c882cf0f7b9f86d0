"""The starting stacks to issue on the dealer's screen (issue 32 point 5, D346), in a real
headless chromium against a real daemon with the simulated chip reader behind the real driver:
each seated entry's line says what to place from the tray, follows what the reader reads
("add R25.00"), and goes once the reader has read exactly the stack, which the table issues by
itself (no button). Screenshot: var/screenshots/console-stacks-to-issue.png."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.controller.console.support import console_table
from tests.controller.console.test_console_browser import WAIT_MS, browser_page, shot

# A browser walk: in make test-soak (docs/testing.md).
pytestmark = pytest.mark.soak

_LINE = ("([seat, words]) => { const n = document.querySelector("
         "`#stacks .stack-line[data-seat=\"${seat}\"]`);"
         " return n !== null && n.textContent.includes(words); }")


async def test_the_dealer_sees_what_to_place_and_the_reader_issues_the_stack(
        tmp_path: Path) -> None:
    problems: list[str] = []
    async with console_table(tmp_path) as table, browser_page(problems) as page:
        entries = await table.open_heat((1, 2), stacks=False)
        await page.goto(f"{table.url}/")
        await page.wait_for_selector("#live.on", timeout=WAIT_MS)
        for seat in (1, 2):
            await page.wait_for_function(_LINE, arg=[seat, f"Seat {seat}: place R2,000.00 from"
                                                     " the tray on the seat's spot"],
                                         timeout=WAIT_MS)
        assert "Suggested:" in await page.inner_text("#stacks")
        table.chips.place(1, "ante", 197_500, float_only=True)
        await page.wait_for_function(_LINE, arg=[1, "R1,975.00 read of R2,000.00: add R25.00"],
                                     timeout=WAIT_MS)
        await shot(page, "stacks-to-issue")
        table.chips.place(1, "odds", 2_500, float_only=True)  # exactly the stack: issued
        await page.wait_for_function(
            "() => document.querySelector('#stacks .stack-line[data-seat=\"1\"]') === null",
            timeout=WAIT_MS)
        assert entries[0] in (table.status().get("chips") or {}).get("held", {})
        assert "Seat 2: place R2,000.00" in await page.inner_text("#stacks")
        assert problems == []
