"""`showdown simulate floor`: a whole floor in virtual time; every hand reaches the central
database exactly once and every score there is the one the table journaled (checked here
independently of the command's own report, from the kept journals and database)."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from cli.main import main
from floor.plan import LoadPlan
from tests import services
from tests.fixtures.services import Database, require_service


def _journal(path: Path) -> tuple[list[str], dict[str, int], list[str]]:
    """(hand ids settled, entry -> score, message timestamps) from a table's journal."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT type, body, wall FROM outbox ORDER BY seq").fetchall()
    hands = [json.loads(b)["hand_id"] for t, b, _ in rows if t == "hand.settled"]
    scores = {json.loads(b)["entry_id"]: json.loads(b)["score"] for t, b, _ in rows
              if t == "score.recorded"}
    return hands, scores, [w for t, _, w in rows if t == "hand.settled"]


def _check_floor(keep: Path, engine: sa.Engine, report: dict[str, object], tables: int) -> None:
    with engine.connect() as c:
        central_hands = Counter(h for (h,) in c.execute(sa.text("SELECT hand_id FROM hands")))
        central_scores = dict(c.execute(sa.text(
            "SELECT entry_id, score_cents FROM scores WHERE acknowledged_at IS NOT NULL")).all())
        seqs = Counter(c.execute(sa.text("SELECT table_id, seq FROM messages")).all())
    assert max(seqs.values()) == 1  # no (table, seq) twice
    all_scores: dict[str, int] = {}
    for n in range(1, tables + 1):
        hands, scores, walls = _journal(keep / f"t{n:02d}" / "journal.sqlite")
        assert len(hands) >= 10 and len(set(hands)) == len(hands)
        assert all(central_hands[h] == 1 for h in hands), "a hand missing or twice centrally"
        all_scores.update(scores)
        # virtual time: a hand a simulated minute apart at the table, whatever the wall took
        assert walls[0].startswith("2026-07-03T11:0") and walls[-1] > walls[0]
    assert sum(central_hands.values()) == sum(t["hands"] for t in report["tables"])  # type: ignore[attr-defined,index]
    assert central_scores == all_scores and len(all_scores) == 3 * tables
    assert report["problems"] == []


@pytest.mark.soak  # a whole simulated floor
def test_two_tables_every_hand_once_and_the_journals_scores(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keep = tmp_path / "run"
    assert main(["simulate", "floor", "--tables", "2", "--hands", "10", "--seed", "7",
                 "--keep", str(keep), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["seed"] == 7 and report["hands"] == 20
    for table in report["tables"]:
        assert table["hands"] == table["hands_central"] == 10
        assert table["lost"] == [] and table["duplicated"] == 0
        assert table["published"] == table["ingested"] > 10
        # a table's own pace (the 9 gaps between its heat's first and last hand over that
        # span) depends on how its hands interleave with the other's: each hand moves the one
        # floor clock on by its share (30 s of a 60 s hand with two tables playing), and once
        # one table has finished the other's hands take a whole minute each. The span is at
        # least 9 x 30 s, and at most the other table's 10 hands at 30 s each and this one's
        # 9 later hands at 60 s each (the other plays its whole heat after this one's first
        # hand: seen on a loaded machine)
        assert 3600 * 9 / (10 * 30 + 9 * 60) <= table["hands_per_hour_virtual"] <= 120
    virtual_s = (datetime.fromisoformat(report["virtual_end"])
                 - datetime.fromisoformat(report["virtual_start"])).total_seconds()
    # The floor's clock moves on by a hand's minute shared among the tables playing: 30 s a
    # hand while both play, 60 s for a hand one table plays after the other has finished (how
    # many depends on how the loaded machine interleaved them), plus a millisecond a reading.
    # So 20 hands take 10 to 20 virtual minutes: the floor's pace is 30 to 60 an hour a table.
    assert 20 * 30 <= virtual_s <= 20 * 60 + 30, virtual_s
    engine = sa.create_engine(f"sqlite:///{keep / 'leaderboard.sqlite3'}")
    try:
        _check_floor(keep, engine, report, 2)
    finally:
        engine.dispose()


@pytest.mark.soak  # a whole simulated floor
@pytest.mark.mosquitto
@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_two_tables_on_mosquitto_and_postgresql(database_url: Database, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    host, port = services.MOSQUITTO
    require_service("Mosquitto", services.mosquitto_up(), f"{host}:{port}")
    keep = tmp_path / "run"
    assert main(["simulate", "floor", "--tables", "2", "--hands", "10", "--seed", "11",
                 "--broker", f"{host}:{port}", "--db", database_url.url,
                 "--keep", str(keep)]) == 0
    out = capsys.readouterr().out
    assert "20 hands in" in out and "0 lost, 0 duplicated, 0 rejected" in out, out
    assert out.rstrip().endswith("0 problem(s)")
    report = {"tables": [{"hands": 10}, {"hands": 10}], "problems": []}
    _check_floor(keep, database_url.engine(), report, 2)


@pytest.mark.parametrize(("args", "message"), [
    (["--tables", "0"], "--tables must be 1..20, got 0"),
    (["--hands", "0"], "--hands must be 1..10000 (per table), got 0"),
    (["--players", "7"], "--players must be 1..6, got 7"),
    (["--hand-seconds", "0.5"], "--hand-seconds must be 1..3600, got 0.5"),
    (["--broker", "nowhere"], "--broker must be HOST:PORT"),
    (["--broker", "127.0.0.1:99999"], "--broker must be HOST:PORT"),
])
def test_bad_arguments_are_one_line_errors(args: list[str], message: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "floor", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_a_broker_that_does_not_answer_and_a_used_directory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    assert main(["simulate", "floor", "--broker", f"127.0.0.1:{free}"]) == 69
    err = capsys.readouterr().err
    assert "the MQTT broker does not answer" in err and len(err.strip().splitlines()) == 1
    (tmp_path / "something").write_text("x")
    assert main(["simulate", "floor", "--keep", str(tmp_path)]) == 2
    assert "the directory is not empty" in capsys.readouterr().err


def test_a_run_longer_than_qualifying_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "floor", "--hands", "10000", "--hand-seconds", "3600"]) == 2
    err = capsys.readouterr().err
    assert "need 1000 heat days; qualifying has 28" in err and len(err.splitlines()) == 1


@pytest.mark.soak  # a whole simulated floor
def test_a_heat_that_no_longer_fits_the_day_waits_for_the_next(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 40 simulated minutes a hand: a heat lasts about 6.7 h of the 11 h window, so the
    # second heat opens at 13:00 the next day (11:00 UTC), at the same virtual pace
    keep = tmp_path / "run"
    assert main(["simulate", "floor", "--tables", "1", "--hands", "20", "--seed", "3",
                 "--hand-seconds", "2400", "--keep", str(keep), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tables"][0]["heats"] == 2
    assert report["tables"][0]["hands_per_hour_virtual"] == pytest.approx(1.5, rel=0.05)
    _, _, walls = _journal(keep / "t01" / "journal.sqlite")
    days = sorted({w[:10] for w in walls})
    assert days == ["2026-07-03", "2026-07-04"]
    assert min(w for w in walls if w.startswith("2026-07-04")) >= "2026-07-04T11:00"


@pytest.mark.soak  # a whole simulated floor
def test_a_table_process_that_dies_is_a_problem_reported_not_a_hang(tmp_path: Path) -> None:
    import asyncio
    import os
    import signal

    from floor.plan import LoadPlan
    from floor.report import build_report
    from floor.run import FloorRun

    floor = FloorRun(LoadPlan(directory=tmp_path, tables=2, hands=10, seed=5),
                     out=lambda _line: None)

    async def run() -> None:
        task = asyncio.create_task(floor.run())
        while floor.desk is None or floor.desk.opened_at is None:  # until the floor opens
            assert not task.done(), task.result()
            await asyncio.sleep(0.05)
        pid = floor.processes["t02"].pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        await task

    asyncio.run(run())
    report = build_report(floor)
    problems = report.check()
    assert "t02: the table's process stopped (exit code -9)" in problems, problems
    t01 = next(t for t in report.tables if t.table == "t01")
    assert t01.hands == t01.hands_central == 10 and t01.lost == [] and t01.problem is None


@pytest.mark.soak  # a whole simulated floor
def test_a_table_process_that_cannot_start_is_a_problem_reported(tmp_path: Path) -> None:
    import asyncio

    from floor.plan import FloorFiles, LoadPlan
    from floor.report import build_report
    from floor.run import FloorRun

    class BrokenTable(FloorRun):
        """t02's config file is damaged after the floor wrote it."""

        def _write_files(self, broker: str) -> FloorFiles:
            files = super()._write_files(broker)
            files.tables["t02"].write_text("[table\n", encoding="utf-8")
            return files

    floor = BrokenTable(LoadPlan(directory=tmp_path, tables=2, hands=10, seed=5),
                        out=lambda _line: None)
    asyncio.run(floor.run())
    problems = build_report(floor).check()
    # what stopped it, and that it never had a journal to check
    assert any(p.startswith("t02: Expected ']' at the end of a table declaration")
               and "t02: its journal cannot be read" in p for p in problems), problems
    assert not any(p.startswith("t01") for p in problems), problems


def test_a_floor_on_a_given_broker_takes_a_venue_of_its_own(tmp_path: Path) -> None:
    # Retained messages and persistent sessions of an earlier run on a shared broker must
    # not reach this one (an earlier run's retained status was rejected centrally).
    embedded = LoadPlan(directory=tmp_path)
    first = LoadPlan(directory=tmp_path, broker="127.0.0.1:1883")
    second = LoadPlan(directory=tmp_path, broker="127.0.0.1:1883")
    chosen = LoadPlan(directory=tmp_path, broker="127.0.0.1:1883", venue="bench")
    assert embedded.venue == "floor"
    assert first.venue.startswith("floor-") and second.venue.startswith("floor-")
    assert first.venue != second.venue
    assert chosen.venue == "bench"
