"""`showdown simulate table` on the command line: a bad config or a bad --fault is one line
naming the file and the key (exit 2), the shipped example runs clean (exit 0), anything
unexpected exits 1 with the report saying what, and without the virtual dealer the virtual
desk still seats a heat.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli.errors import EXIT_USAGE
from cli.main import main
from controller.journal import Journal

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "config" / "simulate-table.example.toml"
GUARD_S = 300  # against hangs only


def _showdown(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=GUARD_S, check=False,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


BAD = [  # (config text, what the one line must name)
    ('[run]\nspeed = 2\n', "run.speed"),
    ('[rum]\nseed = 1\n', "rum"),
    ('[run]\nplayers = 7\n', "run.players"),
    ('[run]\nfaults = ["shoe.melt@hand1"]\n', "run.faults[0]"),
    ('[run]\nfaults = ["rfid.unplug"]\n', "run.faults[0]"),
    ('[run]\nfaults = ["rfid.unplug@hand1.card2"]\n', "run.faults[0]"),
    ('[run]\nbroker = "localhost"\n', "run.broker"),
    ('[table]\nstall_seconds = 0.5\n', "table.stall_seconds"),
    ('[table]\nid = "T 1"\n', "table.id"),
    ('[table]\ntournament = "nowhere.toml"\n', "table.tournament"),
    ('[deck]\nmode = "scripted"\n', "deck.hands"),
    ('[deck]\nmode = "scripted"\nhands = ["Ah Zz"]\n', "deck.hands[0]"),
    ('[deck]\nmode = "scripted"\nhands = ["Ah Ah"]\n', "deck.hands[0]"),
    ('[deck]\nmode = "random"\nhands = ["Ah Kd"]\n', "deck.hands"),
    ('[seats.3]\nstyle = "bold"\n', "seats.3"),
    ('[seats.1]\nhands = [{ ante = "R25.555" }]\n', "seats.1.hands[0].ante"),
    ('[seats.1]\nhands = [{ ante = 25, play = "turn" }]\n', "seats.1.hands[0].play"),
    ('[seats.1]\nhands = [{ ante = 25, raise = 75 }]\n', "seats.1.hands[0].raise"),
    ('[seats.1]\nhands = [{ play = "flop" }]\n', "seats.1.hands[0].ante"),
    ('seed = 3\n', "seed"),
    ('[run\n', "not valid TOML"),
]


@pytest.mark.parametrize(("text", "key"), BAD, ids=[k for _, k in BAD])
def test_a_bad_config_is_one_line_naming_the_file_and_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, key: str) -> None:
    path = tmp_path / "rehearsal.toml"
    path.write_text(text)
    assert main(["simulate", "table", "--config", str(path)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert str(path) in err and key in err, err


@pytest.mark.parametrize("fault", ["shoe.corrupt=2", "deck.unshuffled@hand0", "rfid"])
def test_a_bad_fault_on_the_command_line_is_one_line(
        capsys: pytest.CaptureFixture[str], fault: str) -> None:
    assert main(["simulate", "table", "--fault", fault]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--fault" in err and fault in err, err


def test_a_missing_config_file_is_one_line(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.toml"
    assert main(["simulate", "table", "--config", str(missing)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(missing) in err, err


def _example(tmp_path: Path) -> Path:
    """The shipped example, its files named absolutely, its stall timeout long and its
    dealer patient: a machine starved of CPU must not look like a hung device."""
    text = EXAMPLE.read_text()
    for name in ("tournament", "paytables"):
        text = text.replace(f'{name} = "{name}.toml"', f'{name} = "{EXAMPLE.parent / name}.toml"')
    text = text.replace("stall_seconds = 2.0", "stall_seconds = 20.0")
    text = text.replace("timeout = 15.0", "timeout = 60.0")
    path = tmp_path / "example.toml"
    path.write_text(text)
    return path


@pytest.mark.soak  # a whole simulated table run: make test-soak (D387)
def test_the_example_config_runs_clean(tmp_path: Path) -> None:
    done = _showdown("simulate", "table", "--config", str(_example(tmp_path)), "--dir",
                     str(tmp_path / "run"), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout[done.stdout.index("{"):])
    assert report["hands_played"] == 4 and report["unexpected"] == []
    assert [f["fault"].split("@")[0] for f in report["faults"]] == [
        "shoe.corrupt", "rfid.unknown_chip", "shoe.unplug", "payout.overpay"]
    assert all(f["alerts"] and f["remedy"] for f in report["faults"])
    assert (tmp_path / "run" / "journal.sqlite").is_file()


def test_anything_unexpected_exits_1_and_says_what(tmp_path: Path) -> None:
    done = _showdown("simulate", "table", "--seed", "5", "--hands", "1", "--players", "1",
                     "--fault", "shoe.stall@hand4", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "- shoe.stall@hand4.card3 (hand 1): the run ended before hand 4" in done.stdout


def test_without_the_virtual_dealer_the_virtual_desk_seats_a_heat(tmp_path: Path) -> None:
    done = _showdown("simulate", "table", "--no-dealer", "--duration", "1", "--players", "3",
                     "--dir", str(tmp_path / "run"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the virtual desk has seated the heat" in done.stdout
    assert "sign in on the console as dealer VD-T01 PIN" in done.stdout
    with Journal.open(tmp_path / "run" / "journal.sqlite", read_only=True) as journal:
        types = [m.type for m in journal.messages(1)]
    assert types.count("heat.opened") == 1 and types.count("entry.seated") == 3
    assert "hand.settled" not in types  # the dealing is the person's at the console
