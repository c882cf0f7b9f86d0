"""`showdown demo` (what `make demo` runs): the simulated floor, and one table watched."""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from pytest_mock import MockerFixture

from cli.main import main
from floor.plan import TournamentPlan
from floor.report import FloorReport
from floor.tournament import SimulatedFloor
from leaderboard import desk
from leaderboard.standings.view import ViewOptions, standings, strip_names
from runtime.settings_files import read_tournament
from tests import services
from tests.fixtures.hang_guard import hang_guard
from tests.fixtures.services import Database, require_service


def _floor_summary(out: str) -> tuple[int, int, int, int, int, int]:
    found = re.search(r"(\d+) heats played, (\d+) entries seated, (\d+) scores on the"
                      r" leaderboard, (\d+) withdrawn, (\d+) registration refused,"
                      r" (\d+) problems", out)
    assert found is not None, out[-3000:]
    return tuple(int(g) for g in found.groups())  # type: ignore[return-value]


# A small whole tournament: the rules are settings (the shipped ones take 12 qualifiers into
# two semi-final heats of 6 and 12 hands a heat); the calendar is the demo's own.
SMALL = ["--set", "qualifying.advance=4", "--set", "qualifying.hands=4",
         "--set", "semi_final.heats=2", "--set", "semi_final.seats_per_heat=2",
         "--set", "semi_final.advance=2", "--set", "semi_final.hands=3",
         "--set", "final.seats_per_heat=2", "--set", "final.hands=3",
         "--set", "prizes.final_places=[70, 30]"]


def _section(out: str, start: str, end: str) -> str:
    return out[out.index(start):out.index(end, out.index(start))]


@pytest.mark.soak  # a whole demo tournament
def test_demo_plays_a_whole_small_tournament(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    keep = tmp_path / "run"
    assert main(["demo", "--tables", "2", "--days", "2", "--players", "2", "--speed", "0",
                 "--port", "0", "--linger", "0", "--seed", "5", "--keep", str(keep),
                 *SMALL]) == 0
    out = capsys.readouterr().out
    page = re.search(r"leaderboard page : (http://127\.0\.0\.1:(\d+)/)", out)
    assert page is not None and int(page.group(2)) > 0, out[:2000]
    assert "seed 5" in out
    # 2 tables x 2 heat days x 2 players; one patron (t01's last heat, seat 2) leaves after 3
    # hands and is withdrawn; every score read back from the central database
    assert _floor_summary(out) == (4, 8, 7, 1, 1, 0)
    assert "stages played: Qualifying, Semi-final, Final, prizes, claims" in out
    assert "problems: none" in out
    # the compressed calendar: two heat days (a Thursday and a Friday: two prize weeks), the
    # places the morning after, the finals two days after the last heat day
    days = re.findall(r"^  (\w{3} \d\d \w{3} \d{4}) (\d\d:\d\d)  (.+)$", out, re.MULTILINE)
    assert [what for _, _, what in days] == [
        "qualifying heat day 1 of 2", "qualifying heat day 2 of 2",
        "qualifying has ended: the semi-final places", "the semi-finals", "the Final",
        "after the Final: the prizes", "prize week 2 has ended",
        "the winners claim their prizes"]
    assert days[0][0].startswith("Thu") and days[1][0].startswith("Fri")
    assert [t for _, t, _ in days[:2]] == ["13:05", "13:05"]
    heats = re.findall(r"^(t0[12]): heat (q-\d{8}-t0[12]-1): seat 1 .+ \((E-[0-9a-f]{16})\),"
                       r" seat 2 .+ \((E-[0-9a-f]{16})\)$", out, re.MULTILINE)
    assert len(heats) == 4 and len({h for _, h, _, _ in heats}) == 4
    left = re.findall(r"^t01:   .+ \((E-[0-9a-f]+)\) left after 3 hands \(felt unwell\):"
                      r" unseated by the desk, withdrawn, no score \(rule 14\)$", out, re.MULTILINE)
    assert left == [[seat_2 for table, _, _, seat_2 in heats if table == "t01"][-1]]
    disputed = re.findall(r"^t01:   .+ \((E-[0-9a-f]+)\) scored .+ after disputing it \((.+)\)$",
                          out, re.MULTILINE)
    assert len(disputed) == 1 and "paid short" in disputed[0][1], out[-3000:]
    assert "REFUSED" in out and "under 18 (rule 1)" in out
    # the semi-finals: 4 places, heats and seats chosen, played at both tables; the Final
    assert len(re.findall(r"^ +\d+(?:st|nd|rd|th) .+ \((E-\w+) -> (S-\w+)\)$", out,
                          re.MULTILINE)) == 4
    assert re.search(r"^t01: heat semi-final-1: seat 1 .+ \(S-\w+\), seat 2 .+ \(S-\w+\)$", out,
                     re.MULTILINE)
    assert re.search(r"^t02: heat semi-final-2: seat 1 .+ \(S-\w+\), seat 2 .+ \(S-\w+\)$", out,
                     re.MULTILINE)
    assert re.search(r"^t01: heat final-1: seat 1 .+ \(F-\w+\), seat 2 .+ \(F-\w+\)$", out,
                     re.MULTILINE)
    # the summary: the Final's places with the pool split (8 buy-ins x R100 x 80% = R640:
    # 70% and 30%), every prize with its amount and whether it was claimed
    final = _section(out, "the Final:\n", "prizes:\n")
    places = re.findall(r"^ +(1st|2nd)  .+ +(R[\d,]+\.\d\d)  prize +(R[\d,]+\.\d\d)", final,
                        re.MULTILINE)
    assert [(p, prize) for p, _, prize in places] == [("1st", "R448.00"), ("2nd", "R192.00")]
    prizes = re.findall(r"^  (weekly|Final Prize Pool|Top Score Progressive) +(week \d|\d\w\w)"
                        r" +(R[\d,]+\.\d\d)  .+?  (claimed \d\d \w{3}|unclaimed, open until .+)$",
                        _section(out, "prizes:\n", "pools:"), re.MULTILINE)
    assert sorted((kind, place, amount) for kind, place, amount, _ in prizes) == [
        ("Final Prize Pool", "1st", "R448.00"), ("Final Prize Pool", "2nd", "R192.00"),
        ("Top Score Progressive", "1st", "R96.00"), ("Top Score Progressive", "2nd", "R40.00"),
        ("Top Score Progressive", "3rd", "R24.00"), ("weekly", "week 1", "R1,000.00"),
        ("weekly", "week 2", "R1,000.00")]
    assert sum(status.startswith("unclaimed") for *_, status in prizes) == 1
    assert "prizes awarded 7, claimed 6;" in out
    assert ("pools: 8 buy-ins R800.00: Final Prize Pool R640.00, Top Score Progressive"
            " R160.00, split remainder R0.00") in out
    assert re.search(r"^faults injected: overpays 1 \(next hands refused 1, overridden 1\),"
                     r" disputes 1 \(ruled on at the desk\), withdrawals 1", out, re.MULTILINE)
    # Each desk action was taken under the session of the person whose role allows it, at
    # the demo's calendar time.
    engine = sa.create_engine(f"sqlite:///{keep / 'leaderboard.sqlite3'}")
    with engine.connect() as connection:
        actors: dict[str, str] = dict(connection.execute(sa.text(
            "SELECT action, MIN(actor) || ' ' || MAX(actor) FROM audit WHERE action IN"
            " ('entry.bought', 'semi_final.allocated', 'semi_final.seat_chosen',"
            " 'final.allocated', 'final.drawn', 'prize.awarded', 'prize.claimed')"
            " GROUP BY action")).all())
        acked = connection.execute(sa.text(
            "SELECT DISTINCT substr(s.acknowledged_at, 1, 10) FROM scores s"
            " WHERE s.stage = 'qualifying' ORDER BY 1")).scalars().all()
        claimed = connection.execute(sa.text(
            "SELECT COUNT(*) FROM prize_awards WHERE claimed_at IS NOT NULL")).scalar()
    assert actors == {"entry.bought": "demo-clerk demo-clerk",
                      "semi_final.seat_chosen": "demo-clerk demo-clerk",
                      "semi_final.allocated": "demo-manager demo-manager",
                      "final.allocated": "demo-manager demo-manager",
                      "final.drawn": "demo-manager demo-manager",
                      "prize.awarded": "demo-manager demo-manager",
                      "prize.claimed": "demo-supervisor demo-supervisor"}, actors
    assert len(acked) == 2 and claimed == 6  # two heat days; six prizes paid out
    # The page's document lists every prize awarded, claimed or open (names only on the page).
    settings = read_tournament(keep / "tournament-demo.toml")
    doc = standings(engine, settings, ViewOptions(venue="demo", title="t", rows=12,
                                                  names="first_name_initial"),
                    now=datetime(2026, 12, 1, tzinfo=UTC))
    awards = doc["awards"]
    assert [(a["kind"], a["amount"]["text"]) for a in awards if a["kind"] == "final"] == [
        ("final", "R448.00"), ("final", "R192.00")]
    assert len(awards) == 7 and sum(a["status"] == "claimed" for a in awards) == 6
    assert all(a["name"] for a in awards)
    assert not any("name" in a for a in strip_names(doc)["awards"])


def _tiny(directory: Path, seed: int, *, whole: bool = True) -> FloorReport:
    rules = {"qualifying.advance": 4, "qualifying.hands": 2, "semi_final.heats": 2,
             "semi_final.seats_per_heat": 2, "semi_final.advance": 2, "semi_final.hands": 2,
             "final.seats_per_heat": 2, "final.hands": 2, "prizes.final_places": [70, 30]}
    plan = TournamentPlan(directory=directory, tables=2, days=1, players=2, seed=seed, hand_pause=0,
                     stage_pause=0, http_port=0, rules=rules, withdrawal=False,
                     overpay_hand=1, whole=whole)
    return asyncio.run(SimulatedFloor(plan, out=lambda _: None).run(asyncio.Event(), linger=0))


def _by_name(report: FloorReport) -> tuple[list[object], list[object], list[object]]:
    """The report's places and prizes with patrons by name (patron ids are the desk's own)."""
    def name(patron: str) -> str:
        return report.names[patron]

    return ([replace(p, holder=name(p.holder), played_by=name(p.played_by))
             for p in report.final_places],
            [replace(p, holder=name(p.holder), played_by=name(p.played_by))
             for p in report.semi_places],
            [replace(p, patron_id=name(p.patron_id), claimed_at=None) for p in report.prizes])


@pytest.mark.soak  # a whole demo tournament
def test_a_seed_replays_the_whole_tournament(tmp_path: Path) -> None:
    # Same seed: the same patrons at the same heats and seats, the same entry ids, cards,
    # scores, seat draw and so the same winners and prizes (the runner's API, as the
    # end-to-end test calls it).
    first, again = (_tiny(tmp_path / name, 7) for name in ("a", "b"))
    assert not first.problems and first.stages[-1] == "claims"
    assert len(first.final_places) == 2 and len(first.prizes) == 6  # 1 week's prize + 5
    assert _by_name(first) == _by_name(again)
    assert first.scores == again.scores and first.draw == again.draw
    assert [p.amount_cents for p in first.prizes if p.kind == "final"] == [22_400, 9_600]
    assert sum(p.status == "unclaimed" for p in first.prizes) == 1
    assert first.names[first.final_places[0].holder] == \
        next(p.winner for p in first.prizes if p.kind == "final" and p.place == 1)
    other = _tiny(tmp_path / "c", 8, whole=False)  # another seed: other entries and scores
    assert other.stages == ["qualifying"] and len(other.scores) == 4
    assert other.scores != first.scores


@pytest.mark.soak  # a whole demo tournament
def test_a_stage_that_fails_stops_the_tournament_with_exit_1(
        capsys: pytest.CaptureFixture[str], mocker: MockerFixture) -> None:
    # A desk refusal nothing in the demo can provoke for real: the seat draw's store is
    # down. The Final is not played, nothing is awarded, the summary says why; exit 1.
    mocker.patch("leaderboard.desk.draw_final",
                 side_effect=desk.Conflict("the draws table is not writable"))
    assert main(["demo", "--tables", "2", "--days", "1", "--players", "2", "--speed", "0",
                 "--port", "0", "--linger", "0", "--seed", "3", "--no-withdrawal",
                 "--overpay", "0", *SMALL, "--set", "qualifying.hands=2",
                 "--set", "semi_final.hands=2"]) == 1
    out = capsys.readouterr().out
    assert "STOPPED: the draws table is not writable" in out
    assert "stages played: Qualifying, Semi-final\n" in out
    assert "  problem: the draws table is not writable" in out
    assert "prizes:" not in out and "problems: none" not in out


@pytest.mark.soak  # a whole demo tournament
@pytest.mark.mosquitto
@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_demo_floor_on_mosquitto_and_postgresql(database_url: Database,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    host, port = services.MOSQUITTO
    require_service("Mosquitto", services.mosquitto_up(), f"{host}:{port}")
    with tempfile.TemporaryDirectory() as keep:
        assert main(["demo", "--tables", "2", "--days", "2", "--players", "2", "--speed", "0",
                     "--port", "0", "--linger", "0", "--broker", f"{host}:{port}",
                     "--db", database_url.url, "--keep", keep, *SMALL]) == 0
        kept = sorted(p.name for p in Path(keep).iterdir())
    out = capsys.readouterr().out
    # Every entry's chips reconciled at its table, stored centrally through the broker.
    assert main(["chips", "inventory", "--db", database_url.url, "--format", "json"]) == 0
    inventory = json.loads(capsys.readouterr().out)
    # 8 qualifying entries, 4 semi-final and 2 Final places
    assert len(inventory["entries"]) == 14 and inventory["totals"]["missing"] == 0
    assert f"MQTT broker      : {host}:{port}" in out
    assert _floor_summary(out) == (4, 8, 7, 1, 1, 0)
    assert "stages played: Qualifying, Semi-final, Final, prizes, claims" in out
    assert {"leaderboard.toml", "tournament-demo.toml", "t01", "t02"} <= set(kept)
    assert "leaderboard.sqlite3" not in kept  # the scores went to PostgreSQL
    # Every desk action is recorded under the person whose session took it.
    engine = database_url.engine()
    with engine.connect() as connection:
        actors: dict[str, str] = dict(connection.execute(sa.text(
            "SELECT action, MIN(actor) || ' ' || MAX(actor) FROM audit"
            " WHERE action IN ('patron.registered', 'entry.bought', 'heat.opened',"
            " 'entry.seated', 'desk.signed_in', 'prize.awarded') GROUP BY action")).all())
    assert actors == {"patron.registered": "demo-clerk demo-clerk",
                      "entry.bought": "demo-clerk demo-clerk",
                      "entry.seated": "demo-clerk demo-clerk",
                      "heat.opened": "demo-supervisor demo-supervisor",
                      "desk.signed_in": "demo-clerk demo-supervisor",
                      "prize.awarded": "demo-manager demo-manager"}, actors


def test_demo_refuses_a_bad_port_and_a_used_directory(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    assert main(["demo", "--port", "70000"]) == 2
    assert "--port must be 0..65535" in capsys.readouterr().err
    assert main(["demo", "--speed", "-1"]) == 2
    assert "--speed must be 0..100" in capsys.readouterr().err
    assert main(["demo", "--set", "qualifying.advance"]) == 2
    assert "write SECTION.KEY=VALUE" in capsys.readouterr().err
    assert main(["demo", "--set", "qualifying.advance=[1,"]) == 2
    assert "the value is not TOML" in capsys.readouterr().err
    assert main(["demo", "--set", "qualifying.advancez=4"]) == 2
    assert "the tournament template has no qualifying.advancez" in capsys.readouterr().err
    assert main(["demo", "--set", "semi_final.advance=13"]) == 2
    assert "the demo's tournament settings: semi_final.advance: top 13 advance but" in \
        capsys.readouterr().err
    assert main(["demo", "--tables", "1", "--players", "2", "--days", "2", "--heats", "1"]) == 2
    assert "give 3 qualifying scores, but the semi-finals take 12" in capsys.readouterr().err
    (tmp_path / "something").write_text("x")
    assert main(["demo", "--keep", str(tmp_path)]) == 2
    assert "the directory is not empty" in capsys.readouterr().err


def test_demo_table_only_plays_a_heat_and_every_score_arrives(
        capsys: pytest.CaptureFixture[str]) -> None:
    # With --json the story goes to stderr and stdout is one JSON document, the summary.
    with hang_guard(240, "showdown demo --table-only"):  # it hung once, in a CI run
        assert main(["demo", "--table-only", "--seed", "11", "--players", "2", "--json"]) == 0
    got = capsys.readouterr()
    doc, out = json.loads(got.out), got.err
    assert doc["ok"] is True and doc["gaps"] == [] and len(doc["scores"]) == 2
    assert f"{doc['received']} messages received" in out
    assert "table daemon t01 ready" in out
    summary = re.search(r"(\d+) messages received, signatures verified, seq 1\.\.(\d+) with "
                        r"(\d+) gaps; (\d+) scores", out)
    assert summary is not None, out[-2000:]
    assert summary.group(3) == "0"
    assert summary.group(4) == "2"
    assert out.count("hand.settled") == 0  # logs stay quiet at warning level
    assert len(re.findall(r"\] t01-\d{6}: board", out)) >= 10
    assert len(re.findall(r"SCORE T01-1-S\d: R", out)) == 2


def test_demo_with_decks_in_factory_order_holds_every_one(
        capsys: pytest.CaptureFixture[str]) -> None:
    # Each deck dealt in new-deck order is held by the table's deck checks until the virtual
    # supervisor clears it; the heat still ends and its score arrives.
    assert main(["demo", "--tables", "1", "--days", "1", "--players", "1", "--speed", "0",
                 "--port", "0", "--linger", "0", "--seed", "3", "--no-withdrawal",
                 "--deck", "factory", "--qualifying-only"]) == 0
    out = capsys.readouterr().out
    assert _floor_summary(out)[:3] == (1, 1, 1)
    held = re.search(r"^decks factory: suspect decks held, cleared by a supervisor: (\d+)$", out,
                     re.MULTILINE)
    assert held is not None and int(held.group(1)) >= 1, out[-2000:]
