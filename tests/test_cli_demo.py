"""`showdown demo` (what `make demo` runs): the simulated floor, and one table watched."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
import sqlalchemy as sa

from controller.cli import main
from tests import services
from tests.fixtures.services import Database, require_service


def _floor_summary(out: str) -> tuple[int, int, int, int, int, int]:
    found = re.search(r"(\d+) heats played, (\d+) entries seated, (\d+) scores on the"
                      r" leaderboard, (\d+) withdrawn, (\d+) registration refused,"
                      r" (\d+) problems", out)
    assert found is not None, out[-3000:]
    return tuple(int(g) for g in found.groups())  # type: ignore[return-value]


def test_demo_floor_fills_the_leaderboard(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--tables", "2", "--heats", "2", "--players", "2", "--pause", "0",
                 "--port", "0", "--linger", "0", "--seed", "5"]) == 0
    out = capsys.readouterr().out
    page = re.search(r"leaderboard page : (http://127\.0\.0\.1:(\d+)/)", out)
    assert page is not None and int(page.group(2)) > 0, out[:2000]
    # 2 tables x 2 heats x 2 players, each score read back from the central database; one
    # patron (t01's last heat, seat 2) leaves after 3 hands and is withdrawn there too
    assert _floor_summary(out) == (4, 8, 7, 1, 1, 0)
    assert "chips returned to the tables' floats: 8 entries, 0 chips missing" in out, out[-2000:]
    heats = re.findall(r"^(t0[12]): heat q-\d{8}-t0[12]-[0-9a-f]{4}: seat 1 .+ \((E-[0-9a-f]+)\),"
                       r" seat 2 .+ \((E-[0-9a-f]+)\)$", out, re.MULTILINE)
    assert len(heats) == 4
    scored = re.findall(r"^t0[12]:   .+ \((E-[0-9a-f]+)\) scored (R[\d,]+\.\d\d), acknowledged",
                        out, re.MULTILINE)
    assert len({entry for entry, _ in scored}) == 7
    # How each score was acknowledged, and the one dispute, as the central database holds
    # them: the rewards-card tap at the table's ID reader, and the participant's note.
    methods = re.findall(r"scored R[\d,]+\.\d\d, acknowledged by (\S+?)(?: after|$)", out,
                         re.MULTILINE)
    assert methods == ["card"] * 7, methods
    disputed = re.findall(r"^t01:   .+ \((E-[0-9a-f]+)\) scored .+ after disputing it \((.+)\)$",
                          out, re.MULTILINE)
    assert len(disputed) == 1 and "paid short" in disputed[0][1], out[-3000:]
    left = re.findall(r"^t01:   .+ \((E-[0-9a-f]+)\) left after 3 hands \(felt unwell\):"
                      r" unseated by the desk, withdrawn, no score \(rule 14\)$", out, re.MULTILINE)
    assert left == [[seat_2 for table, _, seat_2 in heats if table == "t01"][-1]]
    assert left[0] not in {entry for entry, _ in scored}
    assert "REFUSED" in out and "under 18 (rule 1)" in out
    # the closing standings print every one of the 7 scores, ranked, with the pools of all 8
    # buy-ins (the withdrawn entry's stays in, D55)
    board = out[out.index("- Qualifying (as of"):]
    # (an entry whose chips fall below the least stake ends early, after fewer than 10 hands)
    ranked = re.findall(r"^\s+\d+\s+(E-[0-9a-f]+) \(.+?\)\s+(R[\d,]+\.\d\d)\s+(\d+)\s+yes",
                        board, re.MULTILINE)
    assert {e for e, _, _ in ranked} == {e for e, _ in scored}, board
    assert {e: s for e, s, _ in ranked} == dict(scored)
    assert all(1 <= int(hands) <= 10 for _, _, hands in ranked), board
    assert "Final Prize Pool (80% of 8 buy-ins): R640.00" in board
    assert "Top Score Progressive (20% of 8 buy-ins): R160.00" in board


def _play_by_seat(out: str) -> list[tuple[str, int, int, str]]:
    """(table, heat number, seat, score) from the floor's output, whoever played."""
    seats: dict[str, tuple[str, int, int]] = {}
    heats: dict[str, int] = {}
    for table, seating in re.findall(r"^(t\d\d): heat \S+: (.+)$", out, re.MULTILINE):
        heats[table] = heats.get(table, 0) + 1
        for seat, entry in re.findall(r"seat (\d+) .+? \((E-[0-9a-f]+)\)", seating):
            seats[entry] = (table, heats[table], int(seat))
    scored = re.findall(r"^t\d\d:   .+ \((E-[0-9a-f]+)\) scored (R[\d,]+\.\d\d)", out,
                        re.MULTILINE)
    return sorted((*seats[entry], score) for entry, score in scored)


def test_a_seed_replays_the_floors_play(capsys: pytest.CaptureFixture[str]) -> None:
    # Entry ids and who sits where are the desk's (random); the cards and the players'
    # choices at each table's heats and seats come from the seed.
    runs = []
    for seed in (7, 7, 8):
        assert main(["demo", "--tables", "2", "--heats", "1", "--players", "2", "--pause", "0",
                     "--port", "0", "--linger", "0", "--seed", str(seed),
                     "--no-withdrawal"]) == 0
        runs.append(_play_by_seat(capsys.readouterr().out))
    assert len(runs[0]) == 4
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


@pytest.mark.mosquitto
@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_demo_floor_on_mosquitto_and_postgresql(database_url: Database,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    host, port = services.MOSQUITTO
    require_service("Mosquitto", services.mosquitto_up(), f"{host}:{port}")
    with tempfile.TemporaryDirectory() as keep:
        assert main(["demo", "--tables", "2", "--heats", "1", "--players", "2", "--pause", "0",
                     "--port", "0", "--linger", "0", "--broker", f"{host}:{port}",
                     "--database", database_url.url, "--keep", keep]) == 0
        kept = sorted(p.name for p in Path(keep).iterdir())
    out = capsys.readouterr().out
    # Every entry's chips reconciled at its table, stored centrally through the broker.
    assert main(["chips", "inventory", "--db", database_url.url, "--format", "json"]) == 0
    inventory = json.loads(capsys.readouterr().out)
    assert len(inventory["entries"]) == 4 and inventory["totals"]["missing"] == 0
    assert f"MQTT broker      : {host}:{port}" in out
    assert _floor_summary(out) == (2, 4, 3, 1, 1, 0)
    assert {"leaderboard.toml", "tournament-demo.toml", "t01", "t02"} <= set(kept)
    assert "leaderboard.sqlite3" not in kept  # the scores went to PostgreSQL
    # Every desk action is recorded under the person whose session took it.
    engine = database_url.engine()
    with engine.connect() as connection:
        actors = dict(connection.execute(sa.text(
            "SELECT action, MIN(actor) || ' ' || MAX(actor) FROM audit"
            " WHERE action IN ('patron.registered', 'entry.bought', 'heat.opened',"
            " 'entry.seated', 'desk.signed_in') GROUP BY action")).all())
    assert actors == {"patron.registered": "demo-clerk demo-clerk",
                      "entry.bought": "demo-clerk demo-clerk",
                      "entry.seated": "demo-clerk demo-clerk",
                      "heat.opened": "demo-supervisor demo-supervisor",
                      "desk.signed_in": "demo-clerk demo-supervisor"}, actors


def test_demo_refuses_a_bad_port_and_a_used_directory(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    assert main(["demo", "--port", "70000"]) == 2
    assert "--port must be 0..65535" in capsys.readouterr().err
    (tmp_path / "something").write_text("x")
    assert main(["demo", "--keep", str(tmp_path)]) == 2
    assert "the directory is not empty" in capsys.readouterr().err


def test_demo_table_only_plays_a_heat_and_every_score_arrives(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--table-only", "--seed", "11", "--players", "2"]) == 0
    out = capsys.readouterr().out
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
    assert main(["demo", "--tables", "1", "--heats", "1", "--players", "1", "--pause", "0",
                 "--port", "0", "--linger", "0", "--seed", "3", "--no-withdrawal",
                 "--deck", "factory"]) == 0
    out = capsys.readouterr().out
    assert _floor_summary(out)[:3] == (1, 1, 1)
    held = re.search(r"^decks factory: suspect decks held, cleared by a supervisor: (\d+)$", out,
                     re.MULTILINE)
    assert held is not None and int(held.group(1)) >= 1, out[-2000:]
