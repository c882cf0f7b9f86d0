"""How big is a table PC's install beside a full one: site-packages in MB, side by side.

Run: `.venv/bin/python bench/install_size.py [--before REF]`.

Builds the wheel of the checkout and installs it into two new venvs as pip installs it on a
PC (bytecode compiled): `showdown` (the table install, no extra) and `showdown[all]` (every
extra: the central service, PostgreSQL, the demo and the reports). The dependencies are the
versions of the running environment, from the cached wheelhouse of
bench/support/wheel_install.py. ``--before REF`` adds a third row: the wheel with the base
dependencies of pyproject.toml at git REF (before the extras, every library was in the base).
Prints each install's size, its distributions and the largest of them.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from support.wheel_install import REPO, Venv, build_wheel, clean_env, make_venv, pins, wheelhouse


def _before(root: Path, wheel: Path, ref: str) -> Venv:
    """The wheel (no deps) with the base dependencies of pyproject.toml at `ref`."""
    text = subprocess.run(["git", "-C", str(REPO), "show", f"{ref}:pyproject.toml"],  # noqa: S603, S607
                          capture_output=True, text=True, check=True).stdout
    deps = tomllib.loads(text)["project"]["dependencies"]
    venv = make_venv(root, wheel, wheelhouse(), compile_bytecode=True)
    constraints = root / "pins.txt"
    constraints.write_text("\n".join(pins()) + "\n", encoding="utf-8")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv.bin / "python"),  # noqa: S603
                    "install", "--quiet", "-c", str(constraints), *deps],
                   check=True, capture_output=True, env=clean_env())
    return venv


def _largest(venv: Venv, n: int = 5) -> str:
    site = venv.site_packages()
    sizes = {d.name: sum(f.stat().st_size for f in d.rglob("*") if f.is_file()) / 1e6
             for d in site.iterdir() if d.is_dir() and not d.name.endswith(".dist-info")
             and d.name != "__pycache__"}
    top = sorted(sizes.items(), key=lambda kv: -kv[1])[:n]
    return ", ".join(f"{name} {mb:.1f}" for name, mb in top)


def main() -> int:
    """Build, install, print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", metavar="REF",
                    help="also the base install of pyproject.toml at this git ref")
    args = ap.parse_args()
    house = wheelhouse()
    with tempfile.TemporaryDirectory(prefix="showdown-install-size-") as tmp:
        root = Path(tmp)
        wheel = build_wheel(root / "dist", house)
        rows = [("table install: showdown", make_venv(root / "table", wheel, house,
                                                      compile_bytecode=True)),
                ("full install: showdown[all]", make_venv(root / "full", wheel, house, "all",
                                                          compile_bytecode=True))]
        if args.before:
            rows.append((f"base install at {args.before}", _before(root / "before", wheel,
                                                                    args.before)))
        print("site-packages of a new venv (MB = 10^6 bytes, bytecode compiled)")
        print(f"{'install':<34} {'MB':>7} {'distributions':>14}  largest (MB)")
        table_mb = rows[0][1].size_mb()
        for label, venv in rows:
            mb = venv.size_mb()
            print(f"{label:<34} {mb:7.1f} {len(venv.distributions()):14d}  {_largest(venv)}")
        for label, venv in rows[1:]:
            print(f"table install / {label.split(':')[0]}: {table_mb / venv.size_mb():.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
