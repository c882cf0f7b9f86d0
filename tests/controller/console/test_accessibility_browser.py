"""The console's accessibility, checked by axe-core in real chromium against a real table daemon:
no serious or critical violation on the dealer's screen (signed out with the sign-in keypad
open, during a hand, at settlement with an action's dialog open) nor on the participant's
display (the scores, the acknowledgement keypad).

axe-core comes from the npm registry, pinned by tests/browser/package-lock.json and installed
by `make venv`/`make test` (npm ci). The console's Content-Security-Policy forbids inline
scripts, and axe is injected as one: the browser context of this test alone bypasses the CSP
(Playwright's ``bypass_csp``); the pages themselves are served unchanged. Without
node_modules the test skips, and fails under CI (SHOWDOWN_REQUIRE_SERVICES=1).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from tests import services
from tests.controller.console.support import DEALER, console_table
from tests.controller.console.test_console_browser import (
    WAIT_MS,
    _finish_heat,
    browser_page,
    sign_in_on_page,
)

REPO = Path(__file__).resolve().parents[3]
AXE = REPO / "tests" / "browser" / "node_modules" / "axe-core" / "axe.min.js"
SERIOUS = ("serious", "critical")


def _axe_or_skip() -> Path:
    if AXE.is_file():
        return AXE
    reason = f"axe-core is not installed at {AXE}: npm ci --prefix tests/browser (make venv)"
    if services.services_required():
        pytest.fail(f"{reason} (SHOWDOWN_REQUIRE_SERVICES is set)", pytrace=False)
    pytest.skip(reason)


async def serious_violations(page: Any, where: str) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now, one line each."""
    if not await page.evaluate("() => typeof window.axe === 'object'"):
        await page.add_script_tag(path=str(_axe_or_skip()))
    found = await page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
        ".map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)}))")
    return [f"{where}: {v['impact']} {v['id']} ({v['help']}): {', '.join(v['nodes'])}"
            for v in found if v["impact"] in SERIOUS]


async def test_the_dealers_screen_has_no_serious_accessibility_violation(
        tmp_path: Path) -> None:
    _axe_or_skip()
    problems: list[str] = []
    async with console_table(tmp_path) as table, \
            browser_page(problems, bypass_csp=True) as page:
        await table.open_heat((1, 2))
        random.Random("accessibility").shuffle(table.deck)
        await page.goto(f"{table.url}/")
        await page.wait_for_selector("#seats .seat", timeout=WAIT_MS)
        found = await serious_violations(page, "signed out")
        await page.click("#sign-in-open")
        found += await serious_violations(page, "sign-in keypad")
        await page.click("#sign-in [data-close]")
        await sign_in_on_page(page, DEALER)

        await table.place_wagers((1, 2))
        await page.click('#actions [data-action="no_more_bets"]')
        assert table.daemon.service is not None
        await table.deal(len(table.daemon.service.deal.targets([1, 2])))
        await page.wait_for_selector('#actions [data-action="settle"].ready', timeout=WAIT_MS)
        found += await serious_violations(page, "a hand dealt")

        await page.click('#actions [data-action="settle"]')
        await page.wait_for_selector("#payout tr[data-state]", timeout=WAIT_MS)
        await page.click('#actions [data-action="payout_check"]')
        await page.wait_for_selector('#alerts [data-kind="loser_not_taken"]', timeout=WAIT_MS)
        await page.click('#actions [data-action="payout_override"]')
        await page.wait_for_selector("#ask:not(.hidden)", timeout=WAIT_MS)
        found += await serious_violations(page, "settlement, override dialog open")
    assert found == [], "\n".join(found)
    assert problems == []


async def test_the_participants_display_has_no_serious_accessibility_violation(
        tmp_path: Path) -> None:
    _axe_or_skip()
    problems: list[str] = []
    async with console_table(tmp_path, acknowledge_with=("pin",)) as table, \
            browser_page(problems, bypass_csp=True) as page:
        first, _ = await _finish_heat(table)
        await page.goto(f"{table.url}/player")
        await page.wait_for_selector(f'[data-ack="{first}"]', timeout=WAIT_MS)
        found = await serious_violations(page, "scores")
        await page.click(f'[data-ack="{first}"]')
        found += await serious_violations(page, "acknowledgement keypad")
    assert found == [], "\n".join(found)
    assert problems == []
