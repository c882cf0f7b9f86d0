"""A rewards card changed at the desk after seating reaches the table (issue 31 item 5, D330):
the desk records a signed ``participant_proofs`` command for the table where the entry sits, the
table journals and applies it, and the participant acknowledges with the new card (the old
one refused); and what people see of the entry (D331, D332) travels in the signed seat data:
its short code and the player's name on the console, the player view and the slip, the slip's
times in the venue's zone. Desk side: the real desk functions on a database; table side: a running
daemon, the commands' bodies ingested as the MQTT link hands over verified desk commands
(the level the seat tests use), the cards tapped on the ID reader simulator.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from zoneinfo import ZoneInfo

from sqlalchemy.orm import Session

from controller.console.app import create_console_app
from controller.console.views import local_time
from game.tournament.entries import Stage
from leaderboard import desk
from leaderboard.desk import DeskCommand
from leaderboard.models import Entry, Score
from tests.controller.console.support import (
    DEALER,
    HANDS,
    ConsoleTable,
    asgi_call,
    console_table,
    roster_body,
)
from tests.controller.console.test_card_taps import _tap_when_waiting
from tests.fixtures.services import Database
from tests.leaderboard.desk_fields import HEAT_TIME, buy
from tests.leaderboard.desk_helpers import FakeClock, add_score, migrated, settings
from wire.messages import ScoreAcknowledged

JSON = {"content-type": "application/json"}
OLD, SWAPPED, NEW = "6012345600000001", "6012345600000002", "04A1B2C3D4E5F6"


async def deliver(table: ConsoleTable, command: DeskCommand) -> None:
    """The recorded command's body, applied by the table as a verified desk command."""
    body = {k: v for k, v in command.body("test-desk").items()
            if k not in ("table", "command", "command_id")}
    await table.desk(command.command, **body)


async def test_a_card_changed_after_seating_acknowledges_at_the_table(tmp_path: Path) -> None:
    db = Database(kind="sqlite", url=f"sqlite:///{tmp_path / 'desk.sqlite3'}")
    clock = FakeClock(HEAT_TIME)
    s = settings()
    with migrated(db) as engine, Session(engine, expire_on_commit=False) as session:
        async with console_table(tmp_path, acknowledge_with=("card",)) as table:
            tid = table.daemon.config.table
            patron = desk.register_patron(session, s, clock, actor="desk-1", name="Lindiwe Zulu",
                                          id_kind="id_document", id_number="8001015009087",
                                          birth_date="1980-01-01", rewards_card=OLD,
                                          name_consent=True)
            entry = buy(session, clock, patron.patron_id)
            await table.desk("staff_roster", **{k: v for k, v in roster_body().items()
                                                if k not in ("command", "signer")})
            await deliver(table, desk.open_heat(session, s, clock, actor="desk-1", table=tid,
                                                stage=Stage.QUALIFYING))
            seated = desk.seat_entry(session, s, clock, actor="desk-1", entry_id=entry,
                                     table=tid, seat=1, names="first_name_initial").command
            code = session.get(Entry, entry).entry_code  # type: ignore[union-attr]
            assert code and seated.args["entry_code"] == code
            assert seated.args["name"] == "Lindiwe Z."  # the page's style, with her consent
            await deliver(table, seated)
            app = create_console_app(table.daemon, table.daemon.config.console).app
            view = (await asgi_call(app, "GET", "/api/view")).json()["view"]
            assert [(x["entry_id"], x["entry_code"], x["name"]) for x in view["seats"]] == [
                (entry, code, "Lindiwe Z.")]
            # Changed once while seated, once more after the score was recorded.
            swapped = desk.set_patron_credentials(session, clock, actor="desk-1",
                                                  patron_id=patron.patron_id,
                                                  rewards_card=SWAPPED)
            assert [(c.table, c.command, c.args["entry_id"]) for c in swapped.commands] == [
                (tid, "participant_proofs", entry)]
            await deliver(table, swapped.commands[0])
            await table.issue_stack(1, entry)  # the dealer issues the starting stack (D346)
            dealer = await table.sign_in(DEALER)
            for _ in range(HANDS):
                await table.play_hand(dealer, seats=(1,))
            await table.until("the score", lambda st: entry in st["unacknowledged_scores"])
            add_score(session, entry, 0, stage="qualifying", acknowledged=None,
                      recorded=HEAT_TIME, table=tid)  # as the ingest stores it
            changed = desk.set_patron_credentials(session, clock, actor="desk-1",
                                                  patron_id=patron.patron_id, rewards_card=NEW)
            assert [c.table for c in changed.commands] == [tid]
            await deliver(table, changed.commands[0])

            view = (await asgi_call(app, "GET", "/api/view")).json()["view"]
            assert [(x["entry_id"], x["entry_code"]) for x in view["scores"]] == [(entry, code)]
            body = json.dumps({"action": "acknowledge", "entry_id": entry, "wait": 5}).encode()
            for card, form in ((OLD, "track2"), (SWAPPED, "track2")):
                request = asyncio.ensure_future(asgi_call(app, "POST", "/api/action",
                                                          body=body, headers=JSON))
                await _tap_when_waiting_form(table, card, form)
                assert (await request).json()["ok"] is False
            request = asyncio.ensure_future(asgi_call(app, "POST", "/api/action", body=body,
                                                      headers=JSON))
            await _tap_when_waiting_form(table, NEW, "uid")
            assert (await request).json()["ok"] is True
            # The table holds proofs only for entries seated there or waiting for acknowledgement.
            refused = await table.daemon.ingest("desk", {
                "command": "participant_proofs", "signer": "test-desk", "command_seq": 77,
                "entry_id": entry, "card_hash": None, "pin_hash": None})
            assert not refused.ok
            assert f"entry {entry} is not seated at this table" in str(refused.error)
            # The slip: the code and the name as the desk sent them, the venue's local time.
            slip = (await asgi_call(app, "GET", f"/slip/{entry}")).body.decode()
            assert f'<tr class="entry"><th>Entry</th><td>{code}</td></tr>' in slip
            assert '<tr class="player"><th>Player</th><td>Lindiwe Z.</td></tr>' in slip
            assert " SAST</td>" in slip and " UTC" not in slip
            journal = table.daemon.journal
            assert journal is not None
            journaled = [r.payload for r in journal.records()
                         if r.kind == "desk" and r.payload.get("command") == "participant_proofs"]
            assert [p["entry_id"] for p in journaled] == [entry] * 3  # the refused one too
            acks = [m.body for m in journal.messages(1) if m.type == ScoreAcknowledged.TYPE]
            assert [(a["entry_id"], a["method"]) for a in acks] == [(entry, "card")]
        # Once acknowledged (the ingest records the table's message), a change has no table
        # to go to.
        score = session.get(Score, entry)
        assert score is not None
        score.acknowledged_at, score.ack_method = HEAT_TIME, "card"
        session.commit()
        later = desk.set_patron_credentials(session, clock, actor="desk-1",
                                            patron_id=patron.patron_id, pin="2468")
        assert later.commands == ()
    db.dispose()


async def _tap_when_waiting_form(table: ConsoleTable, number: str, form: str) -> None:
    if form == "track2":
        await _tap_when_waiting(table, number)
        return
    gate = table.daemon.gate
    assert gate is not None
    for _ in range(2000):
        if gate.waiting_for is not None:
            break
        await asyncio.sleep(0.005)
    table.ids.tap(number, "uid")


def test_the_slip_prints_times_in_the_venues_zone() -> None:
    sast = ZoneInfo("Africa/Johannesburg")
    assert local_time("2026-07-03T12:05:09.250+00:00", sast) == "2026-07-03 14:05:09 SAST"
    assert local_time("2026-07-03T12:05:09Z", ZoneInfo("Europe/London")) == \
        "2026-07-03 13:05:09 BST"
    assert local_time(None, sast) == "-"
