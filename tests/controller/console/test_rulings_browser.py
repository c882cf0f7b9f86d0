"""A supervisor's rulings on the dealer's screen in headless chromium, against a real table
daemon (simulated shoe and chip reader behind the real drivers): several alerts resolved in
one act from the alerts panel (a dealer's try refused, shown red; each resolution recorded
under the supervisor), and a settled hand ruled on from the game recall (a ruling the table
refuses shown red, a void shown green and recorded as ``hand.corrected`` made at the table).

Screenshots: var/screenshots/console-resolve-several*.png, console-rule-hand*.png.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from game.hand.events import AlertResolved
from tests.controller.console.support import DEALER, SUPERVISOR, ConsoleTable, console_table
from tests.controller.console.test_console_browser import (
    WAIT_MS,
    banner_text,
    browser_page,
    shot,
    sign_in_on_page,
)

# A browser walk: in make test-soak (docs/testing.md).
pytestmark = pytest.mark.soak


async def _three_alerts(table: ConsoleTable) -> list[int]:
    """A hand dealt in full, then three more cards read: three open alerts (their ids)."""
    session = await table.sign_in(DEALER)
    await table.place_wagers((1, 2))
    await table.act(session, "no_more_bets")
    assert table.daemon.service is not None
    await table.deal(len(table.daemon.service.deal.targets([1, 2])))
    for _ in range(3):
        table.shoe.deal_card(table.next_card())
    await table.until("three alerts", lambda s: len(s["hand"]["open_alerts"]) == 3)
    return [a["id"] for a in table.status()["hand"]["open_alerts"]]


async def test_a_supervisor_resolves_several_alerts_in_one_act_on_the_page(
        tmp_path: Path) -> None:
    problems: list[str] = []
    async with console_table(tmp_path) as table, browser_page(problems) as page:
        await table.open_heat((1, 2))
        ids = await _three_alerts(table)
        await page.goto(f"{table.url}/")
        await page.wait_for_selector("#live.on", timeout=WAIT_MS)

        # A dealer's try: the table refuses, the banner is red and says why.
        await sign_in_on_page(page, DEALER)
        await page.click("#resolve-several-open")
        await page.fill("#resolve-several-reason", "cards set aside")
        await page.click("#resolve-several-ok")
        refused = await banner_text(page, "bad", "'resolve_alerts' is a supervisor's action")
        assert "resolved" not in refused
        assert len(table.status()["hand"]["open_alerts"]) == 3

        await page.click("#sign-out")
        await page.wait_for_selector("#sign-in-open:not(.hidden)", timeout=WAIT_MS)
        await sign_in_on_page(page, SUPERVISOR)
        assert await page.inner_text("#resolve-several-open") == "Resolve several (3)"
        await page.click("#resolve-several-open")
        boxes = page.locator("#resolve-several-checks input[type=checkbox]")
        assert await boxes.count() == 3
        assert [await boxes.nth(i).is_checked() for i in range(3)] == [True, True, True]
        await page.click('#resolve-several .quick button:has-text("cards set aside")')
        await shot(page, "resolve-several")
        await page.click("#resolve-several-ok")
        await banner_text(page, "good", "3 alerts resolved")
        await page.wait_for_selector("#resolve-several-open.hidden", state="attached",
                                     timeout=WAIT_MS)
        assert table.status()["hand"]["open_alerts"] == []
        assert table.daemon.service is not None
        hand = table.daemon.service.core.hand
        assert hand is not None
        assert [(e.alert_id, e.reason, e.by) for e in hand.events
                if isinstance(e, AlertResolved)] == [
            (i, "cards set aside, not in play", SUPERVISOR["staff_id"]) for i in ids]
        await shot(page, "resolve-several-done")
    assert problems == []


async def test_a_supervisor_rules_on_a_settled_hand_from_the_screen(tmp_path: Path) -> None:
    problems: list[str] = []
    async with console_table(tmp_path) as table, browser_page(problems) as page:
        entries = await table.open_heat((1, 2))
        await table.play_hand(await table.sign_in(DEALER))
        journal = table.daemon.journal
        assert journal is not None
        [settled] = [m.body for m in journal.messages(1) if m.type == "hand.settled"]
        hand_id, net = settled["hand_id"], int(settled["nets"]["2"])
        await page.goto(f"{table.url}/")
        await page.wait_for_selector("#live.on", timeout=WAIT_MS)
        await sign_in_on_page(page, SUPERVISOR)

        # A correction to the net it already counts: the table refuses, shown red.
        await page.click("#rule-hand-open")
        await page.select_option("#ask-seat", "2")
        await page.select_option("#ask-ruling", "correct")
        await page.fill("#ask-net", f"-R{-net // 100}" if net < 0 else f"R{net // 100}")
        await page.click('#ask-fields .quick button:has-text("paid short")')
        await page.click("#ask-ok")
        await banner_text(page, "bad", "already counts")
        assert not [m for m in journal.messages(1) if m.type == "hand.corrected"]

        # A void for seat 2: the correcting record, naming the supervisor, made here.
        await page.click("#rule-hand-open")
        await page.select_option("#ask-seat", "2")
        await page.select_option("#ask-ruling", "void")
        await page.fill("#ask-reason", "misdeal: the burn card was exposed")
        await shot(page, "rule-hand")
        await page.click("#ask-ok")
        await banner_text(page, "good", f"hand {hand_id} voided for seat 2")
        [corrected] = [m.body for m in journal.messages(1) if m.type == "hand.corrected"]
        await shot(page, "rule-hand-done")
    assert (corrected["hand_id"], corrected["entry_id"], corrected["seat"], corrected["ruling"],
            corrected["by"], corrected["made_at"], corrected["recorded_net"]) == (
        hand_id, entries[1], 2, "hand_voided", SUPERVISOR["staff_id"], "table", net)
    assert corrected["reason"] == "misdeal: the burn card was exposed"
    assert problems == []
