"""The table console in a real headless browser (Debian's chromium, driven by Playwright),
against a real table daemon with the simulated shoe and chip reader behind the real drivers.

The dealer signs in by PIN on the on-screen keypad; a card dealt by the shoe simulator appears
on the dealer's screen without a reload; a duplicate card raises an alert with what to do; the
dealer's Resolve and Void are refused with the reason shown (supervisor actions), and a
supervisor signs in and resolves the alert through the page. The participant sees the score,
a wrong PIN is refused and the right one accepted, the slip prints the verification code, and
the other entry disputes with a note. No script or Content-Security-Policy error may appear.

Screenshots are saved to var/screenshots/console-*.png (1280 x 800, checked to be PNGs).
Needs ``apt-get install chromium`` and the ``playwright`` package (never ``playwright
install``); without either the test skips (fails under SHOWDOWN_REQUIRE_SERVICES=1).
"""

from __future__ import annotations

import os
import shutil
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests import services
from tests.controller.console.support import (
    DEALER,
    PLAYER_PIN,
    SUPERVISOR,
    ConsoleTable,
    console_table,
)
from wire.messages import ScoreAcknowledged, ScoreDisputed, ScoreRecorded
from wire.verification import verification_code

REPO = Path(__file__).resolve().parents[3]
SHOTS = REPO / "var" / "screenshots"
CHROMIUM = os.environ.get("SHOWDOWN_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1280, "height": 800}
WAIT_MS = 20_000


def _playwright_or_skip() -> Any:
    reason = None
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        reason = f"no chromium at {CHROMIUM}: apt-get install chromium"
    else:
        try:
            from playwright.async_api import async_playwright
        except ImportError:
            reason = "the playwright package is not installed (pip install playwright)"
        else:
            return async_playwright
    if services.services_required():
        pytest.fail(f"{reason} (SHOWDOWN_REQUIRE_SERVICES is set)", pytrace=False)
    pytest.skip(reason)


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


async def shot(page: Any, name: str) -> Path:
    """Save a screenshot of the page and check it is a real, non-empty 1280 x 800 PNG."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"console-{name}.png"
    await page.evaluate("window.scrollTo(0, 0)")
    await page.screenshot(path=str(path))
    data = path.read_bytes()
    assert png_size(data) == (1280, 800)
    assert len(data) > 20_000, f"{path} is almost empty"
    return path


@asynccontextmanager
async def browser_page(problems: list[str], *, viewport: dict[str, int] | None = None,
                       bypass_csp: bool = False) -> AsyncIterator[Any]:
    """A fresh chromium page (1280 x 800 unless ``viewport``) that records console errors,
    warnings and page errors; ``bypass_csp`` lets a test inject a script of its own."""
    async_playwright = _playwright_or_skip()
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = await browser.new_context(viewport=viewport or VIEWPORT,
                                                bypass_csp=bypass_csp)
            page = await context.new_page()
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
                    if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            yield page
        finally:
            await browser.close()


async def sign_in_on_page(page: Any, person: dict[str, str], *, screenshot: str | None = None
                          ) -> None:
    """Open the sign-in panel, type the staff id and press the PIN on the keypad."""
    await page.click("#sign-in-open")
    await page.fill("#staff-id", person["staff_id"])
    for digit in person["pin"]:
        await page.click(f'.keypad[data-keypad-for="staff-pin"] [data-key="{digit}"]')
    assert await page.input_value("#staff-pin") == person["pin"]
    if screenshot:
        await shot(page, screenshot)
    await page.click("#sign-in-pin")
    await page.wait_for_function(
        "name => document.getElementById('me').textContent.includes(name)",
        arg=person["name"], timeout=WAIT_MS)


async def banner_text(page: Any, kind: str, words: str) -> str:
    """Wait for a banner of ``kind`` ("good" or "bad") saying ``words``; its whole text."""
    await page.wait_for_function(
        "([kind, words]) => { const b = document.getElementById('banner');"
        " return b.dataset.kind === kind && !b.classList.contains('hidden')"
        " && b.textContent.includes(words); }", arg=[kind, words], timeout=WAIT_MS)
    return str(await page.inner_text("#banner"))


async def test_the_dealer_signs_in_sees_the_cards_and_a_supervisor_resolves_an_alert(
        tmp_path: Path) -> None:
    problems: list[str] = []
    async with console_table(tmp_path) as table, browser_page(problems) as page:
        await table.open_heat((1, 2))
        await page.goto(f"{table.url}/")
        await page.wait_for_selector("#live.on", timeout=WAIT_MS)  # the event stream is open
        await page.evaluate("window.__sameDocument = 'not reloaded'")
        assert "not signed in" in await page.inner_text("#me")

        # 1. Sign in by PIN on the on-screen keypad (the PIN field shows dots).
        await sign_in_on_page(page, DEALER, screenshot="sign-in")
        assert table.daemon.gate is not None
        assert [s.staff_id for s in table.daemon.gate.sessions.values()] == [DEALER["staff_id"]]
        assert "session" not in await page.evaluate("document.cookie")  # HttpOnly

        # 2. Wagers read by the chip reader, No more bets pressed on the page.
        await table.place_wagers((1, 2))
        await page.wait_for_selector('#seats [data-seat="1"] [data-spot="ante"]',
                                     timeout=WAIT_MS)
        assert "R25.00" in await page.inner_text('#seats [data-seat="1"] [data-spot="ante"]')
        await page.click('#actions [data-action="no_more_bets"]')
        await table.until("the hand to open", lambda s: bool(s.get("hand")))

        # 3. A card dealt by the shoe simulator appears in its position without a reload.
        assert table.daemon.service is not None
        first = table.daemon.service.deal.targets([1, 2])[0]
        table.shoe.deal_card("As")
        table.deck = [c for c in table.deck if str(c) != "As"]
        where = ("#dealer-cards" if first.kind == "dealer"
                 else f'#seats [data-seat="{first.seat}"] .hole')
        await page.wait_for_selector(f'{where} .card[data-card="As"]', timeout=WAIT_MS)
        await table.deal(3)
        await page.wait_for_function(
            "() => document.querySelectorAll('#seats .hole .card, #dealer-cards .card[data-card]')"
            ".length >= 4", timeout=WAIT_MS)
        assert await page.evaluate("window.__sameDocument") == "not reloaded"
        await shot(page, "card-dealt")

        # 4. A fault: the ace of spades read again, and an unknown chip on a spot.
        table.shoe.deal_card("As")
        alert = await page.wait_for_selector('#alerts [data-kind="duplicate_card"]',
                                             timeout=WAIT_MS)
        assert alert is not None
        text = await alert.inner_text()
        assert "As was read again" in text
        assert "What to do:" in text
        table.chips.place_unknown(1, "trips_plus")
        await page.wait_for_selector('#alerts [data-kind="unknown_chip"]', timeout=WAIT_MS)
        assert "paused" in (await page.inner_text("#phase")).lower()

        # 5. The dealer may not resolve it, nor void the hand: the reason is shown.
        version = table.daemon.version
        await page.click("#alerts [data-resolve]")
        await page.fill("#ask-reason", "read again, card set aside")
        await page.click("#ask-ok")
        refused = await banner_text(page, "bad", "'resolve_alert' is a supervisor's action")
        assert "call a supervisor" in refused
        await page.click('#actions [data-action="void"]')
        await page.fill("#ask-reason", "dealer wants a new hand")
        await page.click("#ask-ok")
        refused = await banner_text(page, "bad", "'void' is a supervisor's action")
        assert "D-0042 is signed in as dealer: call a supervisor" in refused
        await shot(page, "void-refused")
        hand = table.status()["hand"]
        assert hand is not None and hand["open_alerts"], "the refusals changed nothing"
        assert table.daemon.version >= version  # refused inputs are journaled, not applied

        # 6. A supervisor signs in at the same screen and resolves the alert on the page.
        await page.click("#sign-out")
        await page.wait_for_selector("#sign-in-open:not(.hidden)", timeout=WAIT_MS)
        await sign_in_on_page(page, SUPERVISOR)
        await page.click("#alerts [data-resolve]")
        await page.click('#ask-fields .quick button:has-text("read again, card set aside")')
        await page.click("#ask-ok")
        await banner_text(page, "good", "alert 1 resolved")
        await page.wait_for_selector('#alerts [data-kind="duplicate_card"]', state="detached",
                                     timeout=WAIT_MS)
        hand = table.status()["hand"]
        assert hand is not None and hand["open_alerts"] == []
        resolved = [r for r in table.daemon.journal.records() if r.kind == "dealer"  # type: ignore[union-attr]
                    and r.payload.get("action") == "resolve_alert"]
        assert [r.payload["by"] for r in resolved] == [DEALER["staff_id"], SUPERVISOR["staff_id"]]
        await shot(page, "alert-resolved")
    assert problems == []


async def _finish_heat(table: ConsoleTable) -> list[str]:
    entries = await table.open_heat((1, 2))
    session = await table.sign_in(DEALER)
    for _ in range(2):
        await table.play_hand(session)
    await table.until("the scores", lambda s: len(s.get("unacknowledged_scores", [])) == 2)
    return entries


@pytest.mark.soak  # a long walk: make test-soak (D387)
async def test_the_participant_acknowledges_with_a_pin_prints_the_slip_and_disputes(
        tmp_path: Path) -> None:
    problems: list[str] = []
    async with console_table(tmp_path, acknowledge_with=("pin",)) as table, \
            browser_page(problems) as page:
        first, second = await _finish_heat(table)
        await page.goto(f"{table.url}/player")
        card = await page.wait_for_selector(f'#scores [data-entry="{first}"]', timeout=WAIT_MS)
        assert card is not None
        assert "R1,900.00" in await card.inner_text()
        await shot(page, "player-score")

        # A wrong PIN is refused, and nothing is acknowledged.
        await page.click(f'[data-ack="{first}"]')
        for digit in "0000":
            await page.click(f'.keypad[data-keypad-for="ack-pin-input"] [data-key="{digit}"]')
        await page.click("#ack-ok")
        await banner_text(page, "bad", "that PIN is not the PIN of this entry's player")
        assert first in table.status()["unacknowledged_scores"]
        await shot(page, "player-wrong-pin")

        # The right PIN is accepted; the slip link appears.
        for digit in PLAYER_PIN[1]:
            await page.click(f'.keypad[data-keypad-for="ack-pin-input"] [data-key="{digit}"]')
        await page.click("#ack-ok")
        await banner_text(page, "good", "score acknowledged")
        await page.wait_for_selector(f'#done [data-slip="{first}"]', timeout=WAIT_MS)
        assert first not in table.status()["unacknowledged_scores"]
        assert table.daemon.journal is not None
        acks = [m for m in table.daemon.journal.messages(1) if m.type == ScoreAcknowledged.TYPE]
        assert [(m.body["entry_id"], m.body["method"]) for m in acks] == [(first, "pin")]

        # The second entry disputes its score with a note.
        await page.click(f'[data-dispute="{second}"]')
        await page.fill("#dispute-note", "my last hand was dealt with a card from the floor")
        await page.click("#dispute-ok")
        await banner_text(page, "good", "dispute sent")
        await page.wait_for_selector(f'#scores [data-entry="{second}"].disputed',
                                     timeout=WAIT_MS)
        disputes = [m for m in table.daemon.journal.messages(1) if m.type == ScoreDisputed.TYPE]
        assert [(m.body["entry_id"], m.body["note"]) for m in disputes] == [
            (second, "my last hand was dealt with a card from the floor")]
        await shot(page, "player-dispute")

        # The slip carries the verification code of the signed score.recorded message.
        await page.click(f'#done [data-slip="{first}"]')
        await page.wait_for_selector("#code", timeout=WAIT_MS)
        recorded = next(m for m in table.daemon.journal.messages(1)
                        if m.type == ScoreRecorded.TYPE and m.body["entry_id"] == first)
        code = verification_code(table.daemon.config.table, recorded.seq, recorded.type,
                                 recorded.body)
        assert code in await page.inner_text("#code-full")
        assert (await page.inner_text("#code")).replace(" ", "") == code[:16].upper()
        slip = await page.inner_text(".slip-facts")
        assert "R1,900.00" in slip and "pin" in slip and first in slip
        await shot(page, "slip")
    assert problems == []


@pytest.mark.soak  # a long walk: make test-soak (D387)
async def test_a_dealer_disputes_a_settled_hand_from_the_recall_on_the_page(
        tmp_path: Path) -> None:
    problems: list[str] = []
    async with console_table(tmp_path) as table, browser_page(problems) as page:
        entries = await table.open_heat((1, 2))
        session = await table.sign_in(DEALER)
        await table.play_hand(session)
        await page.goto(f"{table.url}/")
        await page.wait_for_selector("#live.on", timeout=WAIT_MS)
        await sign_in_on_page(page, DEALER)
        journal = table.daemon.journal
        assert journal is not None
        [hand_id] = [m.body["hand_id"] for m in journal.messages(1) if m.type == "hand.settled"]
        await page.click(f'#recall [data-dispute="{hand_id}"]')
        await page.select_option("#ask-seat", "2")
        await page.click('#ask-fields .quick button:has-text("paid short")')
        await page.click("#ask-ok")
        await banner_text(page, "good", f"dispute of {hand_id} raised")
        [raised] = [m.body for m in journal.messages(1) if m.type == "hand.disputed"]
        await shot(page, "hand-disputed")
    assert (raised["hand_id"], raised["seat"], raised["entry_id"], raised["by"],
            raised["claim"]) == (hand_id, 2, entries[1], DEALER["staff_id"], "paid short")
    assert problems == []
