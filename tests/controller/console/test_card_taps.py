"""Card taps through the console's HTTP API, at a real daemon: a participant acknowledging
with the rewards card (``acknowledge_with = ["card"]``) is refused for the wrong card and
accepted for the right one, the acknowledgement recording the method truthfully; a dealer
signs in by tapping the employee card. The cards are tapped on the ID reader simulator,
read by the real driver (track 2, as a magstripe or NFC keyboard reader sends it).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from controller.console.app import COOKIE, create_console_app
from tests.controller.console.support import (
    DEALER,
    PLAYER_CARD,
    ConsoleTable,
    asgi_call,
    console_table,
)
from wire.messages import ScoreAcknowledged

JSON = {"content-type": "application/json"}


async def _tap_when_waiting(table: ConsoleTable, number: str) -> None:
    gate = table.daemon.gate
    assert gate is not None
    for _ in range(2000):
        if gate.waiting_for is not None:
            break
        await asyncio.sleep(0.005)
    assert gate.waiting_for is not None, "nothing waited for a tap"
    table.ids.tap(number)


async def test_a_participant_acknowledges_by_rewards_card_the_wrong_card_refused(
        tmp_path: Path) -> None:
    async with console_table(tmp_path, acknowledge_with=("card",)) as table:
        entries = await table.open_heat((1, 2))
        session = await table.sign_in(DEALER)
        for _ in range(2):
            await table.play_hand(session)
        app = create_console_app(table.daemon, table.daemon.config.console).app
        body = json.dumps({"action": "acknowledge", "entry_id": entries[0], "wait": 5}).encode()

        request = asyncio.ensure_future(asgi_call(app, "POST", "/api/action", body=body,
                                                  headers=JSON))
        await _tap_when_waiting(table, PLAYER_CARD[2])  # seat 2's card, not seat 1's
        wrong = (await request).json()
        assert wrong == {"ok": False, "error": f"card ****0002 is not the rewards card of"
                                               f" entry {entries[0]}'s player"}
        assert entries[0] in table.status()["unacknowledged_scores"]

        request = asyncio.ensure_future(asgi_call(app, "POST", "/api/action", body=body,
                                                  headers=JSON))
        await _tap_when_waiting(table, PLAYER_CARD[1])
        assert (await request).json()["ok"] is True
        assert entries[0] not in table.status()["unacknowledged_scores"]
        assert table.daemon.journal is not None
        acks = [m.body for m in table.daemon.journal.messages(1)
                if m.type == ScoreAcknowledged.TYPE]
        assert [(a["entry_id"], a["method"]) for a in acks] == [(entries[0], "card")]

        # The view the player's screen reads says which methods are asked for.
        view = await asgi_call(app, "GET", "/api/view")
        assert view.json()["view"]["console"]["acknowledge_with"] == ["card"]


async def test_a_dealer_signs_in_with_the_employee_card(tmp_path: Path) -> None:
    async with console_table(tmp_path) as table:
        await table.open_heat((1,))
        app = create_console_app(table.daemon, table.daemon.config.console).app
        body = json.dumps({"method": "card", "wait": 5}).encode()
        request = asyncio.ensure_future(asgi_call(app, "POST", "/api/sign-in", body=body,
                                                  headers=JSON))
        await _tap_when_waiting(table, DEALER["card"])
        answer = await request
        assert answer.json()["detail"]["staff_id"] == DEALER["staff_id"]
        assert answer.headers["set-cookie"].startswith(f"{COOKIE}=")
        assert table.status()["staff"] == [{"staff_id": "D-0042", "name": "Dana Dealer",
                                            "role": "dealer"}]

        request = asyncio.ensure_future(asgi_call(app, "POST", "/api/sign-in", body=body,
                                                  headers=JSON))
        await _tap_when_waiting(table, "6099000000009999")
        refused = await request
        assert refused.json() == {"ok": False,
                                  "error": "this card is not an enrolled employee card"}
        assert "set-cookie" not in refused.headers
