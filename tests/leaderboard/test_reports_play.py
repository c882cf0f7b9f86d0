"""The table, dealer and heat reports, from a central database filled by the real ingest with
the real messages of table cores played at known instants (tests.leaderboard.reports_support).

Every expected figure is worked out from the script below: hands 1-5 at t01 two minutes
apart, each open for 60 s (hand 3 voided after 30 s), dealer D1 for hands 1-3 and D2 for 4-5;
seat 1 plays 3x preflop with Trips Plus R25, seat 2 plays 1x at the river with Sweet 16 R50 in
hands 1-2; one unknown chip, one card read outside a hand, one keyed card, one payout override.
t02 (another venue, no staff roster) plays one hand the next day with nobody signed in.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from cli.main import main
from leaderboard.reports.play import PlayReport, play_report
from leaderboard.reports.reading import UnknownVenue, read_play_facts
from leaderboard.reports.window import ReportWindow
from tests.fixtures.services import Database
from tests.leaderboard.desk_helpers import SAST, local
from tests.leaderboard.reports_support import R25, PlayedTable, Seat

T = local(2026, 7, 3, 14, 0)


def at(minutes: int, seconds: int = 0) -> Any:
    return T + timedelta(minutes=minutes, seconds=seconds)


def seats(with_sweet16: bool) -> list[Seat]:
    second = {"ante": R25, "odds": R25, **({"sweet16": 2 * R25} if with_sweet16 else {})}
    return [Seat(1, "E1", {"ante": R25, "odds": R25, "trips_plus": R25}, "preflop"),
            Seat(2, "E2", second, "river")]


async def play_floor(engine: Engine) -> None:
    t01 = PlayedTable(engine, "t01", "casino-1",
                      staff=[("D1", "dealer"), ("D2", "dealer"), ("S1", "supervisor")])
    await t01.ok(at(-2), "desk", command="open_heat", stage="qualifying", heat_id="H1",
                 command_id="c2", signer="desk", command_seq=2)
    for n, (entry, seat) in enumerate((("E1", 1), ("E2", 2))):
        await t01.ok(at(-2, 10 + n), "desk", command="seat", entry_id=entry, seat=seat,
                     command_id=f"s{seat}", signer="desk", command_seq=3 + n)
    await t01.ok(at(0), "staff", event="signed_in", staff_id="D1", method="pin")
    await t01.hand(at(2), seats(True), dealer="D1", seed=1)
    await t01.hand(at(4), seats(True), dealer="D1", seed=2)
    unknown = await t01.apply(at(5, 10), "chips", {"seat": 1, "spot": "ante",
                                                   "uids": ["E0049999DEADBEEF"]})
    assert [m.body["kind"] for m in unknown.messages if m.type == "alert"] == ["unknown_chip"]
    await t01.ok(at(5, 40), "staff", event="signed_in", staff_id="S1", method="pin")
    await t01.hand(at(6), seats(False), dealer="D1", seconds=30, void_by="S1")
    await t01.ok(at(6, 40), "staff", event="signed_out", staff_id="S1", method="pin")
    await t01.ok(at(7), "staff", event="signed_in", staff_id="D2", method="pin")
    await t01.ok(at(7, 10), "staff", event="signed_out", staff_id="D1", method="pin")
    stray = await t01.apply(at(7, 20), "card", {"card": "Ah", "read_index": 4})
    assert [m.body["kind"] for m in stray.messages] == ["card_without_hand"]
    fourth = await t01.hand(at(8), seats(False), dealer="D2", seed=4)
    await t01.publish("payout.checked", {
        "hand_id": fourth, "heat_id": "H1", "outcome": "overridden",
        "mismatches": [{"seat": 1, "spot": "ante", "expected": 0, "held": R25}],
        "unverifiable": [], "by": "S1", "reason": "paid by hand",
        "at": at(9, 5).isoformat()})
    await t01.ok(at(9, 15), "staff", event="signed_in", staff_id="S1", method="pin")
    await t01.hand(at(10), seats(False), dealer="D2", seed=5, keyed_card_by="S1")

    t02 = PlayedTable(engine, "t02", "casino-2")
    day2 = local(2026, 7, 4, 15, 0)
    await t02.ok(day2, "desk", command="open_heat", stage="qualifying", heat_id="H2")
    await t02.ok(day2, "desk", command="seat", entry_id="E3", seat=1)
    await t02.hand(day2 + timedelta(minutes=1),
                   [Seat(1, "E3", {"ante": 2 * R25, "odds": 2 * R25}, "flop")], dealer=None,
                   seconds=90, seed=9)


@pytest.fixture
async def floor(engine: Engine) -> Engine:
    await play_floor(engine)
    return engine


def report(engine: Engine, by: Any, **window: Any) -> PlayReport:
    with Session(engine) as session:
        facts = read_play_facts(session, ReportWindow(tz=SAST, **window))
    return play_report(facts, by)


def test_the_tables_report_counts_what_was_played(floor: Engine) -> None:
    got = report(floor, "table")
    assert [r.key for r in got.rows] == ["t01", "t02"]
    t01, t02 = got.rows
    assert (t01.name, t01.hands_settled, t01.hands_voided, t01.seat_hands, t01.entries) == (
        "casino-1", 4, 1, 8, 2)
    assert t01.dealing_seconds == 540  # 14:02:00 no more bets to 14:11:00 settled
    assert t01.hands_per_hour == round(4 * 3600 / 540, 1) == 26.7
    assert dict(t01.decisions) == {"play_3x": 4, "play_2x": 0, "play_1x": 4, "check": 8,
                                   "fold": 0}
    assert t01.decisions_total == 16 and t01.decisions_per_hour == round(16 * 3600 / 540, 1)
    trips, pocket, sweet = (t01.side_bets[b] for b in ("trips_plus", "pocket_bonus", "sweet16"))
    assert (trips.seat_hands, trips.share, trips.wagered_cents) == (4, 0.5, 4 * R25)
    assert (pocket.seat_hands, pocket.share, pocket.wagered_cents) == (0, 0.0, 0)
    assert (sweet.seat_hands, sweet.share, sweet.wagered_cents) == (2, 0.25, 4 * R25)
    assert dict(t01.alerts) == {"card_without_hand": 1, "unknown_chip": 1}
    assert {k: v for k, v in t01.manual.items() if v} == {
        "cards_keyed": 1, "voids": 1, "payout_overrides": 1, "hands_marked_manual": 1}
    assert t01.first == at(2) and t01.last == at(11)
    assert (t02.hands_settled, t02.dealing_seconds, t02.hands_per_hour) == (1, 90, 40.0)
    assert dict(t02.decisions) == {"play_3x": 0, "play_2x": 1, "play_1x": 0, "check": 1,
                                   "fold": 0}


def test_the_dealers_report_follows_the_console_sign_ins(floor: Engine) -> None:
    got = report(floor, "dealer")
    rows = {r.key: r for r in got.rows}
    assert list(rows) == ["D1", "D2", "(nobody signed in)"]
    d1, d2, nobody = rows["D1"], rows["D2"], rows["(nobody signed in)"]
    assert (d1.name, d1.role, d1.tables) == ("Name of D1", "dealer", ("t01",))
    assert (d1.hands_settled, d1.hands_voided, d1.dealing_seconds) == (2, 1, 270)
    assert d1.hands_per_hour == round(2 * 3600 / 270, 1)
    assert (d2.hands_settled, d2.hands_voided, d2.dealing_seconds, d2.hands_per_hour) == (
        2, 0, 180, 40.0)
    assert d1.decisions_total == d2.decisions_total == 8
    assert d2.decisions_per_hour == 160.0
    assert dict(d1.alerts) == {"unknown_chip": 1}
    assert dict(d2.alerts) == {"card_without_hand": 1}
    assert d1.manual["voids"] == 1 and d1.manual["cards_keyed"] == 0
    assert (d2.manual["cards_keyed"], d2.manual["payout_overrides"]) == (1, 1)
    assert (d1.side_bets["sweet16"].seat_hands, d2.side_bets["sweet16"].seat_hands) == (2, 0)
    assert (nobody.hands_settled, nobody.tables) == (1, ("t02",))
    assert any("dealer not recorded for 1 hand(s)" in n and "t02" in n for n in got.notes)


def test_the_heats_report_and_the_window(floor: Engine) -> None:
    got = report(floor, "heat")
    rows = {r.key: r for r in got.rows}
    assert list(rows) == ["H1", "H2"]
    assert (rows["H1"].name, rows["H1"].hands_settled, rows["H1"].dealing_seconds) == (
        "qualifying", 4, 540)
    assert dict(rows["H1"].alerts) == {"card_without_hand": 1, "unknown_chip": 1}
    assert (rows["H2"].hands_settled, rows["H2"].tables) == (1, ("t02",))
    later = report(floor, "heat", first=local(2026, 7, 4).date())
    assert [r.key for r in later.rows] == ["H2"]
    earlier = report(floor, "table", last=local(2026, 7, 3).date())
    assert [r.key for r in earlier.rows] == ["t01"]
    mine = report(floor, "dealer", venue="casino-1")
    assert [r.key for r in mine.rows] == ["D1", "D2"]
    with Session(floor) as session, pytest.raises(UnknownVenue, match="casino-9"):
        read_play_facts(session, ReportWindow(tz=SAST, venue="casino-9"))
    none = report(floor, "table", first=local(2026, 7, 9).date())
    assert none.rows == () and none.notes == ("no hands in this period",)


def test_the_command_writes_json_csv_and_text(floor: Engine, database_url: Database,
                                              tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    del floor
    out = tmp_path / "tables.json"
    assert main(["report", "tables", "--db", database_url.url, "--format", "json",
                 "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["timezone"] == "Africa/Johannesburg"
    t01 = doc["rows"][0]
    assert (t01["table"], t01["hands_per_hour"], t01["dealing_hours"]) == ("t01", 26.7, 0.15)
    assert t01["side_bets"]["trips_plus"] == {"seat_hands": 4, "share": 0.5,
                                              "wagered_cents": 10_000, "wagered_rand": "100.00",
                                              "markers": 0}
    assert t01["first_hand_at"] == "2026-07-03T14:02:00+02:00"
    assert main(["report", "dealers", "--db", database_url.url, "--format", "csv",
                 "--venue", "casino-1"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["dealer"], r["hands_settled"], r["hands_per_hour"]) for r in rows] == [
        ("D1", "2", "26.7"), ("D2", "2", "40.0")]
    assert (rows[1]["alert_card_without_hand"], rows[1]["manual_cards_keyed"]) == ("1", "1")
    assert rows[0]["sweet16_wagered_rand"] == "100.00"
    assert main(["report", "heats", "--db", database_url.url, "--from", "2026-07-03",
                 "--to", "2026-07-03"]) == 0
    text = capsys.readouterr().out
    assert "H1 (stage qualifying) at t01" in text and "H2" not in text
    assert "dealing 0:09:00 (h:mm:ss): 26.7 hands/h" in text
    assert "Trips Plus 50.0% (4), R100.00; Pocket Bonus 0.0% (0), R0.00" in text


@pytest.mark.parametrize(("argv", "message"), [
    (["--venue", "casino-9"], "--venue: no table is enrolled at venue 'casino-9'"),
    (["--from", "3 July"], "--from '3 July' is not a date (YYYY-MM-DD)"),
    (["--from", "2026-07-05", "--to", "2026-07-04"], "--from 2026-07-05 is after --to"),
])
def test_bad_input_is_one_line(engine: Engine, database_url: Database, argv: list[str],
                               message: str, capsys: pytest.CaptureFixture[str]) -> None:
    del engine
    assert main(["report", "tables", "--db", database_url.url, *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_missing_database_is_never_created(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nothing.sqlite"
    assert main(["report", "economics", "--db", f"sqlite:///{path}"]) == 2
    assert "no such SQLite file" in capsys.readouterr().err
    assert not path.exists()
