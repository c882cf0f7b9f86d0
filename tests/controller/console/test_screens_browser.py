"""The console on the screens tables have, in real chromium against a real table daemon
(simulated shoe and chip reader behind the real drivers).

The dealer's screen at 1024x600, 1280x800 and 1920x1080 (one daemon per size) walks the steps:
signed out and the sign-in keypad, between hands, a hand dealt, the settlement with the payout,
a refused "Payout done" with its alerts (pressed twice: the same alerts collapse into one line
each with a count), the payout verified. The participant's display at 800x480, 1024x600 and
1280x800 walks: the scores, the acknowledgement keypad, a wrong PIN refused with the dialog
still usable, the right PIN accepted. At every step `screens.fits` checks from bounding boxes
that what the step needs is inside the viewport and not clipped, its touch targets at least
48 px, its text at least 16 px, and that the banner does not cover the phase. The cards of the
settled hand stay on the table view until the next hand opens. Screenshots:
build/screens/console/<size>/<step>.png; the pay/take table's top at each size is printed.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.controller.console.screens import (
    DEALER_SIZES,
    PLAYER_SIZES,
    QUICK_DEALER,
    QUICK_PLAYER,
    fits,
    screen_shot,
    size_params,
    top_of,
)
from tests.controller.console.support import DEALER, PLAYER_PIN, console_table
from tests.controller.console.test_console_browser import (
    WAIT_MS,
    _finish_heat,
    banner_text,
    browser_page,
    sign_in_on_page,
)

HAND_SHOWN = ["#phase", "#dealer-cards .card[data-card]", "#board .card[data-card]",
              "#seats .hole .card[data-card]"]


def _ids(size: tuple[int, int]) -> str:
    return f"{size[0]}x{size[1]}"


@pytest.mark.parametrize("size", size_params(DEALER_SIZES, QUICK_DEALER))
async def test_the_dealer_sees_each_step_on_one_screen(tmp_path: Path,
                                                       size: tuple[int, int]) -> None:
    problems: list[str] = []
    viewport = {"width": size[0], "height": size[1]}
    async with console_table(tmp_path) as table, \
            browser_page(problems, viewport=viewport) as page:
        await table.open_heat((1, 2))
        random.Random(f"screens-{size}").shuffle(table.deck)  # a deck in order is held
        await page.goto(f"{table.url}/")
        await page.wait_for_selector("#live.on", timeout=WAIT_MS)
        await page.wait_for_selector("#seats .seat", timeout=WAIT_MS)

        # Signed out: the phase, the seats and Sign in; the keypad dialog fits the screen.
        assert await fits(page, ["#phase", "#sign-in-open", "#seats .seat"]) == []
        await screen_shot(page, size, "signed-out")
        await page.click("#sign-in-open")
        assert await fits(page, ["#phase", "#sign-in .dialog", "#staff-id", "#staff-pin",
                                 "#sign-in .keypad .key", "#sign-in-pin", "#sign-in-card",
                                 "#sign-in [data-close]"]) == []
        await screen_shot(page, size, "sign-in")
        await page.click("#sign-in [data-close]")
        await sign_in_on_page(page, DEALER)

        # Between hands: the wagers as read and No more bets.
        await table.place_wagers((1, 2))
        await page.wait_for_selector('#seats [data-seat="2"] [data-spot="odds"]',
                                     timeout=WAIT_MS)
        assert await fits(page, ["#phase", '#actions [data-action="no_more_bets"]',
                                 "#seats .seat", "#seats [data-spot]", "#banner"]) == []
        await screen_shot(page, size, "between-hands")

        # A hand dealt: every card in its place, Settle, the alerts panel.
        await page.click('#actions [data-action="no_more_bets"]')
        await banner_text(page, "good", "no more bets")
        assert table.daemon.service is not None
        await table.deal(len(table.daemon.service.deal.targets([1, 2])))
        await page.wait_for_function(
            "() => document.querySelectorAll('#seats .hole .card[data-card]').length === 4"
            " && document.querySelectorAll('#board .card[data-card]').length === 5",
            timeout=WAIT_MS)
        assert await fits(page, [*HAND_SHOWN, '#actions [data-action="settle"]',
                                 ".alerts-panel h2"]) == []
        await screen_shot(page, size, "hand-dealt")

        # Settled: the pay/take of every spot beside the cards, which stay.
        await page.click('#actions [data-action="settle"]')
        await banner_text(page, "good", "settled")
        await page.wait_for_selector("#payout tr[data-state]", timeout=WAIT_MS)
        payout = table.status()["payout"]
        assert payout is not None
        assert await page.locator("#payout tr[data-state]").count() == 4
        settle_needs = [*HAND_SHOWN, "#payout tr[data-state]", "#payout td.paytake",
                        '#actions [data-action="payout_check"]',
                        '#actions [data-action="payout_override"]']
        payout_top = await top_of(page, "#payout table")
        await screen_shot(page, size, "settle")
        assert await fits(page, settle_needs) == []
        assert await page.locator("#seats .hole .card[data-card]").count() == 4

        # Payout done with the losers not taken: refused, the next hand blocked, the alerts.
        await page.click('#actions [data-action="payout_check"]')
        refused = await banner_text(page, "bad", "is not verified")
        assert "take the losing chips" in refused
        await page.wait_for_function(
            "() => document.querySelectorAll('#alerts [data-kind=\"loser_not_taken\"]')"
            ".length === 4", timeout=WAIT_MS)
        assert table.status()["payout"] is not None
        await screen_shot(page, size, "payout-refused")
        found = await fits(page, [*settle_needs, "#alerts .alert", "#banner"])
        assert found == [], found

        # Pressed again: the same four alerts, each one line with a count of 2.
        await page.click('#actions [data-action="payout_check"]')
        await page.wait_for_function(
            "() => Array.from(document.querySelectorAll('#alerts [data-kind=\"loser_not_taken\"]'))"
            ".every(a => a.dataset.count === '2')", timeout=WAIT_MS)
        assert await page.locator('#alerts [data-kind="loser_not_taken"]').count() == 4
        assert await page.locator("#alerts .alert-times").all_inner_texts() == ["×2"] * 4
        # A tap on the banner opens the whole refusal when it is longer than it shows; the
        # next tap puts it away.
        if await page.evaluate("() => { const b = document.getElementById('banner');"
                               " return b.scrollHeight > b.clientHeight + 1; }"):
            await page.click("#banner")
            assert await page.evaluate("() => { const b = document.getElementById('banner');"
                                       " return b.scrollHeight <= b.clientHeight + 1; }")
            await screen_shot(page, size, "payout-refusal-opened")
        await page.click("#banner")
        await page.wait_for_selector("#banner.hidden", state="attached", timeout=WAIT_MS)
        assert await fits(page, [*settle_needs, "#alerts .alert"]) == []
        await screen_shot(page, size, "payout-alerts")

        # The losers taken: verified; the cards stay until the next hand opens.
        table.chips.clear()
        await table.until("the payout to be verified", lambda s: s.get("payout") is None)
        await page.wait_for_selector('#phase[data-phase="idle"]', timeout=WAIT_MS)
        assert await fits(page, [*HAND_SHOWN, '#actions [data-action="no_more_bets"]']) == []
        await screen_shot(page, size, "payout-verified")
        print(f"{_ids(size)}: pay/take table top at y={payout_top:.0f} px")
        assert payout_top < size[1] / 2, "the pay/take table starts in the screen's upper half"
    assert problems == []


@pytest.mark.parametrize("size", size_params(PLAYER_SIZES, QUICK_PLAYER))
async def test_the_participant_acknowledges_on_one_screen(tmp_path: Path,
                                                          size: tuple[int, int]) -> None:
    problems: list[str] = []
    viewport = {"width": size[0], "height": size[1]}
    async with console_table(tmp_path, acknowledge_with=("pin",)) as table, \
            browser_page(problems, viewport=viewport) as page:
        first, second = await _finish_heat(table)
        await page.goto(f"{table.url}/player")
        await page.wait_for_selector(f'#scores [data-entry="{second}"]', timeout=WAIT_MS)
        assert await fits(page, ["#phase", "#scores .score-card", "#scores .big-score",
                                 "[data-ack]", "[data-dispute]"]) == []
        await screen_shot(page, size, "scores")

        dialog = ["#ack .dialog", "#ack-score", "#ack-pin-input", "#ack .keypad .key",
                  "#ack-ok", "#ack [data-close]"]
        await page.click(f'[data-ack="{first}"]')
        assert await fits(page, dialog) == []
        await screen_shot(page, size, "acknowledge")

        for digit in "0000":
            await page.click(f'.keypad[data-keypad-for="ack-pin-input"] [data-key="{digit}"]')
        await page.click("#ack-ok")
        await banner_text(page, "bad", "that PIN is not the PIN of this entry's player")
        assert await fits(page, [*dialog, "#banner"]) == []
        await screen_shot(page, size, "acknowledge-refused")

        for digit in PLAYER_PIN[1]:
            await page.click(f'.keypad[data-keypad-for="ack-pin-input"] [data-key="{digit}"]')
        await page.click("#ack-ok")
        await banner_text(page, "good", "score acknowledged")
        await page.wait_for_selector(f'#done [data-slip="{first}"]', timeout=WAIT_MS)
        assert await fits(page, ["#phase", f'#done [data-slip="{first}"]',
                                 f'[data-ack="{second}"]', "#banner"]) == []
        await screen_shot(page, size, "acknowledged")
    assert problems == []
