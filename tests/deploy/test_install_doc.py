"""docs/operations/install.md's `showdown install` and `showdown broker config` commands, run
as written in the page's order (under `--root`, one folder per machine; `broker config --out`
under the central's; the working folder is the technician's USB key, holding the files the
page says to carry): each dry run succeeds on its machine as it is, changes nothing and lists
the steps the real run then takes; the PostgreSQL command the page shows is the one the install
prints. (The `psql` command itself runs against a real PostgreSQL in
tests/deploy/test_install_services.py; apt-get and systemctl are the machine's; `showdown
leaderboard init` runs in tests/cli/test_desk_login.py.)
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

from tests.deploy.test_install import showdown

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "operations" / "install.md"


def _commands(text: str) -> list[str]:
    """Each command line of the page's ```sh blocks, continuation lines joined."""
    found: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        logical = ""
        for line in block.splitlines():
            logical += line.strip()
            if logical.endswith("\\"):
                logical = logical[:-1].rstrip() + " "
                continue
            found.append(logical.split("  #", 1)[0].strip())
            logical = ""
    return [c for c in found if c and not c.startswith("#")]


def _run(words: list[str], root: Path, usb: Path) -> tuple[str, str]:
    """The command under ``root`` from the USB key folder: its dry run, then (if it was one)
    the real run; both outputs."""
    here = Path.cwd()
    os.chdir(usb)
    try:
        dry = showdown(*words[1:], "--root", str(root))
        assert dry.returncode == 0, (words, dry.stderr)
        if "--dry-run" not in words:
            return dry.stdout, ""
        listed = _listed(dry.stdout)
        real = showdown(*[w for w in words[1:] if w != "--dry-run"], "--root", str(root))
        assert real.returncode == 0, (words, real.stderr)
        assert _listed(real.stdout) == listed  # the dry run listed what the real run did
        return dry.stdout, real.stdout
    finally:
        os.chdir(here)


def _listed(out: str) -> list[str]:
    return [ln.split("] ", 1)[1] for ln in out.splitlines() if re.match(r" *\d+\. \[", ln)]


def _passwd(root: Path) -> dict[str, str]:
    text = (root / "etc/mosquitto/showdown/passwd").read_text()
    return dict(ln.split(":", 1) for ln in text.splitlines())


def _rotate(command: str, central: list[str], root: Path, usb: Path) -> None:
    """A leaked password (the page's t03): `broker config --rotate` in the central's broker
    folder, then the central's install again installs the new hash alone."""
    creds = root / "etc/showdown/broker/credentials"
    before, old = _passwd(root), (creds / "t03.toml").read_text()
    done = showdown(*shlex.split(command.replace(
        "--out /etc/showdown/broker", f"--out {root}/etc/showdown/broker"))[1:])
    assert done.returncode == 0, done.stderr
    assert (creds / "t03.toml").read_text() != old
    central = [*(w for w in central if w != "--dry-run"), "--dry-run"]
    dry, real = _run(central, root, usb)
    assert "[would change] broker config" in dry and "[changed] broker config" in real
    after = _passwd(root)
    assert after["t03"] != before["t03"]
    assert {k: v for k, v in after.items() if k != "t03"} == \
        {k: v for k, v in before.items() if k != "t03"}
    again, _ = _run(central, root, usb)  # its dry run, then the real run: nothing to do
    assert again.splitlines()[-1].startswith("central: nothing to change")


def _carry(source: Path, usb: Path, name: str | None = None) -> None:
    shutil.copyfile(source, usb / (name or source.name))


def test_every_install_command_of_the_page_runs_in_its_order(tmp_path: Path) -> None:
    text = DOC.read_text()
    commands = [c for c in _commands(text) if c.startswith("showdown install ")]
    table_first, table_cluster, central, central_pg, desk, table_second, screen = commands
    psql = next(c for c in _commands(text) if c.startswith("psql "))
    usb = tmp_path / "usb"
    usb.mkdir()
    machine = {name: tmp_path / name for name in (
        "t01", "t02", "t03", "t04", "cluster", "central", "central-pg", "desk", "screen")}
    for root in machine.values():
        root.mkdir()

    # 1. each table PC, first pass (the page's t03; the others the same with their id)
    for table in ("t01", "t02", "t03", "t04"):
        words = shlex.split(table_first.replace("--table t03", f"--table {table}"))
        assert "--dry-run" not in words
        out, _ = _run(words, machine[table], usb)
        assert "is not there yet" in out  # the credentials come in the second pass
        _carry(machine[table] / f"etc/showdown/enrolment/{table}.pub", usb)
    _run(shlex.split(table_cluster), machine["cluster"], usb)
    cluster = (machine["cluster"] / "etc/showdown/table.toml").read_text()
    assert 'brokers = ["mqtt1.casino.lan:8883", "mqtt2.casino.lan:8883",' \
           ' "mqtt3.casino.lan:8883"]' in cluster

    # 2. the central server: a dry run on the fresh machine, then the real run
    dry, real = _run(shlex.split(central), machine["central"], usb)
    assert dry.splitlines()[-1] == "central: would change 27 of 27 steps"
    assert real.splitlines()[-1] == "central: changed 27 of 27 steps"
    assert "psql" not in dry
    dry_pg, _ = _run(shlex.split(central_pg), machine["central-pg"], usb)
    assert dry_pg.splitlines()[-1].strip() == psql  # what the page shows is what it prints
    etc = machine["central"] / "etc/showdown"
    _rotate(next(c for c in _commands(text) if c.startswith("showdown broker config ")),
            shlex.split(central), machine["central"], usb)
    _carry(etc / "venue-ca.pem", usb)
    _carry(etc / "broker/credentials/t03.toml", usb)
    _carry(etc / "broker/credentials/desk.toml", usb)
    _carry(etc / "enrolment/leaderboard.pub", usb)

    # 3. the desk workstation: a client of the desk API, no key to carry (issue 33)
    _run(shlex.split(desk), machine["desk"], usb)
    assert not (machine["desk"] / "etc/showdown/desk.key").exists()

    # 4. each table PC with its credentials (t03's machine of step 1)
    _carry(REPO / "config" / "chips.example.csv", usb, "chips.csv")
    dry, real = _run(shlex.split(table_second), machine["t03"], usb)
    assert "not there yet" not in dry + real
    config = (machine["t03"] / "etc/showdown/table.toml").read_text()
    assert "leaderboard = " in config  # the central service signs the desk's commands

    # 5. a room screen
    _run(shlex.split(screen), machine["screen"], usb)
    assert (machine["screen"] / "etc/systemd/system/showdown-screen.service").is_file()
