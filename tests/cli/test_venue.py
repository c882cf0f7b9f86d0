"""`showdown venue rehearse`'s refusals before it starts anything: one line each, the exit code
of cli/errors.py, nothing laid out; and which processes it would start."""

from __future__ import annotations

from pathlib import Path

import pytest

import cli.venue
from cli.main import main
from cli.venue_broker import embedded_broker_files
from floor.venue import child_specs
from floor.venue_layout import choose_ports, lay_out, table_ids


@pytest.mark.parametrize(("argv", "words"), [
    (["--tables", "0"], "--tables must be 1 to 20, got 0"),
    (["--tables", "21"], "--tables must be 1 to 20, got 21"),
    (["--http-port", "80"], "--http-port must be 1024..65535, got 80"),
    (["--db", "leaderboard.sqlite"], "--db 'leaderboard.sqlite': give a SQLAlchemy URL"),
    (["--own-table", "t09"], "--own-table t09: the venue's tables are t01, t02"),
])
def test_a_bad_option_is_one_line_and_exit_2(tmp_path: Path, argv: list[str], words: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    venue = tmp_path / "v"
    assert main(["venue", "rehearse", "--dir", str(venue), *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1
    assert not (venue / "venue.json").exists()


def test_without_mosquitto_it_names_the_apt_command_and_exits_69(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # a machine without the mosquitto binary: the names it is looked for under are absent
    monkeypatch.setattr(cli.venue, "MOSQUITTO", ("no-such-mosquitto", str(tmp_path / "none")))
    assert main(["venue", "rehearse", "--dir", str(tmp_path / "v")]) == 69
    err = capsys.readouterr().err.strip()
    assert err == ("showdown venue: error: mosquitto is not installed: apt-get install"
                   " mosquitto (or use --broker embedded, which has no TLS and no ACL)")
    assert not (tmp_path / "v" / "broker").exists()


def test_an_own_table_is_laid_out_but_not_started(tmp_path: Path) -> None:
    tables = table_ids(3)
    ports = choose_ports(tmp_path, 3)
    broker = embedded_broker_files(tmp_path, venue="rehearsal", tables=tables,
                                   port=ports.broker)
    layout = lay_out(tmp_path, tables=tables, ports=ports, database=None, broker=broker)
    names = [s.name for s in child_specs(layout, mosquitto=None, own_tables=("t02",))]
    assert names == ["broker", "central", "t01", "t03"]
    assert layout.table_configs["t02"].exists()
    specs = child_specs(layout, mosquitto=None)
    assert specs[0].argv[1:] == ["-m", "floor.venue_broker", str(ports.broker)]
    assert [s.name for s in specs] == ["broker", "central", "t01", "t02", "t03"]
    assert specs[3].argv[-4:] == ["table", "run", "--config", str(layout.table_configs["t02"])]
