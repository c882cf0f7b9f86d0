"""`showdown doctor` on a table PC's install (the wheel with no extra): the table's checks import
nothing of the central service, and `--central` / `--desk` say in one line which extra they
need. A subprocess refuses every extra's library and the whole `leaderboard` package, as a
table PC that lacks them would (tests/packaging/test_wheel.py runs the real wheel, soak tier).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cli.extras import EXTRA_OF

REPO = Path(__file__).resolve().parents[2]
_LEAN = """
import importlib.abc, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in {refused}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Refuse())
from cli.main import main
code = main(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.partition(".")[0] in {refused})
print("LOADED", loaded, file=sys.stderr)
sys.exit(code)
"""


def _lean(*args: str, refused: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    code = _LEAN.format(refused=sorted(refused))
    return subprocess.run([sys.executable, "-c", code, "doctor", *args], capture_output=True,
                          text=True, cwd=REPO, check=False, timeout=60)


TABLE_PC = ("leaderboard", *EXTRA_OF)  # what a table PC's install lacks, or need not import


def test_the_table_checks_run_without_the_central_service_or_any_extra() -> None:
    done = _lean("--rehearsal", "--json", "--config", str(REPO / "config" / "table-sim.toml"),
                 refused=TABLE_PC)
    assert "Traceback" not in done.stderr and "optional extra" not in done.stderr, done.stderr
    assert done.returncode == 1  # the embedded demo broker and a missing key: real findings
    report = json.loads(done.stdout)
    assert report["rehearsal"] is True
    checks = [f["check"] for f in report["findings"]]
    assert checks == ["config", "files", "shoe", "chip reader", "ID reader", "clock", "broker",
                      "key", "journal", "disk"]
    assert done.stderr.strip().splitlines()[-1] == "LOADED []"


def test_the_central_check_names_the_extra_it_needs() -> None:
    done = _lean("--central", "--config", "/nonexistent.toml", refused=tuple(EXTRA_OF))
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == (
        "showdown doctor: error: this needs the optional extra 'central' (alembic is not"
        " installed): pip install 'showdown[central]'")


def test_the_desk_check_runs_without_the_central_extra() -> None:
    # A desk workstation is a client of the desk API (issue 33): no database to check, so
    # `doctor --desk` needs none of the central service's libraries.
    done = _lean("--desk", "--config", "/nonexistent.toml", refused=tuple(EXTRA_OF))
    assert done.returncode == 1, done.stderr
    assert "/nonexistent.toml" in done.stdout and "the desk may NOT work" in done.stdout
