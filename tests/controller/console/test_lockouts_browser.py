"""A manager lifts a sign-in back-off on the dealer's screen in a real browser (D344, D345).

A stranger at another terminal (the console's other admitted address, ``::1``) types three
wrong PINs for the supervisor. The supervisor, signed in on the page (terminal 127.0.0.1),
sees the wait listed but has no "Lift a lock"; a manager signs in on the page, lifts it with
a reason in the dialog, the green banner says so only because the table accepted it, the
list empties, and the journal's record names the manager. Screenshot:
var/screenshots/console-lockout-lift.png.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.console.app import create_console_app
from tests.controller.console.support import (
    DEALER,
    MANAGER,
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
    shot,
    sign_in_on_page,
)

# A browser walk: in make test-soak (docs/testing.md).
pytestmark = pytest.mark.soak

STRANGER = "::1"
S = SUPERVISOR["staff_id"]


async def guess(table: ConsoleTable, pin: str) -> str:
    """A wrong PIN for the supervisor typed at the stranger's terminal; the refusal."""
    app = create_console_app(table.daemon, table.daemon.config.console).app
    answer = await asgi_call(app, "POST", "/api/sign-in", client=(STRANGER, 52000),
                             headers={"content-type": "application/json"},
                             body=json.dumps({"staff_id": S, "pin": pin}).encode())
    body = answer.json()
    assert body["ok"] is False
    return str(body["error"])


async def test_a_manager_lifts_a_lock_on_the_page_and_the_record_names_them(
        tmp_path: Path) -> None:
    problems: list[str] = []
    async with console_table(tmp_path) as table, browser_page(problems) as page:
        await table.open_heat((1,))
        await table.desk("staff_roster", **{k: v for k, v in roster_body(
            2, people=(DEALER, SUPERVISOR, MANAGER)).items() if k not in ("command", "signer")})
        for pin in ("0000", "1111", "2222"):
            refusal = await guess(table, pin)
        assert refusal.endswith("the next attempt waits 30 s")

        await page.goto(f"{table.url}/")
        await page.wait_for_selector("#live.on", timeout=WAIT_MS)
        assert await page.is_hidden("#lockouts")  # nobody signed in: nothing listed

        # The supervisor at this screen signs in (another terminal) and sees the wait
        await sign_in_on_page(page, SUPERVISOR)
        await page.wait_for_selector("#lockouts .lockout", timeout=WAIT_MS)
        line = await page.inner_text("#lockouts .lockout")
        assert line.startswith(f"{S} at {STRANGER} · 3 failed · waits until ")
        assert await page.is_hidden("#lift-lock")  # a supervisor's screen has no lift

        # A manager signs in and lifts it with a reason
        await page.click("#sign-out")
        await page.wait_for_selector("#sign-in-open:not(.hidden)", timeout=WAIT_MS)
        assert await page.is_hidden("#lockouts")  # signed out: the list goes with the session
        await sign_in_on_page(page, MANAGER)
        await page.wait_for_selector("#lift-lock:not(.hidden)", timeout=WAIT_MS)
        await page.click("#lift-lock")
        await page.wait_for_selector("#ask:not(.hidden)", timeout=WAIT_MS)
        assert await page.inner_text("#ask-title") == "Lift a lock"
        await page.fill("#ask-reason", "the supervisor is at the table in person")
        await shot(page, "lockout-lift")
        await page.click("#ask-ok")
        text = await banner_text(page, "good", "lock lifted")
        assert text == f"lock lifted: {S} at {STRANGER}"
        await page.wait_for_selector("#lockouts", state="hidden", timeout=WAIT_MS)

        assert table.daemon.journal is not None
        record = [dict(r.payload) for r in table.daemon.journal.records()
                  if r.kind == "staff"][-1]
        assert record == {"event": "unlocked", "method": "console",
                          "by": MANAGER["staff_id"], "staff_id": S, "terminal": STRANGER,
                          "detail": "the supervisor is at the table in person"}

        # A second lift is refused by the table, and the page says so in red
        await page.evaluate("Showdown.act('unlock_staff', {staff_id: 'S-0007',"
                            " terminal: '::1', reason: 'again'}, 'lock lifted')")
        refused = await banner_text(page, "bad", "nothing is locked")
        assert refused == (f"nothing is locked for {S} at {STRANGER}: no sign-in back-off is"
                           " on record there")
        assert problems == []
