"""Issue 32's points 3, 4, 5 and 6 on the dealer's screens tables have, in real chromium against
a real table daemon (simulated shoe, chip reader and receipt printer behind the real drivers):
one daemon per size (1024x600, 1280x800, 1920x1080), one walk through the steps.

- Point 5, the chip float at seating: each seated entry's starting stack to place from the
  tray, above the seats; a stack short by R25.00 says so; read exactly, it is issued by the
  table and its line goes.
- Point 3, input checked at the door: the Manual wager dialog; an amount not in the table's
  smallest chip and a seat unseated while the dialog was open are refused, the red banner
  names the field as the table answered, and nothing changes (no record, the spots as read).
- Point 4, a supervisor's flow: 13 alerts open, "Resolve several" lists them all in a dialog
  whose list scrolls inside itself while its reason and OK/Cancel stay on screen; a stale
  tick (one alert resolved meanwhile) is refused in red and none is resolved; then the rest in
  one act, each recorded under the supervisor. "Rule on a settled hand": a correction the
  table refuses in red, a void in green recorded as ``hand.corrected`` made at the table. A
  stranger's wrong PINs at another terminal put a wait on the list; a manager lifts it in the
  dialog (green, the record names the manager), a second lift is refused in red.
- Point 6, the score slip: the "Score slips" panel's Print slip (green when printed, red when
  the printer is out of paper, nothing printed) and the HTML slip page (name, venue time,
  code, QR) at the walk's size, and at the participant's 800x480 in the 1024x600 walk.

At every step `screens.fits` checks from bounding boxes that the dialog's fields, its OK and
Cancel, the banner and the panel's buttons are inside the viewport and unclipped, taps at
least 48 px and text at least 16 px. What lies below the fold by design (D338: the recall,
the staff panel, the score slips) is scrolled to first; fields in a dialog's scrolling part
are each scrolled to and checked. Screenshots: build/screens/console/<size>/<step>.png.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from controller.console.app import create_console_app
from controller.console.views import ConsoleViews
from controller.slip_layout import qr_payload
from game.hand.events import AlertResolved
from game.staff import hash_secret
from tests.controller.console.screens import (
    DEALER_SIZES,
    QUICK_DEALER,
    fits,
    screen_shot,
    size_params,
)
from tests.controller.console.support import (
    DEALER,
    MANAGER,
    PLAYER_PIN,
    SALT,
    SUPERVISOR,
    ConsoleTable,
    asgi_call,
    console_table,
    roster_body,
)
from tests.controller.console.test_console_browser import (
    WAIT_MS,
    banner_text,
    browser_page,
    sign_in_on_page,
)

# A browser walk: in make test-soak (docs/testing.md).
pytestmark = pytest.mark.soak

PRINTER = 'kind = "sim"\ncapture = "slips.bin"\ntimeout = 1'
ALERTS = 13  # the issue's count: 13 cards keyed while a hand was paused
STRANGER = "::1"  # the console's other admitted address: another terminal
# The slip page at the participant's smallest display too, in one walk (it is the same page).
SLIP_EXTRA_SIZES = {(1024, 600): [(800, 480)]}
STACK_LINE = ("([seat, words]) => { const n = document.querySelector("
              "`#stacks .stack-line[data-seat=\"${seat}\"]`);"
              " return n !== null && n.textContent.includes(words); }")
REFUSED_400 = ("console error: Failed to load resource: the server responded with a status of"
               " 400 (Bad Request)")
ASK = ["#ask .dialog", "#ask-title", "#ask-ok", "#ask [data-close]"]


async def reachable(page: Any, selectors: list[str]) -> list[str]:
    """`fits` for each element ``selectors`` match once scrolled into view (inside its dialog's
    scrolling part, or the page): it can be brought on screen whole, unclipped."""
    problems: list[str] = []
    for sel in selectors:
        found = page.locator(sel)
        count = await found.count()
        if not count:
            problems.append(f"{sel}: nothing shown")
        for i in range(count):
            await found.nth(i).evaluate(
                "e => { e.scrollIntoView({block: 'nearest'}); e.dataset.fitCheck = '1'; }")
            problems += [f"{sel} #{i}: {p}" for p in await fits(page, ["[data-fit-check]"])]
            await found.nth(i).evaluate("e => { delete e.dataset.fitCheck; }")
    return problems


def _records(table: ConsoleTable, kind: str) -> list[dict[str, Any]]:
    assert table.daemon.journal is not None
    return [dict(r.payload) for r in table.daemon.journal.records() if r.kind == kind]


def _messages(table: ConsoleTable, kind: str) -> list[dict[str, Any]]:
    assert table.daemon.journal is not None
    return [dict(m.body) for m in table.daemon.journal.messages(1) if m.type == kind]


def _resolved(table: ConsoleTable) -> list[tuple[int, str, str | None]]:
    assert table.daemon.service is not None
    hand = table.daemon.service.core.hand
    assert hand is not None
    return [(e.alert_id, e.reason, e.by) for e in hand.events if isinstance(e, AlertResolved)]


async def _seat_three(table: ConsoleTable) -> list[str]:
    """The roster with a manager, a heat, three entries with code and name: the entry ids."""
    await table.desk("staff_roster", **{k: v for k, v in roster_body(
        people=(DEALER, SUPERVISOR, MANAGER)).items() if k not in ("command", "signer")})
    await table.desk("open_heat", stage="qualifying", heat_id="H1")
    entries = []
    for seat in (1, 2, 3):
        entry = f"E-H1-{seat}"
        await table.desk("seat", entry_id=entry, seat=seat, entry_code=f"K7-4{seat}F",
                         name=f"Zoë M{seat}.", pin_hash=hash_secret(PLAYER_PIN[seat], SALT))
        entries.append(entry)
    await table.until("three seated", lambda s: len(s.get("seats", {})) == 3)
    return entries


async def _guess(table: ConsoleTable, pin: str) -> str:
    """A wrong PIN for the supervisor typed at the stranger's terminal; the refusal."""
    app = create_console_app(table.daemon, table.daemon.config.console).app
    answer = await asgi_call(app, "POST", "/api/sign-in", client=(STRANGER, 52000),
                             headers={"content-type": "application/json"},
                             body=json.dumps({"staff_id": SUPERVISOR["staff_id"],
                                              "pin": pin}).encode())
    body = answer.json()
    assert body["ok"] is False
    return str(body["error"])


@pytest.mark.parametrize("size", size_params(DEALER_SIZES, QUICK_DEALER))
async def test_the_door_the_supervisor_and_the_slip_at_each_dealer_size(
        tmp_path: Path, size: tuple[int, int]) -> None:
    problems: list[str] = []
    viewport = {"width": size[0], "height": size[1]}
    async with console_table(tmp_path, printer=PRINTER) as table, \
            browser_page(problems, viewport=viewport) as page:
        entries = await _seat_three(table)
        random.Random(f"points-{size}").shuffle(table.deck)  # a deck in order is held
        await page.goto(f"{table.url}/")
        await page.wait_for_selector("#live.on", timeout=WAIT_MS)
        await sign_in_on_page(page, SUPERVISOR)

        # ---- point 5: the starting stacks to issue at seating, followed as the reader reads --
        stacks = ["#phase", "#stacks h2", "#stacks .stack-line", "#seats .seat-head",
                  "#seats .chips"]
        for seat in (1, 2, 3):
            await page.wait_for_function(STACK_LINE, arg=[seat, f"Seat {seat}: place R2,000.00"
                                                          " from the tray"], timeout=WAIT_MS)
        await screen_shot(page, size, "stacks-to-issue")
        found = await fits(page, stacks)
        assert found == [], found
        table.chips.place(1, "ante", 197_500, float_only=True)
        await page.wait_for_function(STACK_LINE, arg=[1, "R1,975.00 read of R2,000.00: add"
                                                      " R25.00"], timeout=WAIT_MS)
        assert await fits(page, stacks) == []
        await screen_shot(page, size, "stacks-short")
        table.chips.place(1, "odds", 2_500, float_only=True)  # exactly the stack: issued
        await table.until("seat 1's stack issued", lambda s: entries[0] in s["chips"]["held"])
        await page.wait_for_function(
            "() => document.querySelector('#stacks .stack-line[data-seat=\"1\"]') === null",
            timeout=WAIT_MS)
        assert await fits(page, stacks) == []
        await screen_shot(page, size, "stacks-one-issued")
        table.chips.seat_entries[1] = entries[0]  # the player picks the stack up
        table.sync_owners()
        table.chips.remove(1, "ante")
        table.chips.remove(1, "odds")
        await table.until("seat 1's stack picked up", lambda s: not s["spots"].get("1"))
        for seat, entry in ((2, entries[1]), (3, entries[2])):
            await table.issue_stack(seat, entry)
        await page.wait_for_selector("#stacks", state="hidden", timeout=WAIT_MS)

        # ---- point 3: the Manual wager dialog; refusals name the field, nothing changes ----
        spots, wagers = table.status()["spots"], _records(table, "manual_wager")
        wager = '#actions [data-action="manual_wager"]'
        await page.click(wager)
        await page.wait_for_selector("#ask:not(.hidden)", timeout=WAIT_MS)
        assert await page.inner_text("#ask-title") == "Manual wager"
        assert await fits(page, [*ASK, "#ask-seat", "#ask-spot", "#ask-amount"]) == []
        await screen_shot(page, size, "manual-wager")
        await page.select_option("#ask-seat", "1")
        await page.fill("#ask-amount", "R25.01")  # not in the table's smallest chip
        await page.click("#ask-ok")
        refused = await banner_text(page, "bad", "amount: ")
        assert "is not a multiple of the smallest chip" in refused
        assert await fits(page, ["#phase", "#banner", wager]) == []
        await screen_shot(page, size, "manual-wager-refused")
        assert table.status()["spots"] == spots and _records(table, "manual_wager") == wagers

        # A seat that left while the dialog was open: the table's answer, not the dialog's.
        await page.click(wager)
        await page.wait_for_selector("#ask:not(.hidden)", timeout=WAIT_MS)
        await page.select_option("#ask-seat", "3")
        await page.fill("#ask-amount", "R25.00")
        await table.desk("unseat", seat=3, entry_id=entries[2], reason="test: left the table")
        await table.until("seat 3 to be empty", lambda s: "3" not in s.get("seats", {}))
        spots = table.status()["spots"]
        await page.click("#ask-ok")
        refused = await banner_text(page, "bad", "seat: ")
        assert refused == "seat: no entry is seated at seat 3"
        assert await fits(page, ["#phase", "#banner", wager]) == []
        await screen_shot(page, size, "manual-wager-seat-refused")
        assert table.status()["spots"] == spots and _records(table, "manual_wager") == wagers

        # ---- point 4: thirteen alerts, resolved in one act from a dialog that fits ----------
        dealer = await table.sign_in(DEALER)
        await table.place_wagers((1, 2))
        await table.act(dealer, "no_more_bets")
        assert table.daemon.service is not None
        await table.deal(len(table.daemon.service.deal.targets([1, 2])))
        for _ in range(ALERTS):  # cards read after the deal: one alert each
            table.shoe.deal_card(table.next_card())
        await table.until(f"{ALERTS} alerts",
                          lambda s: len(s["hand"]["open_alerts"]) == ALERTS)
        ids = [a["id"] for a in table.status()["hand"]["open_alerts"]]
        several = "#resolve-several-open"
        await page.wait_for_function(
            "n => document.getElementById('resolve-several-open').textContent"
            " === `Resolve several (${n})`", arg=ALERTS, timeout=WAIT_MS)
        assert await fits(page, ["#phase", several, ".alerts-panel h2"]) == []
        await screen_shot(page, size, "alerts-13")

        await page.click(several)
        boxes = page.locator("#resolve-several-checks input[type=checkbox]")
        assert await boxes.count() == ALERTS
        dialog = ["#resolve-several .dialog", "#resolve-several-title",
                  "#resolve-several .checks-scroll", "#resolve-several-reason",
                  "#resolve-several .quick button", "#resolve-several-ok",
                  "#resolve-several-cancel"]
        await screen_shot(page, size, "resolve-several")
        found = await fits(page, dialog)
        assert found == [], found
        # Every alert's line can be brought into view inside the list, and with the last
        # one in view the reason and OK/Cancel are still on screen.
        found = await reachable(page, ["#resolve-several-checks .check"])
        assert found == [], found
        assert await fits(page, dialog) == []
        await screen_shot(page, size, "resolve-several-end")

        # One alert resolved meanwhile at the table: the act is refused, none is resolved.
        await table.act(await table.sign_in(SUPERVISOR), "resolve_alert", alert_id=ids[0],
                        reason="read again on the table")
        await page.click('#resolve-several .quick button:has-text("cards set aside")')
        await page.click("#resolve-several-ok")
        refused = await banner_text(page, "bad", "alert_ids: ")
        assert f"{ids[0]} is not open" in refused and "none was resolved" in refused
        assert len(table.status()["hand"]["open_alerts"]) == ALERTS - 1
        assert await fits(page, ["#phase", "#banner", several]) == []
        await screen_shot(page, size, "resolve-several-refused")

        await page.click(several)
        assert await boxes.count() == ALERTS - 1
        await page.click('#resolve-several .quick button:has-text("cards set aside")')
        await page.click("#resolve-several-ok")
        await banner_text(page, "good", f"{ALERTS - 1} alerts resolved")
        assert table.status()["hand"]["open_alerts"] == []
        assert _resolved(table) == [(ids[0], "read again on the table", SUPERVISOR["staff_id"])] + [
            (i, "cards set aside, not in play", SUPERVISOR["staff_id"]) for i in ids[1:]]
        await page.wait_for_selector(f"{several}.hidden", state="attached", timeout=WAIT_MS)
        assert await fits(page, ["#phase", "#banner"]) == []
        await screen_shot(page, size, "resolve-several-done")

        # ---- point 4: rule on the settled hand, above the game recall (below the fold) -----
        await table.act(dealer, "settle")
        table.chips.clear()
        await table.until("the payout to be verified", lambda s: s.get("payout") is None)
        [settled] = _messages(table, "hand.settled")
        hand_id, net = settled["hand_id"], int(settled["nets"]["2"])
        rule = "#rule-hand-open"
        await page.wait_for_selector(f'#recall [data-hand="{hand_id}"]', timeout=WAIT_MS)
        assert await reachable(page, [rule, f'#recall [data-hand="{hand_id}"]']) == []
        await screen_shot(page, size, "rule-hand-button")
        await page.click(rule)
        await page.wait_for_selector("#ask:not(.hidden)", timeout=WAIT_MS)
        fields = ["#ask-seat", "#ask-ruling", "#ask-net", "#ask-reason",
                  "#ask-fields .quick button"]
        found = await fits(page, ASK) + await reachable(page, fields)
        assert found == [], found
        assert await fits(page, ASK) == []
        await screen_shot(page, size, "rule-hand")
        await page.select_option("#ask-seat", "2")
        await page.select_option("#ask-ruling", "correct")
        await page.fill("#ask-net", f"-R{-net // 100}" if net < 0 else f"R{net // 100}")
        await page.click('#ask-fields .quick button:has-text("paid short")')
        await page.click("#ask-ok")
        await banner_text(page, "bad", "already counts")
        assert _messages(table, "hand.corrected") == []
        assert await fits(page, ["#banner"]) == [] and await reachable(page, [rule]) == []
        await screen_shot(page, size, "rule-hand-refused")

        await page.click(rule)
        await page.select_option("#ask-seat", "2")
        await page.select_option("#ask-ruling", "void")
        await page.fill("#ask-reason", "misdeal: the burn card was exposed")
        await page.click("#ask-ok")
        await banner_text(page, "good", f"hand {hand_id} voided for seat 2")
        [corrected] = _messages(table, "hand.corrected")
        assert (corrected["hand_id"], corrected["entry_id"], corrected["seat"],
                corrected["ruling"], corrected["by"], corrected["made_at"]) == (
            hand_id, entries[1], 2, "hand_voided", SUPERVISOR["staff_id"], "table")
        assert await fits(page, ["#banner"]) == []
        await screen_shot(page, size, "rule-hand-done")

        # ---- point 4: a stranger's wrong PINs wait; a manager lifts the lock -------------
        for pin in ("0000", "1111", "2222"):
            wait = await _guess(table, pin)
        assert wait.endswith("the next attempt waits 30 s")
        await page.click("#sign-out")
        await page.wait_for_selector("#sign-in-open:not(.hidden)", timeout=WAIT_MS)
        await sign_in_on_page(page, MANAGER)
        await page.wait_for_selector("#lockouts .lockout", timeout=WAIT_MS)
        lift = "#lift-lock"
        found = await reachable(page, ["#lockouts h2", "#lockouts .lockout", lift])
        assert found == [], found
        await screen_shot(page, size, "lockouts")
        await page.click(lift)
        await page.wait_for_selector("#ask:not(.hidden)", timeout=WAIT_MS)
        assert await page.inner_text("#ask-title") == "Lift a lock"
        assert await fits(page, [*ASK, "#ask-which", "#ask-reason"]) == []
        await page.fill("#ask-reason", "the supervisor is at the table in person")
        await screen_shot(page, size, "lift-lock")
        await page.click("#ask-ok")
        lifted = await banner_text(page, "good", "lock lifted")
        assert lifted == f"lock lifted: {SUPERVISOR['staff_id']} at {STRANGER}"
        assert _records(table, "staff")[-1] == {
            "event": "unlocked", "method": "console", "by": MANAGER["staff_id"],
            "staff_id": SUPERVISOR["staff_id"], "terminal": STRANGER,
            "detail": "the supervisor is at the table in person"}
        await page.wait_for_selector("#lockouts", state="hidden", timeout=WAIT_MS)
        assert await fits(page, ["#banner"]) == []
        await screen_shot(page, size, "lift-lock-done")
        await page.evaluate("Showdown.act('unlock_staff', {staff_id: 'S-0007',"
                            " terminal: '::1', reason: 'again'}, 'lock lifted')")
        await banner_text(page, "bad", "nothing is locked for S-0007 at ::1")
        assert await fits(page, ["#banner"]) == []
        await screen_shot(page, size, "lift-lock-refused")

        # ---- point 6: the scores, the Score slips panel, Print slip ------------------------
        while len(table.status().get("unacknowledged_scores", [])) < 2:  # a void: one more
            await table.play_hand(dealer, [int(s) for s in table.status()["seats"]])
        sim = table.devices.printer_sim
        assert sim is not None
        second = entries[1]
        button = f'#print-slips [data-print-slip="{second}"]'
        await page.wait_for_selector(button, timeout=WAIT_MS)
        panel = ["#print-slips h2", "#printer-note", "#print-slips .slip-line",
                 "#print-slips [data-print-slip]", "#print-slips a.button"]
        found = await reachable(page, panel)
        assert found == [], found
        await screen_shot(page, size, "slips")
        await page.click(button)
        assert "Slip printed for K7-42F" in await banner_text(page, "good", "Slip printed")
        assert len(sim.wait_for_jobs(1)) == 1
        assert [(r["entry_id"], r["by"], r["printed"]) for r in _records(table, "slip")] == [
            (second, MANAGER["staff_id"], True)]
        await page.wait_for_function(
            "e => document.querySelector(`[data-entry='${e}'] .slip-printed`)"
            "?.textContent.startsWith('printed ')", arg=second, timeout=WAIT_MS)
        found = await fits(page, ["#banner"]) + await reachable(page, panel)
        assert found == [], found
        await screen_shot(page, size, "slip-printed")
        sim.paper = "out"
        await page.click(button)
        text = await banner_text(page, "bad", "NOT printed")
        assert "the slip for K7-42F was NOT printed" in text and "out of paper" in text
        assert len(sim.jobs) == 1
        found = await fits(page, ["#banner"]) + await reachable(page, [
            *panel, f'[data-entry="{second}"] .slip-printed'])
        assert found == [], found
        await screen_shot(page, size, "slip-not-printed")

        # ---- point 6: the HTML slip page (name, venue time, code, QR) ---------------------
        slip = await ConsoleViews(table.daemon).slip(second)
        assert slip is not None
        await page.goto(f"{table.url}/slip/{second}")
        assert await page.get_attribute("#qr", "data-payload") == qr_payload(slip)
        facts = await page.inner_text(".slip-facts")
        assert "Zoë M2." in facts and "SAST" in facts
        assert await page.inner_text("#code") == slip.code_grouped
        slip_parts = ["main.slip h1", "main.slip h2", ".slip-facts tr", "#code", "#code-full",
                      "#qr svg", "[data-print]", "main.slip a.button"]
        for at in [size, *SLIP_EXTRA_SIZES.get(size, [])]:
            await page.set_viewport_size({"width": at[0], "height": at[1]})
            await page.evaluate("window.scrollTo(0, 0)")
            await screen_shot(page, at, "slip-page")
            found = await reachable(page, slip_parts)
            assert found == [], (at, found)
            await screen_shot(page, at, "slip-page-end")  # scrolled to the code, QR and Print
    # The door's three refusals answer 400, which chromium logs; nothing else may be logged.
    assert [p for p in problems if p != REFUSED_400] == []
    assert problems.count(REFUSED_400) == 3
