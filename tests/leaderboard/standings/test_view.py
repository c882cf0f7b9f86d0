"""The standings document the page, the JSON API and the retained topic show, from DB rows.

Every expected figure is worked out by hand in the test from the settings in
config/tournament.toml (R100 buy-in, 80/20 pools, 60/25/15 and 60/10/9/8/7/6 splits, weeks
Friday to Thursday from 3 July 2026, top 12 advance), run on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import tomllib
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from game.tournament.schema import TournamentSettings, parse_tournament
from leaderboard.models import Entry, Patron, Score
from leaderboard.standings.view import (
    ViewOptions,
    format_text,
    standings,
    strip_names,
)
from runtime.settings_files import read_tournament

SAST = ZoneInfo("Africa/Johannesburg")
REPO = Path(__file__).resolve().parents[3]
# Sunday of prize week 2 (Friday 10 July to Thursday 16 July), 15:00 venue time.
NOW = datetime(2026, 7, 12, 15, 0, tzinfo=SAST)
OPTIONS = ViewOptions(venue="goldreef", title="Test floor", rows=20)
NAMES = {"P1": "Thandiwe Mokoena", "P2": "Pieter van der Merwe", "P3": "Sipho Dlamini"}
CONSENTED = frozenset({"P1", "P2"})  # agreed at registration to be shown by name


@pytest.fixture(scope="module")
def settings() -> TournamentSettings:
    return read_tournament(REPO / "config" / "tournament.toml")


def at(day: int, hour: int, minute: int = 0, month: int = 7) -> datetime:
    """A venue-local moment of July 2026, as an aware datetime."""
    return datetime(2026, month, day, hour, minute, tzinfo=SAST)


def add_patrons(s: Session) -> None:
    for i, (pid, name) in enumerate(sorted(NAMES.items())):
        s.add(Patron(patron_id=pid, name=name, id_kind="id_document",
                     id_number=f"80010150090{i}8", birth_date=date(1980, 1, 1),
                     created_at=at(3, 13), name_consent=pid in CONSENTED))


def add_entry(s: Session, entry_id: str, patron: str, *, heat_day: date | None = date(2026, 7, 10),
              stage: str = "qualifying", buy_in: int = 10_000, status: str = "registered",
              heat_id: str | None = None, table: str | None = None,
              seat: int | None = None) -> None:
    s.add(Entry(entry_id=entry_id, patron_id=patron, stage=stage, heat_id=heat_id,
                heat_day=heat_day, table_id=table, seat=seat, buy_in_cents=buy_in,
                bought_at=at(3, 13), status=status))


def add_score(s: Session, entry_id: str, cents: int, *, recorded: datetime,
              acked: datetime | None, voided: datetime | None = None, stage: str = "qualifying",
              hands: int = 10, status: str = "finished", table: str = "t01") -> None:
    s.add(Score(entry_id=entry_id, table_id=table, seq=len(entry_id) + cents % 97,
                stage=stage, heat_id=f"{table}-h1", score_cents=cents, hands=hands,
                status=status, recorded_at=recorded.astimezone(UTC),
                acknowledged_at=acked.astimezone(UTC) if acked else None, ack_method="tap",
                voided_at=voided.astimezone(UTC) if voided else None,
                void_reason="supervisor" if voided else None))


def rows(doc: dict[str, Any]) -> list[tuple[int, int, str, int, bool]]:
    return [(r["rank"], r["position"], r["entry_id"], r["score_cents"], r["tied"])
            for r in doc["board"]["rows"]]


def test_qualifying_board_ties_acknowledgement_voids_and_prizes(
        engine: Engine, settings: TournamentSettings) -> None:
    with Session(engine) as s:
        add_patrons(s)
        for eid, patron in (("E-1", "P1"), ("E-2", "P1"), ("E-3", "P2"), ("E-4", "P2"),
                            ("E-5", "P3")):
            add_entry(s, eid, patron)
        s.flush()
        # E-1 and E-2 tie at R3,000; E-2 was acknowledged first, so it ranks first.
        add_score(s, "E-1", 300_000, recorded=at(10, 14), acked=at(10, 14, 5))
        add_score(s, "E-2", 300_000, recorded=at(10, 15), acked=at(10, 14, 1))
        add_score(s, "E-3", 250_000, recorded=at(10, 16), acked=None)  # not acknowledged
        add_score(s, "E-4", 400_000, recorded=at(10, 17), acked=at(10, 17, 1),
                  voided=at(10, 18))  # voided by a supervisor
        add_score(s, "E-5", 100_000, recorded=at(10, 19), acked=at(10, 19, 1))
        s.commit()

    doc = standings(engine, settings, OPTIONS, now=NOW)

    assert doc["stage"] == "qualifying"
    assert rows(doc) == [(1, 1, "E-2", 300_000, True), (2, 2, "E-1", 300_000, True),
                         (3, 3, "E-5", 100_000, False)]
    board = doc["board"]
    assert board["advance"] == 12
    assert all(r["advancing"] and r["acknowledged"] for r in board["rows"])
    assert board["rows"][0]["score"] == "R3,000.00"
    assert (board["awaiting_acknowledgement"], board["voided"]) == (1, 1)
    assert [p["entry_id"] for p in doc["pending"]] == ["E-3"]
    assert doc["pending"][0]["score"] == "R2,500.00"
    # 5 buy-ins of R100 = R500: 80% = R400 Final Prize Pool, 20% = R100 Top Score Progressive.
    pools = doc["pools"]
    assert pools["entries"] == 5
    assert (pools["total"]["cents"], pools["final_pool"]["cents"], pools["top_score"]["cents"],
            pools["remainder"]["cents"]) == (50_000, 40_000, 10_000, 0)
    # R100 split 60/25/15 = R60, R25, R15; R400 split 60/10/9/8/7/6.
    assert [p["cents"] for p in pools["top_score"]["places"]] == [6_000, 2_500, 1_500]
    assert [p["cents"] for p in pools["final_pool"]["places"]] == [
        24_000, 4_000, 3_600, 3_200, 2_800, 2_400]
    # If qualifying ended now: the top three counted scores would share the progressive.
    assert {r["entry_id"]: r["prize"]["cents"] for r in board["rows"]} == {
        "E-2": 6_000, "E-1": 2_500, "E-5": 1_500}
    assert doc["excluded"] == []


def test_a_supervisors_correction_is_counted_and_flagged(
        engine: Engine, settings: TournamentSettings) -> None:
    with Session(engine) as s:
        add_patrons(s)
        for eid, patron in (("E-1", "P1"), ("E-2", "P2"), ("E-3", "P3")):
            add_entry(s, eid, patron)
        s.flush()
        add_score(s, "E-1", 300_000, recorded=at(10, 14), acked=at(10, 14, 5))
        add_score(s, "E-2", 200_000, recorded=at(10, 15), acked=None)  # disputed
        add_score(s, "E-3", 250_000, recorded=at(10, 16), acked=at(10, 16, 2))
        s.flush()
        # E-2's dispute ruled at R3,500 (counts, as decided at 18:00); E-1's cut to R2,400.
        for eid, cents in (("E-2", 350_000), ("E-1", 240_000)):
            row = s.get(Score, eid)
            assert row is not None
            row.corrected_cents, row.corrected_at = cents, at(10, 18).astimezone(UTC)
            row.correction_reason = "re-settled"
        s.commit()

    doc = standings(engine, settings, OPTIONS, now=NOW)

    assert rows(doc) == [(1, 1, "E-2", 350_000, False), (2, 2, "E-3", 250_000, False),
                         (3, 3, "E-1", 240_000, False)]
    board = doc["board"]
    assert [(r["corrected"], r["acknowledged"]) for r in board["rows"]] == [
        (True, True), (False, True), (True, True)]
    assert board["rows"][0]["score"] == "R3,500.00"
    assert (board["awaiting_acknowledgement"], doc["pending"]) == (0, [])


def test_split_tie_rule_shares_the_position(engine: Engine, settings: TournamentSettings
                                            ) -> None:
    split = _settings_with(settings, scores={"tie_rule": "split"})
    with Session(engine) as s:
        add_patrons(s)
        for eid in ("E-1", "E-2", "E-3"):
            add_entry(s, eid, "P1")
        s.flush()
        add_score(s, "E-1", 200_000, recorded=at(10, 14), acked=at(10, 14, 9))
        add_score(s, "E-2", 200_000, recorded=at(10, 15), acked=at(10, 14, 1))
        add_score(s, "E-3", 300_000, recorded=at(10, 16), acked=at(10, 16, 1))
        s.commit()
    doc = standings(engine, split, OPTIONS, now=NOW)
    # Positions 1, 2, 2: the tied entries share second place (row order still E-2 first).
    assert rows(doc) == [(1, 1, "E-3", 300_000, False), (2, 2, "E-2", 200_000, True),
                         (3, 2, "E-1", 200_000, True)]
    # R300 of buy-ins: top score pool R60 = R36 / R15 / R9; places 2 and 3 are pooled
    # (R15 + R9 = R24) and shared by the two tied entries: R12 each.
    assert {r["entry_id"]: r["prize"]["cents"] for r in doc["board"]["rows"]} == {
        "E-3": 3_600, "E-2": 1_200, "E-1": 1_200}


def test_pools_round_down_to_the_cent_and_show_the_remainder(
        engine: Engine, settings: TournamentSettings) -> None:
    odd = _settings_with(settings, money={"buy_in": "R33.33"})
    with Session(engine) as s:
        add_patrons(s)
        add_entry(s, "E-1", "P1", buy_in=3_333)
        s.commit()
    pools = standings(engine, odd, OPTIONS, now=NOW)["pools"]
    # 3,333 cents: 80% = 2,666.4 -> 2,666; 20% = 666.6 -> 666; 1 cent left over.
    assert (pools["final_pool"]["cents"], pools["top_score"]["cents"],
            pools["remainder"]["cents"]) == (2_666, 666, 1)
    assert pools["remainder"]["text"] == "R0.01"
    # 666 split 60/25/15: 399.6 -> 399, 166.5 -> 166, 99.9 -> 99; 2 cents left.
    top = pools["top_score"]
    assert [p["cents"] for p in top["places"]] == [399, 166, 99]
    assert top["remainder"]["cents"] == 2
    # 2,666 split 60/10/9/8/7/6: 1599.6, 266.6, 239.94, 213.28, 186.62, 159.96 rounded down;
    # 1599 + 266 + 239 + 213 + 186 + 159 = 2,662, so 4 cents are left.
    final = pools["final_pool"]
    assert [p["cents"] for p in final["places"]] == [1_599, 266, 239, 213, 186, 159]
    assert final["remainder"]["cents"] == 4
    # Nobody has scored: every share is reported as unawarded, never lost.
    assert sum(r["cents"] for r in top["projected_remainders"]) == 666


def test_weekly_leader_by_heat_day_in_venue_time(engine: Engine,
                                                 settings: TournamentSettings) -> None:
    with Session(engine) as s:
        add_patrons(s)
        # Week 1 is Friday 3 to Thursday 9 July; week 2 is Friday 10 to Thursday 16 July.
        add_entry(s, "E-W1", "P1", heat_day=date(2026, 7, 9))
        add_entry(s, "E-W2a", "P2", heat_day=date(2026, 7, 10))
        add_entry(s, "E-W2b", "P3", heat_day=date(2026, 7, 11))
        s.flush()
        # The Thursday heat's last hand ended after midnight (Friday 00:20): still week 1.
        add_score(s, "E-W1", 500_000, recorded=at(10, 0, 20), acked=at(10, 0, 21))
        add_score(s, "E-W2a", 200_000, recorded=at(10, 20), acked=at(10, 20, 1))
        add_score(s, "E-W2b", 300_000, recorded=at(11, 20), acked=at(11, 20, 1))
        s.commit()
    week = standings(engine, settings, OPTIONS, now=NOW)["week"]
    assert (week["week"], week["state"], week["prize_week"]) == (2, "running", True)
    assert (week["starts"], week["ends"]) == ("2026-07-10", "2026-07-16")
    assert week["label"] == "Fri 10 Jul to Thu 16 Jul"
    assert [r["entry_id"] for r in week["leaders"]] == ["E-W2b"]
    assert week["counted"] == 2
    # A second before week 2 starts (Thursday 9 July 23:59:59) it is still week 1.
    week1 = standings(engine, settings, OPTIONS,
                      now=at(10, 0) - timedelta(seconds=1))["week"]
    assert week1["week"] == 1
    assert [r["entry_id"] for r in week1["leaders"]] == ["E-W1"]


def test_names_hidden_by_default_and_never_in_the_public_copy(
        engine: Engine, settings: TournamentSettings) -> None:
    with Session(engine) as s:
        add_patrons(s)
        add_entry(s, "E-1", "P1")
        add_entry(s, "E-2", "P2")
        s.flush()
        add_score(s, "E-1", 210_000, recorded=at(10, 14), acked=at(10, 14, 1))
        add_score(s, "E-2", 190_000, recorded=at(10, 15), acked=None)
        s.commit()
    plain = standings(engine, settings, OPTIONS, now=NOW)
    text = json.dumps(plain)
    for pii in [*NAMES.values(), "Thandiwe", "Mokoena", "8001015009", "P1", "P2"]:
        assert pii not in text
    assert "name" not in plain["board"]["rows"][0]

    named = standings(engine, settings, ViewOptions(venue="goldreef", title="T",
                                                    names="first_name_initial"), now=NOW)
    assert named["board"]["rows"][0]["name"] == "Thandiwe M."
    assert named["pending"][0]["name"] == "Pieter M."
    public = json.dumps(strip_names(named))
    assert "Thandiwe" not in public
    assert "Pieter" not in public


def test_scores_that_cannot_be_ranked_are_listed_with_the_reason(
        engine: Engine, settings: TournamentSettings) -> None:
    with Session(engine) as s:
        add_patrons(s)
        add_entry(s, "E-OK", "P1")
        add_entry(s, "E-LATE", "P1", heat_day=date(2026, 8, 2))
        s.flush()
        add_score(s, "E-OK", 150_000, recorded=at(10, 14), acked=at(10, 14, 1))
        add_score(s, "E-GHOST", 900_000, recorded=at(10, 14), acked=at(10, 14, 1))
        add_score(s, "E-LATE", 800_000, recorded=at(2, 14, month=8),
                  acked=at(2, 14, 1, month=8))
        add_score(s, "E-9", 700_000, recorded=at(10, 14), acked=at(10, 14, 1), hands=7)
        s.commit()
    doc = standings(engine, settings, OPTIONS, now=NOW)
    assert [r["entry_id"] for r in doc["board"]["rows"]] == ["E-OK"]
    reasons = {x["entry_id"]: x["reason"] for x in doc["excluded"]}
    assert set(reasons) == {"E-GHOST", "E-LATE", "E-9"}
    assert "no registered entry" in reasons["E-GHOST"]
    assert "no registered entry" in reasons["E-9"]
    assert "not a qualifying day" in reasons["E-LATE"]
    assert "E-GHOST" in format_text(doc)


def test_finished_with_the_wrong_number_of_hands_is_not_ranked(
        engine: Engine, settings: TournamentSettings) -> None:
    with Session(engine) as s:
        add_patrons(s)
        add_entry(s, "E-7", "P1")
        s.flush()
        add_score(s, "E-7", 700_000, recorded=at(10, 14), acked=at(10, 14, 1), hands=7)
        s.commit()
    doc = standings(engine, settings, OPTIONS, now=NOW)
    assert doc["board"]["rows"] == []
    assert "finished after 7 hands" in doc["excluded"][0]["reason"]


def test_semi_final_stage_and_line_ups(engine: Engine, settings: TournamentSettings) -> None:
    with Session(engine) as s:
        add_patrons(s)
        add_entry(s, "E-1", "P1")
        add_entry(s, "S-1", "P1", stage="semi_final", buy_in=0, heat_day=None,
                  heat_id="semi-1", table="t02", seat=4, status="seated")
        add_entry(s, "S-2", "P2", stage="semi_final", buy_in=0, heat_day=None,
                  heat_id="semi-1", table="t02", seat=1, status="seated")
        add_entry(s, "S-3", "P3", stage="semi_final", buy_in=0, heat_day=None,
                  heat_id="semi-2", table="t03", seat=2, status="seated")
        s.commit()
    # Line-ups known before the semi-finals start leave the qualifying board up.
    waiting = standings(engine, settings, OPTIONS, now=datetime(2026, 7, 31, 12, tzinfo=SAST))
    assert waiting["stage"] == "qualifying"
    assert [len(h["seats"]) for h in waiting["semi_final"]["heats"]] == [2, 1]
    with Session(engine) as s:
        semi_end = datetime(2026, 8, 1, 16, 40, tzinfo=SAST)
        add_score(s, "S-2", 260_000, recorded=semi_end, acked=semi_end, stage="semi_final",
                  hands=12, table="t02")
        s.commit()
    # A semi-final score moves the board on even if the clock says otherwise.
    assert standings(engine, settings, OPTIONS, now=NOW)["stage"] == "semi_final"
    doc = standings(engine, settings, OPTIONS,
                    now=datetime(2026, 8, 1, 16, 45, tzinfo=SAST))
    assert doc["stage"] == "semi_final"
    assert doc["board"]["advance"] == 6
    assert rows(doc) == [(1, 1, "S-2", 260_000, False)]
    heats = doc["semi_final"]["heats"]
    assert [(h["heat_id"], h["table"], [x["seat"] for x in h["seats"]]) for h in heats] == [
        ("semi-1", "t02", [1, 4]), ("semi-2", "t03", [2])]
    assert heats[0]["seats"][0]["score"]["cents"] == 260_000
    assert doc["semi_final"]["starts"] == "2026-08-01 16:00"
    # Semi-final and final places have no buy-in: the pools hold the one qualifying buy-in.
    assert doc["pools"]["entries"] == 1


def test_an_empty_database_gives_an_empty_board(engine: Engine,
                                                settings: TournamentSettings) -> None:
    doc = standings(engine, settings, OPTIONS, now=NOW)
    assert doc["board"]["rows"] == []
    assert doc["week"]["leaders"] == []
    assert doc["pools"]["final_pool"]["text"] == "R0.00"
    assert "no counted scores yet" in format_text(doc)


def _settings_with(settings: TournamentSettings, **changes: dict[str, Any]
                   ) -> TournamentSettings:
    data = tomllib.loads((REPO / "config" / "tournament.toml").read_text(encoding="utf-8"))
    for table, values in changes.items():
        data[table].update(values)
    return parse_tournament(data, "test", tz=settings.tz)
