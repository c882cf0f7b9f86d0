"""docs/certifier-export.md's commands, run as the doc gives them (the config's and the key's
directory /etc/showdown/ standing for the test's own), as separate processes: the export on
the central machine, then the verification with no database at all (the bundle copied to a
directory of its own, and the process never importing SQLAlchemy)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from leaderboard import desk
from leaderboard.db import make_engine, upgrade
from tests.fixtures.clock import EPOCH, FakeClock
from tests.leaderboard.desk_api_support import PASSPHRASE
from wire.signing import Signer, save_private_key

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs/certifier-export.md"
_BLOCK = re.compile(r"<!-- certifier: (\w+) -->\s*\n```sh\n(.*?)\n```", re.DOTALL)
SHOWDOWN = Path(sys.executable).with_name("showdown")


def blocks() -> dict[str, list[str]]:
    return {name: [line for line in body.splitlines() if line.strip()]
            for name, body in _BLOCK.findall(DOC.read_text(encoding="utf-8"))}


def run(line: str, cwd: Path, etc: Path) -> subprocess.CompletedProcess[str]:
    command = line.replace("/etc/showdown/", f"{etc}/").replace(
        "showdown ", f"{SHOWDOWN} ", 1).strip()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(["bash", "-e", "-c", command], cwd=cwd, env=env, text=True,
                          capture_output=True, check=False, timeout=120)


def central(etc: Path) -> None:
    """A central service's config and key under ``etc``, its database migrated, a manager."""
    save_private_key(Signer.generate("leaderboard"), etc / "leaderboard.key")
    t01 = Signer.generate("t01")
    (etc / "leaderboard.toml").write_text(f"""
[service]
venue = "casino-1"
database = "sqlite:///{etc / 'leaderboard.sqlite3'}"
[mqtt]
broker = "127.0.0.1:1883"
[keys]
signing_key = "leaderboard.key"
[keys.tables]
t01 = "{t01.public_key.base64}"
""")
    engine = make_engine(f"sqlite:///{etc / 'leaderboard.sqlite3'}")
    upgrade(engine)
    with Session(engine) as s:
        desk.enrol_staff(s, FakeClock(EPOCH), actor="setup", staff_id="M01", name="M",
                         role="manager", desk_passphrase=PASSPHRASE)
    engine.dispose()


def test_the_docs_commands_export_and_verify_offline(tmp_path: Path) -> None:
    if not SHOWDOWN.exists():
        pytest.skip(f"no showdown command beside {sys.executable}")
    steps = blocks()
    assert [len(steps["export"]), len(steps["verify"])] == [2, 1]
    etc, desk_dir, certifier = tmp_path / "etc", tmp_path / "central", tmp_path / "certifier"
    for d in (etc, desk_dir, certifier):
        d.mkdir()
    central(etc)
    (desk_dir / "m01.passphrase").write_text(PASSPHRASE + "\n")
    for line in steps["export"]:
        done = run(line, desk_dir, etc)
        assert done.returncode == 0, (line, done.stderr)
    assert "wrote certifier-2026-07.zip: 2026-07-01 to 2026-07-31" in done.stdout
    for name in ("certifier-2026-07.zip", "central.pub"):
        shutil.copy(desk_dir / name, certifier / name)
    (line,) = steps["verify"]
    offline = line.replace("showdown ", "", 1)
    probe = ("import sys; from cli.main import main; code = main(sys.argv[1:]);"
             " assert 'sqlalchemy' not in sys.modules, 'imported SQLAlchemy'; sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", probe, *offline.split()], cwd=certifier,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True,
                          capture_output=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert ": WHOLE" in done.stdout and "the given key 'leaderboard'" in done.stdout
    # The same command on a damaged copy: exit 1, the member named.
    data = bytearray((certifier / "certifier-2026-07.zip").read_bytes())
    (certifier / "certifier-2026-07.zip").write_bytes(bytes(data[: len(data) // 2]))
    done = run(line, certifier, etc)
    assert done.returncode == 2 and "not a zip file" in done.stderr
    with sa.create_engine(f"sqlite:///{etc / 'leaderboard.sqlite3'}").connect() as c:
        assert c.execute(sa.text("SELECT actor FROM audit WHERE action ="
                                 " 'certifier.exported'")).scalar_one() == "M01"
