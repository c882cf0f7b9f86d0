"""floor.plan, floor.clock and floor.report as both floors use them: one plan check, the same
files, one clock at two paces, one report (docs/decisions D282)."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from floor.clock import FloorClock
from floor.plan import (
    LoadPlan,
    RehearsalPlan,
    TournamentPlan,
    tournament_settings,
    write_files,
)
from floor.rehearsal_config import SimTableConfig
from floor.report import FloorReport


@pytest.mark.parametrize("kind", [LoadPlan, TournamentPlan])
def test_both_plans_are_checked_by_one_rule_naming_the_option(
        kind: type[LoadPlan | TournamentPlan], tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^--tables must be 1\.\.20, got 0$"):
        kind(directory=tmp_path, tables=0)
    with pytest.raises(ValueError, match=r"^--players must be 1\.\.6, got 7$"):
        kind(directory=tmp_path, players=7)
    own = kind(directory=tmp_path, broker="127.0.0.1:1883")
    embedded = kind(directory=tmp_path)
    assert embedded.venue in ("floor", "demo") and own.venue.startswith(embedded.venue + "-")


def test_a_rehearsal_is_one_table_checked_by_the_same_rule(tmp_path: Path) -> None:
    settings = SimTableConfig(players=3, broker="127.0.0.1:1883", venue="shop", table="t07")
    plan = RehearsalPlan.of(settings, seed=7, directory=tmp_path)
    assert (plan.tables, plan.table_ids, plan.table) == (1, ["t07"], "t07")
    assert (plan.players, plan.seed, plan.broker, plan.venue) == (3, 7, "127.0.0.1:1883",
                                                                  "shop")
    assert plan.tournament_file == settings.tournament and plan.settings is settings
    assert RehearsalPlan.of(SimTableConfig(), seed=1, directory=tmp_path).broker is None
    with pytest.raises(ValueError, match=r"^--players must be 1\.\.6, got 7$"):
        RehearsalPlan.of(SimTableConfig(players=7), seed=1, directory=tmp_path)
    with pytest.raises(ValueError, match="one table"):
        RehearsalPlan(directory=tmp_path, tables=2, settings=settings)


def test_both_floors_write_the_same_files(tmp_path: Path) -> None:
    load = write_files(LoadPlan(directory=tmp_path / "load", tables=2), "127.0.0.1:1883")
    plan = TournamentPlan(directory=tmp_path / "demo", tables=2, days=1, whole=False,
                          http_port=0)
    _, text, _ = tournament_settings(plan)
    demo = write_files(plan, "127.0.0.1:1883", tournament_text=text, hand_pause=0.3,
                       log_level="warning")
    for files in (load, demo):
        assert sorted(files.tables) == ["t01", "t02"]
        service = tomllib.loads(files.service.read_text("utf-8"))
        assert sorted(service["keys"]["tables"]) == ["t01", "t02"]
        assert (files.service.parent / "leaderboard.key").is_file()
        assert all(p.is_file() for p in files.tables.values())
    assert demo.tournament.name == "tournament-demo.toml"
    assert tomllib.loads(demo.service.read_text("utf-8"))["service"]["debounce_seconds"] == 0.2


def test_a_load_plan_too_long_for_qualifying_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="need 1000 heat days; qualifying has 28"):
        tournament_settings(LoadPlan(directory=tmp_path, hands=10_000, hand_seconds=3600))


def test_one_clock_at_two_paces() -> None:
    start = datetime(2026, 7, 3, 11, 0, tzinfo=UTC)
    virtual, calendar = FloorClock.virtual(start), FloorClock.calendar(start)
    virtual.advance_to(start + timedelta(days=1))
    calendar.advance_to(start + timedelta(days=1))
    assert virtual.wall() == start + timedelta(days=1)  # stands still between readings
    assert timedelta(0) <= calendar.wall() - (start + timedelta(days=1)) < timedelta(seconds=5)
    assert virtual.reading().boot_id == "virtual-floor"
    assert calendar.reading().boot_id != "virtual-floor"  # the kernel's


def test_the_demo_document_leaves_the_tables_check_out() -> None:
    doc = FloorReport(seed=3).tournament_doc()
    assert doc["seed"] == 3 and "stages" in doc
    assert not {"tables", "wall_s", "virtual_start", "rejected"} & set(doc)
