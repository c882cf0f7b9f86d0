"""The wheel runs from any folder: built from the checkout, installed into a new venv, each
command run with a temporary folder as the working directory and nothing of the checkout on
sys.path.

First the table install (no extra: what a table PC gets) is checked for what it runs and what
it lacks; then the extras are added to the same venv (`showdown[all]`) and the commands that
need them run. The commands run in a module fixture that records their results, so the
slowest (`par-sheet`, an exact enumeration) runs beside the others; each test asserts on the
record. The dependencies come from a cached wheelhouse (bench/support/wheel_install.py); if
they cannot be fetched the tests skip saying so (on CI, SHOWDOWN_REQUIRE_SERVICES=1, they
fail).
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bench.support.wheel_install import (
    EXTRA_ONLY,
    REPO,
    Unreachable,
    Venv,
    build_wheel,
    clean_env,
    make_venv,
    wheelhouse,
)
from tests.services import services_required

pytestmark = [pytest.mark.wheel, pytest.mark.soak, pytest.mark.xdist_group("wheel")]

_TIMEOUT = 300
# In the table venv: the shipped defaults as a table daemon reads them, and every shipped file.
_LOAD_DEFAULTS = """
import json
from controller.config import read_table_config
from runtime.settings_files import shipped_dir
folder = shipped_dir()
config = read_table_config(folder / "table-sim.toml")
print(json.dumps({
    "folder": str(folder),
    "table": config.table,
    "tournament": str(config.tournament),
    "paytables": str(config.paytables),
    "files": sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                    if p.is_file() and "__pycache__" not in p.parts),
    "controller": __import__("controller").__file__,
}))
"""
# Logs of the table without rich: the console renderer (a terminal) and JSON lines (systemd).
_LOGS = """
from runtime.logs import configure_logging, get_logger
for fmt in ("console", "json"):
    configure_logging(fmt=fmt)
    try:
        raise ConnectionError("shoe unplugged")
    except ConnectionError:
        get_logger("showdown.table", table="t01").exception("shoe lost", port="/dev/ttyUSB0")
"""


@dataclass
class Installed:
    """The venv and what each command printed, by a label."""

    venv: Venv
    site: Path
    table_size_mb: float = 0.0
    full_size_mb: float = 0.0
    table_distributions: set[str] = field(default_factory=set)
    table: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    full: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)


def _start(venv: Venv, cwd: Path, words: tuple[str, ...]) -> subprocess.Popen[str]:
    """`showdown WORDS`, or the venv's `python ...` when WORDS starts with "python"."""
    argv = ([str(venv.bin / "python"), *words[1:]] if words[0] == "python"
            else [str(venv.bin / "showdown"), *words])
    return subprocess.Popen(argv, cwd=cwd, env=clean_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(proc: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    out, err = proc.communicate(timeout=_TIMEOUT)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _run_all(venv: Venv, cwd: Path, commands: dict[str, tuple[str, ...]]
             ) -> dict[str, subprocess.CompletedProcess[str]]:
    """Run each command (label -> words); the first, the slowest, runs beside the others,
    which run one after another."""
    first, *rest = commands
    slow = _start(venv, cwd, commands[first])
    done = {label: _finish(_start(venv, cwd, commands[label])) for label in rest}
    done[first] = _finish(slow)
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """Build, install (table, then all extras), and run every command once."""
    try:
        house = wheelhouse()
    except Unreachable as exc:
        if services_required():
            pytest.fail(f"the wheel test needs its dependencies: {exc}")
        pytest.skip(f"cannot fetch the wheel's dependencies (no package index?): {exc}")
    started = time.monotonic()
    root = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(root / "dist", house)
    venv = make_venv(root / "venv", wheel, house)
    cwd = root / "elsewhere"
    cwd.mkdir()
    done = Installed(venv=venv, site=venv.site_packages())
    done.table_size_mb = venv.size_mb()
    done.table_distributions = venv.distributions()
    done.table = _run_all(venv, cwd, {
        "heat": ("heat", "--seats", "2", "--seed", "7"),
        "help": ("--help",),
        "check-config": ("check-config",),
        "par-sheet": ("par-sheet",),
        "demo": ("demo",),
        "desk": ("desk", "--help"),
        "defaults": ("python", "-c", _LOAD_DEFAULTS),
        "logs": ("python", "-c", _LOGS),
        "install": ("install", "table", "--venue", "casino-1", "--table", "t03", "--broker",
                    "broker.casino.lan:8883", "--root", str(cwd), "--dry-run"),
        "doctor": ("doctor", "--rehearsal", "--json", "--config",
                   str(done.site / "showdown_config" / "table-sim.toml")),
        "doctor-central": ("doctor", "--central"),
    })
    print(f"\nsite-packages of a table install: {done.table_size_mb:.1f} MB (no .pyc);"
          f" built, installed and run in {time.monotonic() - started:.0f} s")
    make_venv(root / "venv", wheel, house, "all")
    done.full_size_mb = venv.size_mb()
    print(f"site-packages with every extra: {done.full_size_mb:.1f} MB (no .pyc);"
          f" {time.monotonic() - started:.0f} s so far")
    done.full = _run_all(venv, cwd, {
        "par-sheet": ("par-sheet",),
        "help": ("--help",),
        "desk": ("desk", "--help"),
        "demo": ("demo", "--table-only", "--heats", "1", "--players", "1", "--seed", "5"),
    })
    print(f"every command run: {time.monotonic() - started:.0f} s in all")
    return done


def _ok(run: subprocess.CompletedProcess[str]) -> str:
    assert run.returncode == 0, (run.args, run.stdout, run.stderr)
    assert "Traceback" not in run.stderr, run.stderr
    return run.stdout


def _one_line_error(run: subprocess.CompletedProcess[str]) -> str:
    assert run.returncode == 2, (run.args, run.stdout, run.stderr)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    return lines[0]


def test_the_commands_run_from_the_installed_package_not_the_checkout(installed: Installed
                                                                       ) -> None:
    defaults = json.loads(_ok(installed.table["defaults"]))
    assert Path(defaults["controller"]).is_relative_to(installed.site)
    assert not Path(defaults["controller"]).is_relative_to(REPO)
    folder = installed.site / "showdown_config"
    assert Path(defaults["folder"]) == folder


def test_every_file_of_config_is_package_data(installed: Installed) -> None:
    defaults = json.loads(_ok(installed.table["defaults"]))
    shipped = sorted(str(p.relative_to(REPO / "config")) for p in (REPO / "config").rglob("*")
                     if p.is_file() and "__pycache__" not in p.parts)
    assert defaults["files"] == shipped
    assert {"tournament.toml", "paytables.toml", "desk.toml", "leaderboard.toml",
            "table-sim.toml", "chips.example.csv", "mosquitto/README.md"} <= set(shipped)


def test_the_table_daemon_loads_the_shipped_table_config(installed: Installed) -> None:
    defaults = json.loads(_ok(installed.table["defaults"]))
    folder = installed.site / "showdown_config"
    assert defaults["table"] == "t01"
    assert Path(defaults["tournament"]) == folder / "tournament.toml"
    assert Path(defaults["paytables"]) == folder / "paytables.toml"


def test_check_config_reads_the_shipped_settings(installed: Installed) -> None:
    out = _ok(installed.table["check-config"])
    assert out.startswith("ok\n")
    folder = installed.site / "showdown_config"
    assert f"tournament: {folder / 'tournament.toml'}\n" in out
    assert f"paytables: {folder / 'paytables.toml'}\n" in out


def test_install_plans_a_table_from_the_shipped_templates(installed: Installed) -> None:
    out = _ok(installed.table["install"])
    # The templates (config/templates/) and the units and rules (systemd/) come from the
    # installed data packages: the table config, the udev rules and the unit are all planned.
    assert "table config /etc/showdown/table.toml" in out
    assert "udev rules /etc/udev/rules.d/99-showdown-readers.rules" in out
    assert "unit /etc/systemd/system/showdown-table.service" in out
    assert out.rstrip().endswith("table: would change 13 of 13 steps")
    assert not any(installed.venv.root.parent.joinpath("elsewhere").rglob("table.toml"))


def test_doctor_checks_a_table_on_a_table_install(installed: Installed) -> None:
    # The wheel with no extra, as a table PC has it: every table check runs (the simulated
    # demo config fails on its embedded broker and missing key, real findings, exit 1).
    run = installed.table["doctor"]
    assert run.returncode == 1, (run.stdout, run.stderr)
    assert run.stderr == ""
    report = json.loads(run.stdout)
    assert [f["check"] for f in report["findings"]] == [
        "config", "files", "shoe", "chip reader", "ID reader", "clock", "broker", "key",
        "journal", "disk"]
    assert {f["check"]: f["status"] for f in report["findings"]}["shoe"] == "warn"
    assert _one_line_error(installed.table["doctor-central"]) == (
        "showdown doctor: error: this needs the optional extra 'central' (alembic is not"
        " installed): pip install 'showdown[central]'")


def test_a_heat_plays_on_a_table_install(installed: Installed) -> None:
    out = _ok(installed.table["heat"])
    assert "Scores" in out
    assert "E-1001 (seat 1): R" in out
    assert "E-1002 (seat 2): R" in out


def test_the_table_install_lacks_every_extra(installed: Installed) -> None:
    assert "showdown" in installed.table_distributions
    assert installed.table_distributions.isdisjoint(EXTRA_ONLY), (
        installed.table_distributions & set(EXTRA_ONLY))
    assert installed.table_size_mb < installed.full_size_mb / 3


def test_help_lists_the_commands_of_missing_extras_with_the_pip_line(installed: Installed
                                                                      ) -> None:
    out = _ok(installed.table["help"])
    for command, extra in (("chips", "central"), ("report", "reports")):
        line = next(x for x in out.splitlines() if x.strip().startswith(command + " "))
        assert f"(not installed: pip install 'showdown[{extra}]')" in line
    # A desk workstation is a client of the central service's API: no extra (D353).
    desk = next(x for x in out.splitlines() if x.strip().startswith("desk "))
    assert "(not installed" not in desk
    assert "(not installed" not in _ok(installed.full["help"])


@pytest.mark.parametrize(("label", "line"), [
    ("par-sheet", "showdown par-sheet: error: this needs the optional extra 'reports' (numpy is"
                  " not installed): pip install 'showdown[reports]'"),
    ("demo", "showdown demo: error: this needs the optional extra 'demo' (amqtt is not"
             " installed): pip install 'showdown[demo]'"),
])
def test_a_command_of_a_missing_extra_says_which_in_one_line(installed: Installed, label: str,
                                                             line: str) -> None:
    assert _one_line_error(installed.table[label]) == line


def test_the_desk_runs_on_an_install_without_extras(installed: Installed) -> None:
    assert "usage: showdown desk" in _ok(installed.table["desk"])


def test_the_table_logs_without_rich(installed: Installed) -> None:
    out = _ok(installed.table["logs"])
    console, _, rest = out.partition("{")
    assert "shoe lost" in console
    assert "ConnectionError: shoe unplugged" in console
    record = json.loads("{" + rest.strip())
    assert record["event"] == "shoe lost"
    assert record["level"] == "error"
    assert record["table"] == "t01"
    assert "ConnectionError: shoe unplugged" in record["exception"]


def test_par_sheet_with_the_reports_extra(installed: Installed) -> None:
    out = _ok(installed.full["par-sheet"])
    assert out.startswith(f"Par sheets for {installed.site / 'showdown_config' / 'paytables.toml'}")
    assert "133,784,560 equally likely outcomes" in out  # C(52, 7) seven-card hands
    assert "1,326 equally likely outcomes" in out  # C(52, 2) two-card hands


def test_the_desk_and_the_demo_with_their_extras(installed: Installed) -> None:
    assert "usage: showdown desk" in _ok(installed.full["desk"])
    out = _ok(installed.full["demo"])
    assert "signatures verified" in out
    assert " 0 gaps" in out
