"""`showdown devices check` and `devices list`, run in-process through `cli.main.main`: the
kit's own adapters of the project's drivers conform; a driver broken on purpose fails with
exit 1 and the failing check named; a control a simulator lacks is SKIP, never PASS; bad
input is one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from tests.drivers.id_support import need_pcsc

pytestmark = pytest.mark.usefixtures("kit_drivers")


def _check(capsys: pytest.CaptureFixture[str], *words: str) -> tuple[int, dict[str, Any]]:
    code = main(["devices", "check", *words, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _rows(report: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {r["check"]: (r["status"], r["detail"]) for r in report["rows"]}


SHOE_CHECKS = ["connect", "deal 52 cards", "unplug mid-deal", "stall", "garbage",
               "card to reading"]
CHIP_CHECKS = ["connect", "full sweep", "chip moved", "stack of 20", "garbage", "stall",
               "unplug and reconnect", "sweep time", "chip to report"]
ID_CHECKS = ["connect", "tap", "repeated tap", "garbage", "unplug and reconnect",
             "tap to reading"]


@pytest.mark.parametrize(("driver", "section", "checks"), [
    ("showdown-shoe", "[shoe]\nstall_seconds = 0.5\n", SHOE_CHECKS),
    ("sr48", "[rfid]\nstall_seconds = 0.3\n", CHIP_CHECKS),
    ("serial-lines", None, ID_CHECKS),
    pytest.param("hid-wedge", None, ID_CHECKS, marks=pytest.mark.soak),
    pytest.param("pcsc", None, ID_CHECKS, marks=pytest.mark.soak),
])
def test_each_project_driver_passes_every_check(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, driver: str,
        section: str | None, checks: list[str]) -> None:
    if driver == "pcsc":
        need_pcsc()  # skipped without a PC/SC lab here, failed under CI
    words = ["--driver", driver, "--timeout", "1.5"]
    if section is not None:  # a quicker stall than the 3 s default, as a technician may set
        (tmp_path / "table.toml").write_text(section, encoding="utf-8")
        words += ["--config", str(tmp_path / "table.toml")]
    if driver == "pcsc":
        # In a process of its own: a process holds one private pcscd (PCSCLITE_CSOCK_NAME),
        # and the PC/SC driver's own tests may have started theirs in this one.
        run = subprocess.run([sys.executable, "-m", "cli", "devices", "check", *words, "--json"],
                             capture_output=True, text=True, timeout=300, check=False)
        assert run.stdout, run.stderr
        code, report = run.returncode, json.loads(run.stdout)
    else:
        code, report = _check(capsys, *words)
    rows = _rows(report)
    assert list(rows) == checks
    assert {c: s for c, (s, _) in rows.items()} == dict.fromkeys(checks, "PASS"), rows
    assert report["passed"] is True
    assert code == 0


def _quick_shoe(tmp_path: Path) -> str:
    config = tmp_path / "table.toml"
    config.write_text("[shoe]\nstall_seconds = 0.5\n", encoding="utf-8")
    return str(config)


@pytest.mark.soak
def test_the_text_line_shoe_conforms_with_its_declared_limit(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # A shoe that keeps nothing while its cable is out (D303): the kit says so, card by card,
    # and since the driver declares the gap (reads_lost) it is a declared limit, not a fault.
    pytest.importorskip("showdown_textline_shoe", reason="the example adapter is not installed")
    code, report = _check(capsys, "--driver", "text-line", "--timeout", "1.5",
                          "--config", _quick_shoe(tmp_path))
    rows = _rows(report)
    assert {c: s for c, (s, _) in rows.items() if s != "PASS"} == {"unplug mid-deal": "LIMIT"}
    detail = rows["unplug mid-deal"][1]
    assert "3 of the 3 dealt while the shoe was unplugged" in detail
    assert detail.endswith("the driver declared the gap (reads_lost)")
    assert report["passed"] is True and code == 0


@pytest.mark.soak
def test_a_shoe_that_hides_the_cards_it_lost_fails(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("showdown_textline_shoe", reason="the example adapter is not installed")
    code, report = _check(capsys, "--driver", "kit-text-line-silent-loss", "--timeout", "1.5",
                          "--config", _quick_shoe(tmp_path))
    rows = _rows(report)
    assert rows["unplug mid-deal"][0] == "FAIL"
    assert rows["unplug mid-deal"][1].endswith("the driver never said so (no reads_lost alert)")
    assert report["passed"] is False and code == 1


def test_a_chip_driver_that_loses_one_chip_of_a_stack_fails_the_stack(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _check(capsys, "--driver", "kit-sr48-loses-a-chip", "--spots", "4",
                          "--timeout", "3")
    rows = _rows(report)
    assert (code, rows["stack of 20"][0]) == (1, "FAIL")
    assert "at most 19" in rows["stack of 20"][1]
    assert rows["full sweep"][0] == "PASS"  # one chip a spot: nothing lost there


def test_a_shoe_driver_that_drops_a_card_fails_and_the_table_names_the_check(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # (the kit's waits long enough for a loaded machine: the other rows are not the point)
    assert main(["devices", "check", "--driver", "kit-shoe-drops-a-card", "--timeout", "3",
                 "--config", _quick_shoe(tmp_path)]) == 1
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("deal 52 cards"))
    assert line.split()[3] == "FAIL"
    assert "card 10 of 52 dealt was" in line
    assert "lost" in line
    assert "the driver does NOT conform: deal 52 cards" in out.rstrip().splitlines()[-1]


def test_a_control_the_simulator_lacks_is_skipped_with_the_reason(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _check(capsys, "--driver", "kit-sr48-no-faults", "--spots", "4")
    rows = _rows(report)
    assert rows["garbage"] == ("SKIP", "the simulator has no set_fault, inject control")
    assert rows["stall"] == ("SKIP", "the simulator has no set_fault control")
    assert rows["full sweep"][0] == "PASS"
    assert code == 0  # SKIP is allowed; it is never counted a pass


def test_a_control_the_simulator_refuses_is_skipped_too(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _check(capsys, "--driver", "kit-shoe-never-silent")
    rows = _rows(report)
    assert rows["stall"][0] == "SKIP"
    assert rows["stall"][1].startswith("the simulator refused set_fault silent: this shoe's")
    assert rows["garbage"][0] == "SKIP"
    assert rows["deal 52 cards"][0] == "PASS"
    assert code == 0


@pytest.mark.soak
def test_spots_limits_the_sweep(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _check(capsys, "--driver", "kit-sr48", "--spots", "16")
    assert code == 0
    assert _rows(report)["full sweep"][1].startswith("16 spots (8 with a chip, 8 empty)")
    assert "of 16 spots holding" in _rows(report)["sweep time"][1]


@pytest.mark.soak
def test_the_config_section_gives_the_drivers_keys(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = tmp_path / "table.toml"
    config.write_text('[rfid]\nkind = "hardware"\ndriver = "kit-sr48"\nspots = 7\n',
                      encoding="utf-8")
    code, report = _check(capsys, "--driver", "kit-sr48", "--config", str(config))
    assert code == 0
    assert _rows(report)["full sweep"][1].startswith("7 spots")


def test_list_shows_each_installed_adapter_with_its_distribution(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["devices", "list"]) == 0
    out = capsys.readouterr().out
    assert "[shoe]" in out
    line = next(x for x in out.splitlines() if x.strip().startswith("kit-sr48 "))
    assert "the SR-48 USB chip reader on its simulator" in line
    assert line.endswith("(showdown-kit-tests)")
    assert main(["devices", "list", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    mine = {(f["role"], f["name"]) for f in found if f["distribution"] == "showdown-kit-tests"}
    assert ("rfid", "kit-sr48-no-faults") in mine
    assert ("shoe", "kit-shoe-drops-a-card") in mine


@pytest.mark.parametrize(("words", "config", "says"), [
    (["--driver", "nobody"], None, "no driver named 'nobody' is installed"),
    (["--driver", "kit-sr48", "--role", "shoe"], None, "no shoe driver named 'kit-sr48'"),
    (["--driver", "kit-sr48"], "not = [toml", "not a TOML file"),
    (["--driver", "kit-sr48"], '[shoe]\nport = "/dev/x"\n', "no [rfid] section"),
    (["--driver", "kit-sr48"], "[rfid]\nbogus = 1\n", "rfid.bogus: the kit-sr48 driver has"
                                                        " no such key"),
    (["--driver", "kit-sr48"], "[rfid]\nspots = 0\n", "rfid.spots: must be 1..42"),
    (["--driver", "kit-sr48"], '[rfid]\ndriver = "sr48"\n', "driver is 'sr48', not"),
    (["--driver", "showdown-shoe", "--capture", "/nonexistent/capture.jsonl"], None,
     "cannot read the capture"),
])
def test_bad_input_is_one_line_and_exit_2(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, words: list[str],
        config: str | None, says: str) -> None:
    if config is not None:
        path = tmp_path / "table.toml"
        path.write_text(config, encoding="utf-8")
        words = [*words, "--config", str(path)]
    assert main(["devices", "check", *words]) == 2
    err = capsys.readouterr().err
    assert says in err
    assert err.count("\n") == 1
    assert "Traceback" not in err
