"""A whole hand played through the technician's bench page in a real browser (Debian's
chromium, driven by Playwright), with the dealer's console open in a second page.

A heat is opened and an entry seated by signed desk commands (the test acts as the desk, its
key enrolled in the config). On the bench page the technician lays the starting stack from the
tray, the dealer issues it on the console, the stack is picked up; the player's Ante and Odds
go down from the seat's stack; the dealer presses No more bets; every card is dealt from the
bench's card picker (a stacked deck: seat 1's aces win); the Play goes down; the dealer
settles; the technician pays and takes on the bench what the payout view asks; the console
shows the hand settled and no payout alert. A refused action shows the refusal on the page.
No script or Content-Security-Policy error may appear on either page.

Needs ``apt-get install chromium`` and the ``playwright`` package; without either it skips.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from game.money import format_rand
from game.poker.cards import DECK, parse_card
from tests.controller.console.support import DEALER
from tests.controller.console.test_console_browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    VIEWPORT,
    WAIT_MS,
    _playwright_or_skip,
    banner_text,
    sign_in_on_page,
)
from tests.controller.sim_bench.support import BenchTable, bench_table, spots

# A browser walk: in make test-soak (docs/testing.md).
pytestmark = pytest.mark.soak

# Seat 1's aces beat the dealer's nines (the dealer opens): Ante and Play win.
WINNING = {"seat": ["Ah", "As"], "dealer": ["9c", "2h"],
           "board": ["Kh", "Qs", "9d", "4c", "3s"]}


@asynccontextmanager
async def two_pages(problems: list[str]) -> AsyncIterator[tuple[Any, Any]]:
    """The bench page and the dealer's console page, in one chromium."""
    async_playwright = _playwright_or_skip()
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            pages = []
            for name in ("bench", "console"):
                context = await browser.new_context(viewport=VIEWPORT)
                page = await context.new_page()
                page.on("console", lambda m, n=name: problems.append(
                    f"{n} console {m.type}: {m.text}") if m.type in ("error", "warning")
                    else None)
                page.on("pageerror", lambda e, n=name: problems.append(f"{n} page error: {e}"))
                pages.append(page)
            yield pages[0], pages[1]
        finally:
            await browser.close()


def card_order(bench: BenchTable) -> list[str]:
    """The cards in the order the deal gives them, so seat 1 gets the winning hand."""
    daemon = bench.table.daemon
    assert daemon.service is not None
    wanted = {k: list(v) for k, v in WINNING.items()}
    used = {parse_card(c) for cards in wanted.values() for c in cards}
    spare = [str(c) for c in DECK if c not in used]
    order = []
    for target in daemon.service.deal.targets([1]):
        pile = wanted.get(target.kind)
        order.append(pile.pop(0) if pile else spare.pop())
    return order


async def press(page: Any, button: str, *, ok: bool = True) -> str:
    """Press a bench button; wait for the bench's answer and check it says done (or, with
    ``ok=False``, refused); its text."""
    await page.evaluate("document.getElementById('answer').textContent = ''")
    await page.click(button)
    await page.wait_for_function("() => document.getElementById('answer').textContent !== ''",
                                 timeout=WAIT_MS)
    kind = await page.get_attribute("#answer", "class")
    text = str(await page.inner_text("#answer"))
    assert kind == ("ok" if ok else "refused"), text
    return text


async def chips(page: Any, seat: int, spot: str, amount: str | None = None) -> None:
    """Choose the seat, the spot and the amount on the bench's chip controls."""
    await page.select_option("#chip-seat", str(seat))
    await page.select_option("#chip-spot", spot)
    await page.fill("#chip-amount", amount or "")


async def test_a_whole_hand_through_the_bench_with_the_console_open(tmp_path: Path) -> None:
    problems: list[str] = []
    async with bench_table(tmp_path) as bench, two_pages(problems) as (page, console):
        table = bench.table
        [entry] = await table.open_heat((1,), stacks=False)
        await console.goto(f"{table.url}/")
        await console.wait_for_selector("#live.on", timeout=WAIT_MS)
        await sign_in_on_page(console, DEALER)
        await page.goto(f"{bench.url}/")
        await page.wait_for_selector('#chip-seat option[value="1"]', state="attached",
                                     timeout=WAIT_MS)
        assert await page.get_attribute("#console-link", "href") == f"{table.url}/"

        # The starting stack from the tray, as the console's line says; the table issues it
        # as the reader reads it (no button, D346); the player picks it up.
        await console.wait_for_function(
            "() => (document.querySelector('#stacks .stack-line[data-seat=\"1\"]') || {})"
            ".textContent?.includes('place R2,000.00 from the tray')", timeout=WAIT_MS)
        await chips(page, 1, "ante", "R2,000")
        assert "placed R2,000.00" in await press(page, "#place-tray")
        await table.until("the stack to be issued",
                          lambda s: entry in ((s.get("chips") or {}).get("held") or {}))
        await console.wait_for_function(
            "() => document.querySelector('#stacks .stack-line[data-seat=\"1\"]') === null",
            timeout=WAIT_MS)
        assert "took R2,000.00" in await press(page, "#take-all")
        await page.wait_for_function(
            "() => document.querySelector('#felt tbody tr[data-seat=\"1\"]').cells[2]"
            ".textContent === 'R2,000.00'", timeout=WAIT_MS)
        assert entry in await page.inner_text('#felt tbody tr[data-seat="1"]')

        # A wager the stack cannot cover is refused on the page, and nothing moves.
        await chips(page, 1, "ante", "R5,000")
        refused = await press(page, "#place-stack", ok=False)
        assert "seat 1's stack holds R2,000.00: it cannot wager R5,000.00" in refused

        # Ante and Odds from the seat's stack (the Ante's R500 chip changed on the spot);
        # the dealer calls no more bets.
        for spot in ("ante", "odds"):
            await chips(page, 1, spot, "25")
            assert "from seat 1's stack" in await press(page, "#place-stack")
        await table.until("the wagers", lambda s: spots(s, 1) == {"ante": 2_500, "odds": 2_500})
        await page.wait_for_function(
            "() => document.querySelector('#felt tbody tr[data-seat=\"1\"] .lying')"
            ".textContent === 'ante R25.00, odds R25.00'", timeout=WAIT_MS)
        await console.click('#actions [data-action="no_more_bets"]')
        await banner_text(console, "good", "no more bets")

        # Every card from the bench's picker, each read by the table before the next.
        order = card_order(bench)
        for n, card in enumerate(order, start=1):
            await press(page, f'#card-picker [data-card="{card}"]')
            await table.until(f"card {n}", lambda s, n=n: (s.get("hand") or {}).get(
                "cards_read") == n)
        # A card dealt in this hand cannot be pressed again on the picker.
        await page.wait_for_function(
            "card => document.querySelector(`#card-picker [data-card=\"${card}\"]`).disabled",
            arg=order[-1], timeout=WAIT_MS)
        assert await page.inner_text("#dealt") == " ".join(order)

        # The Play at the river, 1x, from the stack; the dealer settles.
        await chips(page, 1, "play", "R25")
        await press(page, "#place-stack")
        await table.until("the play", lambda s: spots(s, 1).get("play") == 2_500)
        await console.click('#actions [data-action="settle"]')
        await banner_text(console, "good", "settled")
        payout = table.status()["payout"]
        assert payout is not None
        await console.wait_for_selector("#payout [data-state]", timeout=WAIT_MS)

        # The technician pays the wins from the tray and takes the losses, on the bench.
        wins = 0
        for line in payout["spots"]:
            seat, spot, expected = int(line["seat"]), str(line["spot"]), int(line["expected"])
            held = spots(table.status(), seat).get(spot, 0)
            if expected == 0:
                await chips(page, seat, spot)
                await press(page, "#take-all")
            elif expected > held:
                wins += 1
                await chips(page, seat, spot, format_rand(expected - held))
                assert "from the tray" in await press(page, "#place-tray")
        assert wins >= 2  # the Ante and the Play won
        await table.until("the payout verified", lambda s: s.get("payout") is None)

        # The console shows the hand settled, and no payout alert.
        hand_id = str(payout["hand_id"])
        await console.wait_for_function(
            "id => document.getElementById('settle-hand').textContent.includes(id)",
            arg=hand_id, timeout=WAIT_MS)
        await console.wait_for_function(
            "() => document.querySelector('#payout [data-state]') === null"
            " || !document.getElementById('payout-state').textContent", timeout=WAIT_MS)
        assert await console.query_selector_all('#alerts [data-kind^="payout"]') == []
        status = table.status()
        assert status["hand"] is None and status["payout"] is None
        assert status["seats"]["1"]["hands_played"] == 1
    # The browser logs the one refused request (409) as a failed load: nothing else.
    refusal = ("bench console error: Failed to load resource: the server responded with a"
               " status of 409 (Conflict)")
    assert [p for p in problems if p != refusal] == []
    assert problems.count(refusal) == 1
