"""docs/protocols/writing-an-adapter.md says what is so: every command it tells people to run is
run here (or by the test named for it), its config and packaging examples are the example
adapter's own, and its `configure` excerpt is the example's code.

The `showdown devices` commands are the conformance kit's (issue 30, point 2): until that
command is on this branch their tests skip saying so; from then on they run.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from showdown_textline_shoe.adapter import TextLineSettings
from showdown_textline_shoe.simulator import TextLineShoeSimulator

from cli.main import COMMANDS
from controller.config import parse_table_config
from tests.adapters.test_example_adapter import EXAMPLE, INSTALL, REPO

DOC = REPO / "docs" / "protocols" / "writing-an-adapter.md"
SHOWDOWN = str(Path(sys.executable).parent / "showdown")
KIT = "devices" in COMMANDS
NO_KIT = "`showdown devices` (the conformance kit) is not on this branch yet"
GUARD_S = 120  # a subprocess taking longer is hung (a safety net, not a measurement)


def _blocks(language: str, doc: Path = DOC) -> list[str]:
    text = doc.read_text("utf-8")
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


def _documented(doc: Path = DOC) -> list[str]:
    """Every command of the page's ``sh`` blocks, one a line."""
    return [line.strip() for block in _blocks("sh", doc) for line in block.splitlines()
            if line.strip() and not line.strip().startswith("#")]


# Each documented command and the test that runs it.
RUNS = {
    INSTALL: "tests/adapters/test_example_adapter.py::"
             "test_installed_into_a_folder_of_its_own_it_is_found_there_and_reads_cards",
    "showdown doctor --config /etc/showdown/table.toml":
        "test_doctor_asks_the_text_line_driver_whether_its_port_opens",
    "showdown devices list": "test_devices_list_names_the_example",
    "showdown devices check --driver text-line --config shoe.toml":
        "test_devices_check_runs_the_example_through_the_kit",
}


def _showdown(*words: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SHOWDOWN, *words], capture_output=True, text=True, check=False,
                          cwd=cwd, timeout=GUARD_S)


def test_every_documented_command_is_run_by_a_test() -> None:
    assert sorted(_documented()) == sorted(RUNS)
    readme = _documented(EXAMPLE / "README.md")  # the example's own page: the same commands
    assert readme
    assert set(readme) <= set(RUNS)


def test_the_config_example_selects_the_example_adapter(tmp_path: Path) -> None:
    (shoe,) = [b for b in _blocks("toml") if b.startswith("[shoe]")]
    data = {"table": {"venue": "v", "id": "t1", "journal": "j.sqlite"},
            "keys": {"table_key": "k"}, "api": {"socket": "s"}, "rfid": {"kind": "manual"},
            **tomllib.loads(shoe)}
    config = parse_table_config(data, source="table.toml", base=tmp_path)
    assert (config.shoe.kind, config.shoe.driver) == ("hardware", "text-line")
    assert config.shoe.settings == TextLineSettings(
        url="/dev/serial/by-id/usb-Acme_CardReader_A1B2-if00-port0")


def test_the_packaging_example_is_the_examples_own() -> None:
    (shown,) = [tomllib.loads(b) for b in _blocks("toml") if b.startswith("[project]")]
    real = tomllib.loads((EXAMPLE / "pyproject.toml").read_text("utf-8"))
    assert shown["project"]["name"] == real["project"]["name"]
    assert shown["project"]["dependencies"] == real["project"]["dependencies"]
    assert shown["project"]["entry-points"] == real["project"]["entry-points"]
    layout = {p.name for p in (EXAMPLE / "src" / "showdown_textline_shoe").iterdir()
              if p.suffix in (".py", ".typed")}
    assert layout == {"__init__.py", "py.typed", "codec.py", "driver.py", "simulator.py",
                      "adapter.py"}


def test_the_configure_excerpt_is_the_examples_code() -> None:
    (excerpt,) = _blocks("python")[:1]
    code = (EXAMPLE / "src" / "showdown_textline_shoe" / "adapter.py").read_text("utf-8")
    lines = [line.strip() for line in excerpt.splitlines() if line.strip()]
    assert lines[0].startswith("def configure(")
    missing = [line for line in lines if line not in code]
    assert missing == []


def test_doctor_asks_the_text_line_driver_whether_its_port_opens(tmp_path: Path) -> None:
    command = "showdown doctor --config /etc/showdown/table.toml"
    assert command in _documented()
    with TextLineShoeSimulator() as sim:
        path = sim.path
        (tmp_path / "table.toml").write_text(f"""
[table]
venue = "casino-1"
id = "t01"
journal = "journal.sqlite"
[keys]
table_key = "t01.key"
[api]
socket = "console.sock"
[shoe]
kind = "hardware"
driver = "text-line"
url = "{path}"
[rfid]
kind = "manual"
""", encoding="utf-8")
        words = command.replace("/etc/showdown/table.toml", str(tmp_path / "table.toml"))
        run = _showdown(*words.split()[1:], cwd=tmp_path)
    assert run.returncode == 1, run.stderr  # a bare test table may not open (no key, ...)
    (shoe,) = [line for line in run.stdout.splitlines() if re.match(r"\S+\s+shoe\s", line)]
    assert shoe.split(None, 2)[:2] == ["ok", "shoe"]
    assert shoe.split(None, 2)[2] == (
        f"text-line driver: {path} opens (9600 baud); a text-line shoe says nothing until"
        " a card leaves it: deal one and see it on the console")


@pytest.mark.skipif(not KIT, reason=NO_KIT)
def test_devices_list_names_the_example(tmp_path: Path) -> None:
    run = _showdown("devices", "list", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    (line,) = [x for x in run.stdout.splitlines() if x.split()[:1] == ["text-line"]]
    assert line.rstrip().endswith("(showdown-textline-shoe)")


@pytest.mark.skipif(not KIT, reason=NO_KIT)
def test_devices_check_runs_the_example_through_the_kit(tmp_path: Path) -> None:
    (tmp_path / "shoe.toml").write_text(
        '[shoe]\nkind = "sim"\ndriver = "text-line"\nstall_seconds = 3\n', encoding="utf-8")
    run = _showdown("devices", "check", "--driver", "text-line", "--config", "shoe.toml",
                    cwd=tmp_path)
    assert run.returncode in (0, 1), run.stderr  # 1: a check failed (D303: cards lost
    rows = {line.split()[0]: line.split() for line in run.stdout.splitlines()  # unplugged)
            if line.split()[:1] and line.split()[0] in ("connect", "deal", "garbage")}
    assert rows["connect"][1] == "PASS"
    assert rows["deal"][3] == "PASS"  # "deal 52 cards PASS ..."
    assert rows["garbage"][1] == "PASS"
    assert "stall" in run.stdout
    assert "unplug mid-deal" in run.stdout
