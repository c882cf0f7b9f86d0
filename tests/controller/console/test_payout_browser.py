"""The payout checked by the chip readers, on the dealer's screen in a real browser.

After a winning hand settles, the simulated dealer pays through the chip reader simulator and
puts one chip too many on a winning spot. The screen shows the payout alert at once with what
to do; "No more bets" for the next hand is refused with the reason; the dealer cannot
override; a supervisor signs in and overrides on the page with a reason, which the journal and
the published `payout.checked` record under the supervisor's own staff id.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from game.poker.cards import DECK, Card, parse_card
from simulators.payout import pay_spots
from tests.controller.console.support import DEALER, SUPERVISOR, ConsoleTable, console_table
from tests.controller.console.test_console_browser import (
    WAIT_MS,
    banner_text,
    browser_page,
    shot,
    sign_in_on_page,
)
from wire.messages import PayoutChecked

# A browser walk: in make test-soak (docs/testing.md).
pytestmark = pytest.mark.soak

# Seat 1's aces beat the dealer's nines (the dealer opens): Ante and Play win 1:1.
WINNING = {"seat": ["Ah", "As"], "dealer": ["9c", "2h"],
           "board": ["Kh", "Qs", "9d", "4c", "3s"]}


def stack_the_deck(table: ConsoleTable) -> None:
    """Order the test's deck so the deal gives seat 1 the winning hand."""
    assert table.daemon.service is not None
    wanted = {k: [parse_card(c) for c in v] for k, v in WINNING.items()}
    used = {c for cards in wanted.values() for c in cards}
    spare: list[Card] = [c for c in DECK if c not in used]
    order = []
    for target in table.daemon.service.deal.targets([1]):
        pile = wanted.get(target.kind)
        order.append(pile.pop(0) if pile else spare.pop())
    table.deck = list(reversed(order))  # the test deals from the end


async def test_an_overpay_blocks_the_next_hand_until_a_supervisor_overrides_it(
        tmp_path: Path) -> None:
    problems: list[str] = []
    async with console_table(tmp_path) as table, browser_page(problems) as page:
        await table.open_heat((1,))
        await page.goto(f"{table.url}/")
        await page.wait_for_selector("#live.on", timeout=WAIT_MS)
        await sign_in_on_page(page, DEALER)
        dealer = await table.sign_in(DEALER)

        # One winning hand: Ante and Odds R25, Play 1x at the river, settled.
        stack_the_deck(table)
        await table.place_wagers((1,))
        await table.act(dealer, "no_more_bets")
        assert table.daemon.service is not None
        await table.deal(len(table.daemon.service.deal.targets([1])))
        table.chips.place(1, "play", 2_500)
        await table.until("the play to be read", lambda s: (s.get("spots") or {}).get(
            "1", {}).get("play") == 2_500)
        await table.act(dealer, "settle")
        payout = table.status()["payout"]
        assert payout is not None
        await page.wait_for_selector("#payout [data-state]", timeout=WAIT_MS)

        # The simulated dealer pays, one chip too many on a winning spot.
        over = pay_spots(table.chips, payout["spots"], overpay=True)
        assert over is not None
        alert = await page.wait_for_selector('#alerts [data-kind="payout_overpaid"]',
                                             timeout=WAIT_MS)
        assert alert is not None
        text = await alert.inner_text()
        assert f"seat 1 {over.spot}" in text and "take" in text and "What to do:" in text

        # The next hand is refused on the page, with what is wrong.
        await page.click('#actions [data-action="no_more_bets"]')
        refused = await banner_text(page, "bad", "is not verified")
        assert "overpaid" in refused and "a supervisor overrides" in refused
        await shot(page, "payout-blocked")
        assert table.status()["payout"] is not None and table.status()["hand"] is None

        # The dealer may not override; a supervisor does, on the page, with a reason.
        await page.click('#actions [data-action="payout_override"]')
        await page.fill("#ask-reason", "player kept the extra chip; surveillance told")
        await page.click("#ask-ok")
        await banner_text(page, "bad", "'payout_override' is a supervisor's action")
        await page.click("#sign-out")
        await page.wait_for_selector("#sign-in-open:not(.hidden)", timeout=WAIT_MS)
        await sign_in_on_page(page, SUPERVISOR)
        await page.click('#actions [data-action="payout_override"]')
        await page.fill("#ask-reason", "player kept the extra chip; surveillance told")
        await page.click("#ask-ok")
        await banner_text(page, "good", "payout overridden")
        await table.until("the payout to be released", lambda s: s.get("payout") is None)
        await shot(page, "payout-overridden")

        journal = table.daemon.journal
        assert journal is not None
        [checked] = [m for m in journal.messages(1) if m.type == PayoutChecked.TYPE]
        assert (checked.body["outcome"], checked.body["by"]) == ("overridden",
                                                                 SUPERVISOR["staff_id"])
        assert [(x["spot"], x["held"] - x["expected"]) for x in checked.body["mismatches"]] == [
            (over.spot, over.cents)]
        # The next hand opens now.
        table.chips.clear()
        await table.place_wagers((1,))
        await table.act(dealer, "no_more_bets")
    assert problems == []
