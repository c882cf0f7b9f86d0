"""What a maintained library would cost in place of a hand-written helper (issue 16, point 7):
installed size on a table PC, import time, and how strict it is, beside our own module.

Run: `.venv/bin/python bench/library_review.py [--libs DIR] [--runs 9]`.

Each library is installed, with its dependencies, into a folder of its own under DIR
(default /tmp/libreview): `pip install --no-compile --target DIR/NAME NAME`. A library whose
folder is missing is reported as not measured. Import time is the fastest of fresh
interpreters, each timing the import of one module (compiled once before); the baseline
(asyncio) and our own module are measured the same way in the same run.
Strictness: each config library reads the same bad `[table]` section (an unknown key, a
wrong type) and the message it gives is printed, to compare with ConfigError's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from support.latency_machine import machine_lines

REPO = Path(__file__).resolve().parents[1]
_TIMER = ("import time; t = time.perf_counter(); import {module}; "
          "print(time.perf_counter() - t)")

# piece -> (our module, candidates: (pip name, module to import))
PIECES: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "config validation": ("controller.config",
                          [("pydantic", "pydantic"), ("msgspec", "msgspec"),
                           ("cattrs", "cattrs")]),
    "backoff": ("runtime.backoff", [("tenacity", "tenacity"), ("backoff", "backoff")]),
    "sd_notify": ("runtime.sd_notify", [("sdnotify", "sdnotify"),
                                             ("cysystemd", "cysystemd.daemon"),
                                             ("systemd-python", "systemd.daemon")]),
    "journald": ("runtime.journald", [("cysystemd", "cysystemd.journal"),
                                           ("systemd-python", "systemd.journal")]),
}
_OURS_FILES = {
    "config validation": ["game/tournament/schema.py", "game/paytables/schema.py",
                          "controller/config.py", "leaderboard/config.py",
                          "leaderboard/desk/config.py", "runtime/settings_files.py"],
    "backoff": ["runtime/backoff.py"],
    "sd_notify": ["runtime/sd_notify.py"],
    "journald": ["runtime/journald.py"],
}

_PROBES = {
    "pydantic": """
import pydantic
class Table(pydantic.BaseModel, extra="forbid", strict=True):
    venue: str
    id: str
try: Table.model_validate({"venue": "goldreef", "id": 1, "colour": "red"})
except pydantic.ValidationError as e: print(" | ".join(str(e).splitlines()[1:]))
""",
    "msgspec": """
import msgspec
class Table(msgspec.Struct, forbid_unknown_fields=True):
    venue: str
    id: str
for doc in ({"venue": "goldreef", "id": "t01", "colour": "red"}, {"venue": "goldreef", "id": 1}):
    try: msgspec.convert(doc, Table)
    except msgspec.ValidationError as e: print(e, end=" | ")
print()
""",
    "cattrs": """
import attrs, cattrs
@attrs.frozen
class Table:
    venue: str
    id: str
c = cattrs.Converter(forbid_extra_keys=True)
try: c.structure({"venue": "goldreef", "id": "t01", "colour": "red"}, Table)
except Exception as e: print(" | ".join(cattrs.transform_error(e)))
""",
}


def _python(code: str, path: list[Path]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in path),
               PYTHONDONTWRITEBYTECODE="")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,  # noqa: S603
                          text=True, check=False, cwd=REPO)


def _import_ms(module: str, path: list[Path], runs: int) -> float | None:
    _python(f"import {module}", path)  # compile the .pyc once, outside the timing
    times = []
    for _ in range(runs):
        done = _python(_TIMER.format(module=module), path)
        if done.returncode != 0:
            return None
        times.append(float(done.stdout) * 1000)
    return min(times)  # the fastest: what the import costs, least disturbed by other load


def _size_kb(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()
               and "__pycache__" not in f.parts) // 1024


def _lines(files: list[str]) -> int:
    return sum(len((REPO / f).read_text().splitlines()) for f in files)


def main() -> int:
    """Print, for each piece, ours beside each candidate."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--libs", type=Path, default=Path(tempfile.gettempdir()) / "libreview")
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    print("\n".join(machine_lines()))
    print(f"load    : {os.getloadavg()[0]:.1f} (1 min)")
    base = _import_ms("asyncio", [], args.runs)
    print(f"baseline: the standard library's asyncio, for scale: {base:.1f} ms"
          f" (fastest of {args.runs} fresh interpreters, as every figure here)")
    for piece, (ours, candidates) in PIECES.items():
        files = _OURS_FILES[piece]
        ours_ms = _import_ms(ours, [REPO], args.runs)
        print(f"\n{piece}: ours {ours} ({_lines(files)} lines in {len(files)} files),"
              f" import {ours_ms:.1f} ms")
        for name, module in candidates:
            folder = args.libs / name
            if not folder.is_dir():
                print(f"  {name:15} not measured (no {folder}: pip install --target failed?)")
                continue
            ms = _import_ms(module, [folder], args.runs)
            took = "does not import" if ms is None else f"import {ms:.1f} ms"
            print(f"  {name:15} {_size_kb(folder):6d} kB installed (with its dependencies),"
                  f" {took}")
            if name in _PROBES:
                probe = _python(_PROBES[name], [folder])
                print(f"  {'':15} bad [table]: {(probe.stdout or probe.stderr).strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
